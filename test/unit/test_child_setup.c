/* Starting another program of the session (preload/common/child_setup.c): the sibling
 * binary's lookup, the child's environment, and closing every descriptor from 3 up,
 * above 1023 too, by close_range and by the /proc/self/fd walk it falls back on. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "preload/common/child_setup.h"

static void touch(const char *path, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	close(fd);
}

static void sibling_next_to_self_then_installed(void **state)
{
	(void)state;
	char dir[] = "/tmp/libprof-unit-sibling-XXXXXX", p[512], out[512];
	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof p, "%s/bin", dir);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof p, "%s/lib", dir);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof p, "%s/lib/libx.so", dir);
	touch(p, 0600);
	char self[512];
	snprintf(self, sizeof self, "%s/bin/prof", dir);
	const char *const rels[] = {"libx.so", "../lib/libx.so", NULL};
	/* not beside: the installed place */
	assert_int_equal(prof_find_sibling(self, rels, R_OK, NULL, out, sizeof out), 0);
	snprintf(p, sizeof p, "%s/bin/../lib/libx.so", dir);
	assert_string_equal(out, p);
	/* beside wins */
	snprintf(p, sizeof p, "%s/bin/libx.so", dir);
	touch(p, 0600);
	assert_int_equal(prof_find_sibling(self, rels, R_OK, "", out, sizeof out), 0);
	assert_string_equal(out, p);
	/* a mode the file lacks, a buffer too short, a self without a folder */
	assert_int_equal(prof_find_sibling(self, rels, X_OK, NULL, out, sizeof out), -1);
	assert_int_equal(prof_find_sibling(self, rels, R_OK, NULL, out, strlen(dir) + 4), -1);
	assert_int_equal(prof_find_sibling("prof", rels, R_OK, NULL, out, sizeof out), -1);
	/* the override is taken as it is, and must exist */
	assert_int_equal(prof_find_sibling(self, rels, R_OK, p, out, sizeof out), 0);
	assert_string_equal(out, p);
	assert_int_equal(prof_find_sibling(self, rels, R_OK, "/nonexistent/x", out, sizeof out),
			 -1);
	unlink(p);
	snprintf(p, sizeof p, "%s/lib/libx.so", dir);
	unlink(p);
	snprintf(p, sizeof p, "%s/lib", dir);
	rmdir(p);
	snprintf(p, sizeof p, "%s/bin", dir);
	rmdir(p);
	rmdir(dir);
}

static void env_drops_only_the_names_given(void **state)
{
	(void)state;
	char *env[] = {"LD_PRELOAD=/a.so", "LD_PRELOAD_PATH=1", "A=1", "PROFILER_SESSION=x",
		       "PROFILER_SESSIONX=y", "LD_PRELOAD", NULL};
	const char *const drop[] = {"LD_PRELOAD", "PROFILER_SESSION", NULL};
	char *out[8];
	assert_int_equal(prof_env_drop(env, drop, out), 4);
	assert_string_equal(out[0], "LD_PRELOAD_PATH=1");
	assert_string_equal(out[1], "A=1");
	assert_string_equal(out[2], "PROFILER_SESSIONX=y");
	assert_string_equal(out[3], "LD_PRELOAD");
	assert_null(out[4]);
	assert_int_equal(prof_env_drop(NULL, drop, out), 0);
	assert_null(out[0]);
}

static void preload_entry_puts_libprof_first_once(void **state)
{
	(void)state;
	char out[64];
	assert_int_equal(prof_preload_entry(out, sizeof out, "/l/libprof.so", NULL), 0);
	assert_string_equal(out, "LD_PRELOAD=/l/libprof.so");
	assert_int_equal(prof_preload_entry(out, sizeof out, "/l/libprof.so", ""), 0);
	assert_string_equal(out, "LD_PRELOAD=/l/libprof.so");
	assert_int_equal(prof_preload_entry(out, sizeof out, "/l/libprof.so", "/x.so"), 0);
	assert_string_equal(out, "LD_PRELOAD=/l/libprof.so:/x.so");
	assert_int_equal(prof_preload_entry(out, sizeof out, "/l/libprof.so", "/x.so:/l/libprof.so"),
			 0);
	assert_string_equal(out, "LD_PRELOAD=/x.so:/l/libprof.so");
	assert_int_equal(prof_preload_entry(out, sizeof out, "", "/x.so"), 0);
	assert_string_equal(out, "LD_PRELOAD=/x.so");
	/* too short: cut, terminated */
	assert_int_equal(prof_preload_entry(out, 16, "/l/libprof.so", "/x.so"), -1);
	assert_string_equal(out, "LD_PRELOAD=/l/l");
}

/* glibc's tunable for huge pages after the given ones (Debian 12's glibc 2.36 ignored it
 * when others followed), never twice, never over the user's own choice of it */
static void tunables_entry_adds_huge_malloc_last(void **state)
{
	(void)state;
	char out[96];
	assert_int_equal(prof_tunables_entry(out, sizeof out, NULL), 0);
	assert_string_equal(out, "GLIBC_TUNABLES=glibc.malloc.hugetlb=1");
	assert_int_equal(prof_tunables_entry(out, sizeof out, ""), 0);
	assert_string_equal(out, "GLIBC_TUNABLES=glibc.malloc.hugetlb=1");
	assert_int_equal(prof_tunables_entry(out, sizeof out, "glibc.malloc.arena_max=2"), 0);
	assert_string_equal(out, "GLIBC_TUNABLES=glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1");
	assert_int_equal(prof_tunables_entry(out, sizeof out, "glibc.malloc.hugetlb=0"), 0);
	assert_string_equal(out, "GLIBC_TUNABLES=glibc.malloc.hugetlb=0");
	assert_int_equal(prof_tunables_entry(out, 20, NULL), -1);
	assert_string_equal(out, "GLIBC_TUNABLES=glib");
}

/* In a child: descriptors 3, 1500 and one near the limit open, none close-on-exec; after
 * close_fn(3) only 0, 1 and 2 are. */
static void closes_every_descriptor_from_3(int (*close_fn)(int))
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit rl;
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
		getrlimit(RLIMIT_NOFILE, &rl);
		int high = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 70001 ? 70000
									: (int)rl.rlim_cur - 1;
		int fd = open("/dev/null", O_RDONLY);
		if (fd < 0 || dup2(fd, 1500) != 1500 || (high > 1500 && dup2(fd, high) != high))
			_exit(2);
		if (fd != 3 && dup2(fd, 3) != 3)
			_exit(3);
		if (close_fn(3))
			_exit(4);
		for (int i = 0; i < 3; i++)
			if (fcntl(i, F_GETFD) < 0)
				_exit(5); /* stdin, stdout, stderr stay */
		int left[] = {3, fd, 1500, high};
		for (int i = 0; i < 4; i++)
			if (left[i] > 2 && (fcntl(left[i], F_GETFD) >= 0 || errno != EBADF))
				_exit(10 + i);
		_exit(0);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static int close_from(int low)
{
	prof_close_from(low);
	return 0;
}

static void close_from_covers_every_descriptor(void **state)
{
	(void)state;
	closes_every_descriptor_from_3(close_from);
}

static void close_fallback_covers_every_descriptor(void **state)
{
	(void)state;
	closes_every_descriptor_from_3(prof_close_from_listed);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sibling_next_to_self_then_installed),
		cmocka_unit_test(env_drops_only_the_names_given),
		cmocka_unit_test(preload_entry_puts_libprof_first_once),
		cmocka_unit_test(tunables_entry_adds_huge_malloc_last),
		cmocka_unit_test(close_from_covers_every_descriptor),
		cmocka_unit_test(close_fallback_covers_every_descriptor),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
