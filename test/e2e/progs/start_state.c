/* Not autostarted: PRE mallocs of 81001 (not recorded), prof_set_state(PROF_RUN), N mallocs
 * of 81002 inside the range "started work", prof_dump() (the outputs must exist right
 * after it: copied to dumped.json), prof_dumps() (printed between markers), then N mallocs
 * of 81003 and exit. usage: start_state PRE N */
#include <fcntl.h>
#include <sys/stat.h>
#include "e2e.h"

static int copy(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (in < 0 || out < 0)
		return -1;
	ssize_t n;
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, (size_t)n) != n)
			return -1;
	close(in);
	close(out);
	return n < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	long PRE = arg(argc, argv, 1, 5), N = arg(argc, argv, 2, 20);
	many(81001, PRE);
	if (!prof_set_state) {
		printf("no libprof\n");
		return 0;
	}
	printf("set_state=%d\n", prof_set_state(PROF_RUN));
	prof_range_push("started work");
	many(81002, N);
	prof_range_pop();
	int rc = prof_dump();
	struct stat st;
	int have = stat("libprof.json", &st) == 0 && stat("libprof.txt", &st) == 0 &&
		   stat("libprof.prof", &st) == 0;
	printf("dump=%d outputs_after_dump=%d copy=%d\n", rc, have,
	       have ? copy("libprof.json", "dumped.json") : -1);
	const char *text = prof_dumps();
	printf("dumps_null=%d\n", text == 0);
	printf("----dumps----\n%s\n----end----\n", text ? text : "");
	many(81003, N);
	printf("pid=%d\n", (int)getpid());
	return 0;
}
