/* A forked child that overwrites its own segment's state with EXITED (as a stray write
 * could) and then goes on working (issue 31.6): 5000 allocations of 61002 bytes over
 * ~0.3 s, then exits. The parent waits for it. With "root" after the arguments, the
 * process itself (the session's root) does so, without a child.
 * usage: exited_mark STATE_OFFSET EXITED_VALUE [root]
 *        (offsetof(struct prof_proc_shm, state)) */
#include <sys/wait.h>
#include "e2e.h"

static char *own_segment(void)
{
	char want[64], line[512];
	snprintf(want, sizeof want, "-%d-", (int)getpid());
	FILE *f = fopen("/proc/self/maps", "r");
	char *found = 0;
	while (f && !found && fgets(line, sizeof line, f)) {
		char *path = strstr(line, "/dev/shm/libprof-");
		unsigned long lo;
		/* the process segment: libprof-UID-SID-PID-NONCE, mapped from offset 0 */
		if (path && strstr(path, want) && sscanf(line, "%lx-", &lo) == 1 &&
		    strstr(line, " 00000000 "))
			found = (char *)lo;
	}
	if (f)
		fclose(f);
	return found;
}

int main(int argc, char **argv)
{
	size_t off = (size_t)arg(argc, argv, 1, 0);
	unsigned exited = (unsigned)arg(argc, argv, 2, 2);
	int root = argc > 3 && !strcmp(argv[3], "root");
	fflush(stdout);
	pid_t p = root ? 0 : fork();
	if (!p) {
		char *seg = own_segment();
		if (!seg)
			_exit(3);
		*(volatile unsigned *)(seg + off) = exited;
		for (int i = 0; i < 5000; i++) {
			void *q = malloc(61002);
			keep(q);
			free(q);
			if (i % 50 == 0)
				usleep(3000);
		}
		printf("child pid=%d\n", (int)getpid());
		if (root)
			printf("status=0\n");
		exit(0);
	}
	int st = 0;
	waitpid(p, &st, 0);
	printf("status=%d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return 0;
}
