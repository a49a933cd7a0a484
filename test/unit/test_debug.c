/* The PROFILER_DEBUG channel (preload/common/debug.c): domains parsed, unknown ones named
 * once, one write(2) per line; and the GOT writer's refusal it reports
 * (preload/trace/got_write.c: a page mprotect will not make writable is given up, not
 * retried as an object being relocated). got_write.c is a libprof.so source, compiled
 * in here as test_got_write.c does. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "preload/common/debug.h"
#include "preload/common/session.h"
#include "preload/trace/got_write.c"

static void parses_domains(void **state)
{
	(void)state;
	char unknown[128];
	assert_int_equal(prof_debug_parse("got", unknown, sizeof unknown), PROF_DEBUG_GOT);
	assert_string_equal(unknown, "");
	assert_int_equal(prof_debug_parse("got,shm,cupti", unknown, sizeof unknown),
			 PROF_DEBUG_GOT | PROF_DEBUG_SHM | PROF_DEBUG_CUPTI);
	/* strict, as the settings row: a space or an empty item is no domain */
	assert_int_equal(prof_debug_parse(" got,,shm", unknown, sizeof unknown), PROF_DEBUG_SHM);
	assert_string_equal(unknown, "' got', ''");
	unsigned all = PROF_DEBUG_GOT | PROF_DEBUG_TRACE | PROF_DEBUG_DRAIN | PROF_DEBUG_CUPTI |
		       PROF_DEBUG_SHM | PROF_DEBUG_ALLOC | PROF_DEBUG_STACK;
	assert_int_equal(prof_debug_parse("all", unknown, sizeof unknown), all);
	assert_int_equal(prof_debug_parse("", unknown, sizeof unknown), 0);
	assert_int_equal(prof_debug_parse(0, unknown, sizeof unknown), 0);
	assert_int_equal(prof_debug_parse(",,", unknown, sizeof unknown), 0);
	assert_string_equal(unknown, "'', ''");
	/* a prefix or a longer word is no domain */
	assert_int_equal(prof_debug_parse("go,gots,drain,x", unknown, sizeof unknown),
			 PROF_DEBUG_DRAIN);
	assert_string_equal(unknown, "'go', 'gots', 'x'");
}

/* stderr into a pipe while fn runs; what was written comes back in out */
static void capture_stderr(void (*fn)(void), char *out, size_t len)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	int saved = dup(2);
	dup2(p[1], 2);
	close(p[1]);
	fn();
	dup2(saved, 2);
	close(saved);
	ssize_t n = read(p[0], out, len - 1);
	out[n > 0 ? n : 0] = 0;
	close(p[0]);
}

static void say_two(void)
{
	errno = EBADF;
	prof_debug(PROF_DEBUG_GOT, "cannot patch %s: %d", "f", 7);
	assert_int_equal(errno, EBADF); /* kept */
	prof_debug(PROF_DEBUG_DRAIN, "not said");
	prof_debug(PROF_DEBUG_ALLOC | PROF_DEBUG_GOT, "in two");
}

static void init_warns(void)
{
	char *env[] = {"A=1", "PROFILER_DEBUG=got,nope", 0};
	prof_debug_init(env);
}

static void one_line_per_give_up(void **state)
{
	(void)state;
	char out[1024];
	prof_debug_mask = PROF_DEBUG_GOT;
	capture_stderr(say_two, out, sizeof out);
	assert_string_equal(out, "libprof[debug got]: cannot patch f: 7\n"
				 "libprof[debug got]: in two\n");
	prof_debug_mask = PROF_DEBUG_ALLOC;
	capture_stderr(say_two, out, sizeof out);
	assert_string_equal(out, "libprof[debug alloc]: in two\n");
	capture_stderr(init_warns, out, sizeof out);
	/* refused whole, as the settings parser does (it names the unknown domain) */
	assert_int_equal(prof_debug_mask, 0);
	assert_string_equal(out, "");
	char *quiet[] = {"PROFILER_DEBUG=", 0};
	prof_debug_init(quiet);
	assert_int_equal(prof_debug_mask, 0);
}

/* A message longer than the buffer is cut, still one line. */
static void say_long(void)
{
	char big[2000];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = 0;
	prof_debug(PROF_DEBUG_SHM, "%s", big);
}

static void long_line_cut(void **state)
{
	(void)state;
	char out[4096];
	prof_debug_mask = PROF_DEBUG_SHM;
	capture_stderr(say_long, out, sizeof out);
	assert_true(strncmp(out, "libprof[debug shm]: xxx", 23) == 0);
	assert_ptr_equal(strchr(out, '\n'), out + strlen(out) - 1);
	prof_debug_mask = 0;
}

/* A RELRO page that is a read-only shared mapping of a file opened read-only: mprotect
 * cannot make it writable (EACCES). Refused, not "later". */
static void refused_page(void **state)
{
	(void)state;
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	int fd = memfd_create("got", MFD_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)ps), 0);
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	int ro = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(ro >= 0);
	char *got = mmap(0, ps, PROT_READ, MAP_SHARED, ro, 0);
	assert_true(got != MAP_FAILED);
	struct prof_got_object o = {.relro_lo = (uintptr_t)got, .relro_hi = (uintptr_t)got + ps};
	errno = 0;
	assert_int_equal(prof_got_write(&o, (void **)got + 2, (void *)0x1234), PROF_GOT_REFUSED);
	assert_int_equal(errno, EACCES);
	assert_null(((void **)got)[2]);
	assert_int_equal(page_prot((uintptr_t)got), PROT_READ);
	munmap(got, ps);
	close(ro);
	close(fd);
}

/* A process segment of another libprof's layout: not read, said once (the collector
 * looks at it again every scan). */
static char other_name[64];

static void open_other(void)
{
	size_t size;
	assert_null(prof_proc_open_sized(other_name, &size));
}

static void other_layout_said_once(void **state)
{
	(void)state;
	snprintf(other_name, sizeof other_name, "libprof-test-debug-%d", (int)getpid());
	char path[80];
	snprintf(path, sizeof path, "/%s", other_name);
	int fd = shm_open(path, O_CREAT | O_EXCL | O_RDWR, 0600);
	assert_true(fd >= 0);
	size_t size = (sizeof(struct prof_proc_shm) + 4095) & ~(size_t)4095;
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	struct prof_proc_shm *p = mmap(0, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);
	close(fd);
	p->magic = PROF_SHM_MAGIC;
	p->version = PROF_SHM_VERSION + 1;
	p->segment_size = size;
	char out[1024], want[256];
	prof_debug_mask = PROF_DEBUG_SHM;
	capture_stderr(open_other, out, sizeof out);
	snprintf(want, sizeof want, "libprof[debug shm]: not reading %s: layout version %u, this "
		 "collector reads %u\n", other_name, PROF_SHM_VERSION + 1, PROF_SHM_VERSION);
	assert_string_equal(out, want);
	capture_stderr(open_other, out, sizeof out);
	assert_string_equal(out, "");
	prof_debug_mask = 0;
	munmap(p, size);
	shm_unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parses_domains),
		cmocka_unit_test(one_line_per_give_up),
		cmocka_unit_test(long_line_cut),
		cmocka_unit_test(refused_page),
		cmocka_unit_test(other_layout_said_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
