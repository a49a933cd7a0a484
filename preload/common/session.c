#define _GNU_SOURCE
#include "preload/common/session.h"
#include "preload/common/ring.h"
#include "preload/common/span.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "preload/common/clock.h"
#include "preload/common/debug.h"
#include "preload/common/job.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

void prof_session_shm_name(char *buf, size_t len, const char *sid)
{
	snprintf(buf, len, "/libprof-%u-%s", (unsigned)getuid(), sid);
}

void prof_proc_shm_prefix(char *buf, size_t len, const char *sid)
{
	snprintf(buf, len, "libprof-%u-%s-", (unsigned)getuid(), sid);
}

void prof_new_sid(char sid[PROF_SID_LEN + 1])
{
	uint64_t r;
	if (getrandom(&r, sizeof r, GRND_NONBLOCK) != sizeof r)
		r = __rdtsc() * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid() << 32;
	snprintf(sid, PROF_SID_LEN + 1, "%016llx", (unsigned long long)r);
}

static void *map_fd(int fd, size_t size)
{
	void *p = mmap(0, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	return p == MAP_FAILED ? 0 : p;
}

int prof_commit_memory(void *addr, size_t len)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)addr & ~(page - 1);
	len += (uintptr_t)addr - start;
	if (madvise((void *)start, len, MADV_POPULATE_WRITE) == 0)
		return 0;
	/* EFAULT: a page would have raised SIGBUS, which for a segment (sized before it is
	 * mapped) means /dev/shm is full: said as such, not as "Bad address" */
	if (errno == EFAULT)
		errno = ENOSPC;
	if (errno != EINVAL)
		return -1;
	/* Kernels before 5.14: touch each page; a full /dev/shm can only show as SIGBUS. */
	for (uintptr_t p = start; p < start + len; p += page)
		*(volatile char *)p = *(volatile char *)p;
	return 0;
}

struct prof_session_shm *prof_session_create(const char *sid)
{
	char name[128];
	prof_session_shm_name(name, sizeof name, sid);
	int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return 0;
	size_t size = (sizeof(struct prof_session_shm) + 4095) & ~(size_t)4095;
	struct prof_session_shm *s = 0;
	if (ftruncate(fd, (off_t)size) == 0)
		s = map_fd(fd, size);
	int saved = errno;
	close(fd);
	if (!s || prof_commit_memory(s, size)) {
		shm_unlink(name);
		errno = saved;
		return 0;
	}
	s->version = PROF_SHM_VERSION;
	s->magic = PROF_SHM_MAGIC;
	return s;
}

static void *open_and_map(const char *name, size_t *size_out)
{
	int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	struct stat st;
	void *p = 0;
	if (fstat(fd, &st) == 0 && st.st_uid == getuid() && st.st_size >= 64)
		p = map_fd(fd, (size_t)st.st_size);
	close(fd);
	*size_out = p ? (size_t)st.st_size : 0;
	return p;
}

struct prof_session_shm *prof_session_open(const char *sid)
{
	char name[128];
	size_t size;
	if (!sid || strlen(sid) != PROF_SID_LEN)
		return 0;
	prof_session_shm_name(name, sizeof name, sid);
	struct prof_session_shm *s = open_and_map(name, &size);
	if (!s)
		return 0;
	/* the clock pair was read when the session was made: in the past (a pair from the
	 * future would have the collector sleep until then; a kind other than TSC is read
	 * as CLOCK_MONOTONIC) */
	if (size < sizeof *s || s->magic != PROF_SHM_MAGIC || s->version != PROF_SHM_VERSION ||
	    s->clock_ns > prof_mono_ns() ||
	    (s->clock_kind == PROF_CLOCK_TSC && s->clock_tsc > __rdtsc())) {
		prof_debug(PROF_DEBUG_SHM, "not joining session %s: %s", sid,
			   size < sizeof *s || s->magic != PROF_SHM_MAGIC ? "not a session segment"
			   : s->version != PROF_SHM_VERSION ? "another libprof's layout version"
							    : "its clock reading lies in the future");
		munmap(s, size);
		return 0;
	}
	/* the collector prints and opens these: they end inside their arrays whatever the
	 * creator wrote (a real one never fills the last byte) */
	s->output_prefix[sizeof s->output_prefix - 1] = 0;
	s->dump_path[sizeof s->dump_path - 1] = 0;
	s->command[sizeof s->command - 1] = 0;
	return s;
}

void prof_session_unlink(const char *sid)
{
	char name[128];
	prof_session_shm_name(name, sizeof name, sid);
	shm_unlink(name);
}

static size_t round_up(size_t v, size_t to)
{
	return (v + to - 1) / to * to;
}

static void read_cmdline(struct prof_proc_shm *p)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, p->cmdline, sizeof p->cmdline - 1);
	if (fd >= 0)
		close(fd);
	p->cmdline_len = n > 0 ? (uint32_t)n : 0;
	p->job_len = (uint32_t)prof_job_describe(p->job, sizeof p->job);
}

/* Events per ring: the largest power of two that fits ring_bytes (64 at least). */
static uint64_t ring_events(uint64_t ring_bytes)
{
	uint64_t cap = ring_bytes / sizeof(struct prof_event), pow2 = 64;
	while (pow2 * 2 <= cap)
		pow2 *= 2;
	return pow2;
}

uint64_t prof_ring_bytes_fitting(uint64_t ring_bytes, uint64_t shm_total, uint64_t as_limit)
{
	const uint64_t old_default = 4ull << 20, least = 256ull << 10;
	if (ring_bytes != PROF_DEFAULT_RING_BYTES)
		return ring_bytes; /* set by hand: kept */
	uint64_t fit = ring_bytes;
	if (as_limit) {
		uint64_t per = as_limit / 8 / PROF_DEFAULT_SLOTS;
		if (per < fit)
			fit = per > old_default ? per : old_default;
	}
	if (shm_total) {
		uint64_t per = shm_total / 16;
		if (per < fit)
			fit = per > least ? per : least;
	}
	return fit;
}

unsigned prof_proc_slots(uint64_t ring_bytes)
{
	struct rlimit as;
	if (getrlimit(RLIMIT_AS, &as) || as.rlim_cur == RLIM_INFINITY)
		return PROF_DEFAULT_SLOTS;
	uint64_t fit = (uint64_t)as.rlim_cur / 8 / (ring_events(ring_bytes) *
						     sizeof(struct prof_event));
	return fit < PROF_MIN_SLOTS ? PROF_MIN_SLOTS
	       : fit > PROF_DEFAULT_SLOTS ? PROF_DEFAULT_SLOTS : (unsigned)fit;
}

struct prof_proc_shm *prof_proc_create(const char *sid, uint64_t ring_bytes, unsigned nslots,
				       char *name, size_t namelen)
{
	uint64_t pow2 = ring_events(ring_bytes);
	size_t hdr = round_up(sizeof(struct prof_proc_shm), 4096);
	size_t slots = round_up(nslots * sizeof(struct prof_slot), 4096);
	size_t rings = (size_t)nslots * pow2 * sizeof(struct prof_event);
	size_t size = hdr + PROF_STRINGS_BYTES + slots + rings + PROF_STACKS_BYTES;

	snprintf(name, namelen, "/libprof-%u-%s-%d-%llx", (unsigned)getuid(), sid, (int)getpid(),
		 (unsigned long long)(__rdtsc() & 0xffffffffffull));
	int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return 0;
	struct prof_proc_shm *p = 0;
	if (ftruncate(fd, (off_t)size) == 0)
		p = map_fd(fd, size);
	int saved = errno;
	/* The first chunk of the first ring (ring.h: ring_writer_commit_lazily) allocated
	 * now, at the process's start, so that the first event (inside whatever call the
	 * program makes first) commits nothing; a full /dev/shm leaves it to that claim.
	 * (The whole ring here made each short process hold 12 MiB of /dev/shm.) */
	uint64_t first_bytes = ring_first_chunk(pow2) * sizeof(struct prof_event);
	int first_ring = p && fallocate(fd, FALLOC_FL_KEEP_SIZE,
					(off_t)(hdr + PROF_STRINGS_BYTES + slots),
					(off_t)first_bytes) == 0;
	close(fd);
	/* The header, strings and slot words are written at once; rings when claimed. */
	if (!p || prof_commit_memory(p, hdr + PROF_STRINGS_BYTES + slots)) {
		saved = errno;
		if (p)
			munmap(p, size);
		shm_unlink(name);
		errno = saved;
		return 0;
	}
	p->version = PROF_SHM_VERSION;
	p->pid = (uint32_t)getpid();
	p->ppid = (uint32_t)getppid();
	p->nslots = nslots;
	p->proc_start_ticks = prof_proc_start_ticks(getpid());
	p->created_ns = prof_mono_ns();
	p->cpu_start_ns = prof_cpu_ns();
	p->ring_cap = pow2;
	p->strings_off = hdr;
	p->strings_size = PROF_STRINGS_BYTES;
	p->slots_off = hdr + PROF_STRINGS_BYTES;
	p->rings_off = hdr + PROF_STRINGS_BYTES + slots;
	p->stacks_off = hdr + PROF_STRINGS_BYTES + slots + rings;
	p->stacks_size = PROF_STACKS_BYTES;
	p->segment_size = size;
	read_cmdline(p);
	if (first_ring) {
		atomic_store_explicit(&prof_proc_slot(p, 0)->committed, first_bytes,
				      memory_order_relaxed);
		if (first_bytes == pow2 * sizeof(struct prof_event))
			atomic_store_explicit(&prof_proc_slot(p, 0)->prepared, 1,
					      memory_order_relaxed);
	}
	atomic_store_explicit(&p->state, PROC_LIVE, memory_order_relaxed);
	/* magic last: the collector ignores a segment until it is complete */
	atomic_thread_fence(memory_order_release);
	p->magic = PROF_SHM_MAGIC;
	return p;
}

struct prof_proc_shm *prof_proc_open(const char *name)
{
	size_t size;
	return prof_proc_open_sized(name, &size);
}

struct prof_proc_shm *prof_proc_open_sized(const char *name, size_t *mapped)
{
	size_t size;
	char path[256];
	snprintf(path, sizeof path, "/%s", name);
	struct prof_proc_shm *p = open_and_map(path, &size);
	if (!p)
		return 0;
	atomic_thread_fence(memory_order_acquire);
	if (size < sizeof *p || p->magic != PROF_SHM_MAGIC || p->version != PROF_SHM_VERSION ||
	    p->segment_size > size) { /* larger: its areas grew (area.c) */
		/* the others may be a segment still being made: looked at again next scan */
		static char said[256];
		if (size >= sizeof *p && p->magic == PROF_SHM_MAGIC &&
		    p->version != PROF_SHM_VERSION && strcmp(said, name)) {
			snprintf(said, sizeof said, "%s", name);
			prof_debug(PROF_DEBUG_SHM, "not reading %s: layout version %u, this "
				   "collector reads %u", name, p->version, PROF_SHM_VERSION);
		}
		munmap(p, size);
		return 0;
	}
	*mapped = size;
	return p;
}

void prof_proc_unmap(struct prof_proc_shm *p)
{
	munmap(p, p->segment_size);
}

uint64_t prof_proc_stat(const char *path, char *state)
{
	char buf[1024];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* the command may hold spaces and parentheses: fields count from the last ')' */
	char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return 0;
	*state = p[2];
	int field = 3; /* the state character is field 3 */
	for (p += 2; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	uint64_t v = 0; /* digits by hand: no stdio inside an interposed call */
	while (*p >= '0' && *p <= '9')
		v = v * 10 + (uint64_t)(*p++ - '0');
	return v ? v : 1;
}

struct dirent64_raw {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

int prof_proc_dir_each(const char *dir, int (*each)(const char *name, int dir_fd, void *arg),
		       void *arg)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char buf[4096] __attribute__((aligned(8)));
	long got;
	int stop = 0;
	while (!stop && (got = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0)
		for (long off = 0; off < got && !stop;) {
			const struct dirent64_raw *d = (const void *)(buf + off);
			off += d->reclen;
			if (d->name[0] != '.')
				stop = each(d->name, fd, arg);
		}
	close(fd);
	return stop;
}

static int task_running(const char *name, int dir_fd, void *arg)
{
	(void)dir_fd;
	char path[128], state = 'Z';
	snprintf(path, sizeof path, "%s/%.20s/stat", (const char *)arg, name);
	return prof_proc_stat(path, &state) && state != 'Z' && state != 'X';
}

/* A main thread that called pthread_exit is a zombie while its other threads run. */
static int any_thread_running(pid_t pid)
{
	char dir[64];
	snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
	return prof_proc_dir_each(dir, task_running, dir) > 0;
}

uint64_t prof_proc_start_ticks(pid_t pid)
{
	char path[64], state = 'Z';
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	uint64_t ticks = prof_proc_stat(path, &state);
	if (!ticks || ((state == 'Z' || state == 'X') && !any_thread_running(pid)))
		return 0;
	return ticks;
}

int prof_proc_alive(pid_t pid, uint64_t start_ticks)
{
	uint64_t now = prof_proc_start_ticks(pid);
	return now != 0 && (start_ticks == 0 || now == start_ticks);
}

void prof_futex_wait(_Atomic uint32_t *word, uint32_t val, int timeout_ms)
{
	struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000};
	syscall(SYS_futex, word, FUTEX_WAIT, val, &ts, 0, 0);
}

void prof_futex_wake(_Atomic uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE, 0x7fffffff, 0, 0, 0);
}

static void command_line(char *out, size_t len)
{
	out[0] = 0;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, out, len - 1);
	close(fd);
	if (n <= 0)
		return;
	out[n] = 0;
	for (ssize_t i = 0; i < n - 1; i++)
		if (!out[i])
			out[i] = ' ';
}

static int absolute_prefix(const char *pattern, pid_t root, char *out, size_t len, char *err,
			   size_t errlen)
{
	char expanded[PROF_PATH_MAX], cwd[PROF_PATH_MAX];
	if (prof_expand_prefix(pattern, expanded, sizeof expanded, root, time(0), err, errlen))
		return -1;
	if (expanded[0] == '/')
		cwd[0] = 0;
	else if (!getcwd(cwd, sizeof cwd))
		return snprintf(err, errlen, "cannot resolve the output path '%s'", expanded), -1;
	if (snprintf(out, len, "%s%s%s", cwd, cwd[0] ? "/" : "", expanded) >= (int)len)
		return snprintf(err, errlen, "output path too long"), -1;
	return 0;
}

int prof_session_configure(struct prof_session_shm *s, const struct prof_config *c, pid_t root,
			   char *err, size_t errlen)
{
	s->clock_kind = prof_clock_detect(c->clock);
	if (s->clock_kind == PROF_CLOCK_TSC)
		prof_clock_pair(&s->clock_tsc, &s->clock_ns);
	else
		s->clock_ns = prof_mono_ns(); /* the session's start either way */
	s->uid = (uint32_t)getuid();
	s->euid = (uint32_t)geteuid();
	struct statvfs shm;
	struct rlimit as;
	s->ring_bytes = prof_ring_bytes_fitting(
		c->ring_bytes,
		statvfs("/dev/shm", &shm) ? 0 : (uint64_t)shm.f_blocks * shm.f_frsize,
		getrlimit(RLIMIT_AS, &as) || as.rlim_cur == RLIM_INFINITY ? 0
									   : (uint64_t)as.rlim_cur);
	s->block = (uint32_t)c->block;
	s->quiet = (uint32_t)c->quiet;
	s->max_json_events = c->max_json_events;
	s->continuous_dump = (uint32_t)c->continuous_dump;
	s->dump_period_ms = c->dump_period_ms;
	s->delay_ms = c->delay_ms;
	s->duration_ms = c->duration_ms;
	s->trace_alloc = (uint32_t)c->trace_alloc;
	s->alloc_timing = (uint32_t)c->alloc_timing;
	memcpy(s->schedule, c->schedule, sizeof s->schedule);
	struct prof_span rotate, flight;
	if (prof_span_parse(c->rotate, &rotate) || prof_span_parse(c->flight, &flight)) {
		snprintf(err, errlen, "PROFILER_ROTATE or PROFILER_FLIGHT is not a time or size");
		return -1;
	}
	if ((rotate.ms || rotate.bytes) && (flight.ms || flight.bytes)) {
		snprintf(err, errlen, "PROFILER_ROTATE and PROFILER_FLIGHT both set: the flight "
				      "recorder rotates by itself, set one");
		return -1;
	}
	s->rotate_ms = rotate.ms;
	s->rotate_bytes = rotate.bytes;
	s->flight_ms = flight.ms;
	s->flight_bytes = flight.bytes;
	s->aggregate_stats = (uint32_t)c->aggregate_stats;
	s->stacks = c->stack_mode != PROF_STACK_OFF;
	s->overwrite = (uint32_t)c->overwrite;
	s->follow = (uint32_t)c->follow;
	command_line(s->command, sizeof s->command);
	return prof_session_output_for(s, c, root, err, errlen);
}

int prof_session_output_for(struct prof_session_shm *s, const struct prof_config *c, pid_t pid,
			    char *err, size_t errlen)
{
	return absolute_prefix(c->output, pid, s->output_prefix, sizeof s->output_prefix, err,
			       errlen);
}
