/* MXNet-style control without PROFILER_AUTOSTART: prof_set_config("filename",
 * "my_out.json"), ("profile_memory", "0"), ("nonsense", "1") (must fail), then
 * prof_set_state(PROF_RUN); N malloc/free pairs of 59001 (memory off: not recorded) and a
 * mark "memory off"; prof_set_config("profile_memory", "1"); N pairs of 59002 (recorded)
 * and a mark "memory on". Prints each return code and pid=.
 * usage: set_config N */
#include "e2e.h"

int main(int argc, char **argv)
{
	long N = arg(argc, argv, 1, 10);
	if (!prof_set_config)
		return 2;
	printf("filename=%d\n", prof_set_config("filename", "my_out.json"));
	printf("memory_off=%d\n", prof_set_config("profile_memory", "0"));
	printf("nonsense=%d\n", prof_set_config("nonsense", "1"));
	fflush(stdout);
	printf("run=%d\n", prof_set_state(PROF_RUN));
	many(59001, N);
	prof_mark("memory off");
	printf("memory_on=%d\n", prof_set_config("profile_memory", "1"));
	many(59002, N);
	prof_mark("memory on");
	printf("pid=%d\n", (int)getpid());
	return 0;
}
