/* Process liveness as the collector judges it, and the shared-memory segments. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "preload/common/config.h"
#include "preload/common/session.h"

/* field 22 of /proc/self/stat, counted independently of the code under test */
static unsigned long long start_time_by_sscanf(void)
{
	char buf[1024];
	FILE *f = fopen("/proc/self/stat", "r");
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')') + 2;
	unsigned long long v = 0;
	sscanf(p, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
	       &v);
	return v;
}

static void start_ticks_is_field_22(void **state)
{
	(void)state;
	uint64_t before = prof_proc_start_ticks(getpid());
	assert_int_equal(before, start_time_by_sscanf());
	/* stable while the process grows (field 23, vsize, would change) */
	void *volatile big = malloc(64 << 20);
	memset(big, 1, 64 << 20);
	assert_int_equal(prof_proc_start_ticks(getpid()), before);
	free(big);
	assert_true(prof_proc_alive(getpid(), before));
	assert_false(prof_proc_alive(getpid(), before + 1));
}

static void zombies_and_reaped_children_are_gone(void **state)
{
	(void)state;
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	uint64_t ticks = 0;
	for (int i = 0; i < 1000 && prof_proc_start_ticks(child); i++)
		usleep(1000); /* exits and becomes a zombie: counts as gone */
	assert_int_equal(prof_proc_start_ticks(child), ticks);
	assert_false(prof_proc_alive(child, 0));
	waitpid(child, 0, 0);
	assert_false(prof_proc_alive(child, 0));
}

static void segments_round_trip(void **state)
{
	(void)state;
	char sid[PROF_SID_LEN + 1], name[200];
	prof_new_sid(sid);
	struct prof_session_shm *s = prof_session_create(sid);
	assert_non_null(s);
	s->root_pid = 1234;
	struct prof_session_shm *again = prof_session_open(sid);
	assert_non_null(again);
	assert_int_equal(again->root_pid, 1234);
	assert_null(prof_session_create(sid)); /* exclusive */
	struct prof_proc_shm *p = prof_proc_create(sid, 64 << 10, 4, name, sizeof name);
	assert_non_null(p);
	assert_int_equal(p->pid, getpid());
	assert_int_equal(p->ring_cap, 1024); /* 64 KiB / 48 rounded down to a power of two */
	/* the first ring is allocated with the segment (the first event commits nothing):
	 * the only slot prepared, its pages counted in the file's blocks */
	assert_int_equal(atomic_load(&prof_proc_slot(p, 0)->prepared), 1);
	assert_int_equal(atomic_load(&prof_proc_slot(p, 1)->prepared), 0);
	struct stat st;
	char path[256];
	snprintf(path, sizeof path, "/dev/shm%s", name);
	assert_int_equal(stat(path, &st), 0);
	assert_true((uint64_t)st.st_blocks * 512 >= p->ring_cap * sizeof(struct prof_event));
	struct prof_proc_shm *q = prof_proc_open(name + 1);
	assert_non_null(q);
	assert_int_equal(q->nslots, 4);
	char prefix[128];
	prof_proc_shm_prefix(prefix, sizeof prefix, sid);
	assert_memory_equal(name + 1, prefix, strlen(prefix));
	prof_proc_unmap(q);
	prof_proc_unmap(p);
	shm_unlink(name);
	prof_session_unlink(sid);
	assert_null(prof_session_open(sid));
}

/* Configuring a session names no root: prof record's command once found its own pid
 * there for a moment (between two stores after the fork), waited at its exit for the
 * outputs, and the collector waited for it to be reaped: both hung. The root is set
 * by whoever waits (libprof.so's autostart), and %p is expanded apart. */
static void configure_names_no_root(void **state)
{
	(void)state;
	char sid[PROF_SID_LEN + 1], err[256];
	prof_new_sid(sid);
	struct prof_session_shm *s = prof_session_create(sid);
	assert_non_null(s);
	struct prof_config c;
	prof_config_defaults(&c);
	snprintf(c.output, sizeof c.output, "/tmp/out-%%p");
	assert_int_equal(prof_session_configure(s, &c, 4321, err, sizeof err), 0);
	assert_int_equal(s->root_pid, 0);
	assert_string_equal(s->output_prefix, "/tmp/out-4321");
	assert_int_equal(prof_session_output_for(s, &c, 99, err, sizeof err), 0);
	assert_string_equal(s->output_prefix, "/tmp/out-99");
	assert_int_equal(s->root_pid, 0);
	prof_session_unlink(sid);
}

/* A page that cannot be given (past the file's end here; a full /dev/shm in use) is said
 * as no space, not as MADV_POPULATE_WRITE's "Bad address". */
/* The default ring made to fit a small /dev/shm or an address-space limit; a size set by
 * hand kept. */
static void ring_fits_shm_and_limit(void **state)
{
	(void)state;
	const uint64_t M = 1ull << 20, G = 1ull << 30, def = PROF_DEFAULT_RING_BYTES;
	assert_int_equal(prof_ring_bytes_fitting(def, 0, 0), def);
	assert_int_equal(prof_ring_bytes_fitting(def, 12 * G, 0), def);
	assert_int_equal(prof_ring_bytes_fitting(def, 64 * M, 0), 4 * M);  /* Docker's default */
	assert_int_equal(prof_ring_bytes_fitting(def, 8 * M, 0), 512 << 10);
	assert_int_equal(prof_ring_bytes_fitting(def, 2 * M, 0), 256 << 10);
	assert_int_equal(prof_ring_bytes_fitting(def, 0, 32 * G), def);
	assert_int_equal(prof_ring_bytes_fitting(def, 0, 16 * G), 8 * M);
	assert_int_equal(prof_ring_bytes_fitting(def, 0, 8 * G), 4 * M);
	assert_int_equal(prof_ring_bytes_fitting(def, 0, 1 * G), 4 * M);    /* then fewer slots */
	assert_int_equal(prof_ring_bytes_fitting(64 * M, 64 * M, 1 * G), 64 * M); /* by hand */
}

static void commit_without_room_is_enospc(void **state)
{
	(void)state;
	FILE *f = tmpfile();
	assert_non_null(f);
	long page = sysconf(_SC_PAGESIZE);
	assert_int_equal(ftruncate(fileno(f), page), 0);
	char *m = mmap(0, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_SHARED, fileno(f), 0);
	assert_true(m != MAP_FAILED);
	assert_int_equal(prof_commit_memory(m, (size_t)page), 0);
	/* a kernel before 5.14 has no MADV_POPULATE_WRITE: the page past the end would be
	 * touched, and raise SIGBUS */
	if (!madvise(m, (size_t)page, MADV_POPULATE_WRITE)) {
		errno = 0;
		assert_int_equal(prof_commit_memory(m, (size_t)page * 2), -1);
		assert_int_equal(errno, ENOSPC);
	}
	munmap(m, (size_t)page * 2);
	fclose(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(commit_without_room_is_enospc),
		cmocka_unit_test(ring_fits_shm_and_limit),
		cmocka_unit_test(start_ticks_is_field_22),
		cmocka_unit_test(zombies_and_reaped_children_are_gone),
		cmocka_unit_test(segments_round_trip),
		cmocka_unit_test(configure_names_no_root),
	};
	return cmocka_run_group_tests(tests, 0, 0);
}
