/* What fresh memory costs on this machine: writes MB megabytes to a new file in DIR (page
 * cache the kernel must find pages for), twice, and prints each pass's system CPU. On a
 * VM whose host takes back the memory a guest frees, a pass soon after a large free pays
 * for the host to back the pages again: 320 MB took 0.84-1.12 s right after a traced
 * run's 313 MB of outputs were deleted, 0.09-0.15 s once the pages had been used again,
 * 0.09 s after a minute idle (Intel Xeon guest, 2026-12-02). libprof's processes pay it
 * for every new byte they write or allocate, so a run's figures depend on what ran just
 * before it (bench/all_cpu.py waits BENCH_SETTLE_S before each run for that reason).
 * usage: fresh_pages DIR [MB] */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static double sys_s(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec * 1e-6;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: fresh_pages DIR [MB]\n");
		return 2;
	}
	size_t mb = argc > 2 ? (size_t)atol(argv[2]) : 320, chunk = 1u << 20;
	char path[4096], *buf = malloc(chunk);
	snprintf(path, sizeof path, "%s/fresh_pages.%d", argv[1], (int)getpid());
	if (!buf)
		return 1;
	for (int pass = 1; pass <= 2; pass++) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0) {
			perror(path);
			return 1;
		}
		double s0 = sys_s();
		for (size_t i = 0; i < mb; i++) {
			memset(buf, (int)i, chunk);
			if (write(fd, buf, chunk) != (ssize_t)chunk) {
				perror(path);
				close(fd);
				unlink(path);
				return 1;
			}
		}
		double s = sys_s() - s0;
		close(fd);
		unlink(path); /* its pages go back: the next pass may get them again */
		printf("pass %d: %zu MB written, %.3f s system CPU (%.1f us a 4 KiB page)\n", pass, mb,
		       s, s * 1e6 / ((double)mb * 256));
	}
	free(buf);
	return 0;
}
