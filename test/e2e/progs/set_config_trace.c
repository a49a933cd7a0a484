/* Tracing chosen by the program: prof_set_config("trace", "usleep") and ("output",
 * "st") before prof_set_state(PROF_RUN), then N usleep calls (traced by name); then
 * prof_set_config("trace", ...) again, after start: accepted, with one line saying it
 * cannot take effect any more. Prints each return code and pid=.
 * With "setenv": PROFILER_TRACE=usleep set by setenv() instead of prof_set_config.
 * usage: set_config_trace N [setenv] */
#include "e2e.h"

int main(int argc, char **argv)
{
	long N = arg(argc, argv, 1, 5);
	if (!prof_set_config)
		return 2;
	if (argc > 2 && !strcmp(argv[2], "setenv")) /* the program's own environment */
		printf("trace=%d\n", setenv("PROFILER_TRACE", "usleep", 1));
	else
		printf("trace=%d\n", prof_set_config("trace", "usleep"));
	printf("output=%d\n", prof_set_config("output", "st"));
	fflush(stdout);
	printf("run=%d\n", prof_set_state(PROF_RUN));
	for (long i = 0; i < N; i++)
		usleep(200);
	printf("late=%d\n", prof_set_config("trace", "nanosleep"));
	printf("pid=%d\n", (int)getpid());
	return 0;
}
