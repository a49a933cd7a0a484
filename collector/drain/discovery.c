/* Discovery: the session's processes are found by the names of their segments in
 * /dev/shm (libprof-UID-SID-PID-NONCE), oldest first; a newer segment of a known pid is
 * a new image (exec), and the old one is finished first. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/drain/drain_internal.h"
#include "collector/shm/shm_guard.h"
#include "collector/shm/shm_remove.h"
#include "preload/common/debug.h"

/* The pid a segment's name gives (libprof-UID-SID-PID-NONCE), 0 if none. */
static pid_t pid_in_name(struct collector *c, const char *name)
{
	size_t plen = strlen(c->shm_prefix);
	if (strncmp(name, c->shm_prefix, plen))
		return 0;
	char *end;
	long pid = strtol(name + plen, &end, 10);
	return *end == '-' && pid > 0 && pid <= INT_MAX ? (pid_t)pid : 0;
}

void add_process(struct collector *c, const char *name, struct prof_proc_shm *shm,
		 size_t mapped)
{
	struct proc_entry *p = calloc(1, sizeof *p);
	char why[160];
	if (!p) {
		prof_debug(PROF_DEBUG_DRAIN, "not following %s yet: out of memory", name);
		munmap(shm, mapped);
		return;
	}
	p->shm = shm;
	p->map_size = mapped;
	if (shm_guard_add(shm, mapped, &p->shrunk)) {
		prof_debug(PROF_DEBUG_DRAIN | PROF_DEBUG_SHM, "not following %s yet: cannot guard "
			   "its mapping (out of memory)", name);
		free(p);
		munmap(shm, mapped);
		return;
	}
	snprintf(p->name, sizeof p->name, "/%.255s", name); /* a quarantine removes it */
	pid_t named = pid_in_name(c, name);
	p->pid = named ? named : (pid_t)shm->pid;
	if (shm_geom_read(shm, mapped, &p->g, why, sizeof why))
		quarantine(p, why);
	else if (named && (pid_t)p->g.pid != named) {
		snprintf(why, sizeof why, "pid %u in the segment of pid %d", p->g.pid, (int)named);
		quarantine(p, why);
	}
	if (!p->corrupt) {
		shm_area_init(&p->strings_area, (const char *)shm, p->g.seg_size,
			      mapped, p->name, &p->shrunk, p->g.strings_off, p->g.strings_size,
			      shm->strings_chunk_off, 1ull << 32);
		shm_area_init(&p->stack_area, (const char *)shm, p->g.seg_size,
			      mapped, p->name, &p->shrunk, p->g.stacks_off, p->g.stacks_size,
			      shm->stacks_chunk_off, 8ull << 32);
		p->slot_seen = calloc(p->g.nslots, sizeof *p->slot_seen);
		p->slot_tail = calloc(p->g.nslots, sizeof *p->slot_tail);
		if (!p->slot_seen || !p->slot_tail) {
			prof_debug(PROF_DEBUG_DRAIN, "not following %s yet: out of memory", name);
			free(p->slot_seen);
			free(p->slot_tail);
			free(p);
			shm_guard_remove(shm);
			munmap(shm, mapped);
			return;
		}
	}
	uint32_t exec_seq = 0;
	for (struct proc_entry *q = c->procs; q; q = q->next) {
		if (q->pid != p->pid)
			continue;
		exec_seq++;
		/* a newer image of the same pid: the old one has exec'd, all of its records
		 * must precede the new image's (the readers rely on it) */
		finish_process(c, q, INT32_MIN);
	}
	struct cap_process h = {.pid = (uint32_t)p->pid, .ppid = shm->ppid, .exec_seq = exec_seq,
				.start_ns = shm->created_ns};
	uint32_t len = !p->corrupt && shm->cmdline_len < PROF_CMDLINE_MAX ? shm->cmdline_len : 0;
	put(c, CAP_PROCESS, &h, sizeof h, shm->cmdline, len);
	p->announce = h;
	/* one read: the program may change it between a check and the copy */
	uint32_t job_len = *(volatile const uint32_t *)&shm->job_len;
	p->job_len = !p->corrupt && job_len < PROF_JOB_MAX ? job_len : 0;
	memcpy(p->job, shm->job, p->job_len);
	put_job(c, p);
	if (c->parts && len && (p->cmdline = malloc(len))) {
		memcpy(p->cmdline, shm->cmdline, len);
		p->cmdline_len = len;
	}
	p->ppid = (pid_t)shm->ppid;
	p->exec_seq = exec_seq;
	/* its code mappings now, while it surely lives (stacks may come after its end) */
	if (c->s->stacks && !p->corrupt)
		stacks_read_maps(&p->stacks, p->pid, put_record, c);
	p->next = c->procs;
	c->procs = p;
	c->processes++;
}

struct found {
	char name[256];
	pid_t pid;
	uint64_t created_ns, segment_mib;
	char cmdline[96]; /* its first arguments, for a line naming it */
};

static int by_creation(const void *a, const void *b)
{
	const struct found *x = a, *y = b;
	return x->created_ns < y->created_ns ? -1 : x->created_ns > y->created_ns;
}

static int known(struct collector *c, const char *name)
{
	for (struct proc_entry *p = c->procs; p; p = p->next)
		if (!strcmp(p->name + 1, name))
			return 1;
	return 0;
}

/* A new segment's header, read without mapping it (the mapping may be refused): 0 when
 * the segment is complete, -1 while it is still being made (or is not one of ours). */
static int read_header(struct collector *c, const char *name, struct found *f)
{
	char path[300];
	snprintf(path, sizeof path, "/%s", name);
	int fd = shm_open(path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct stat st;
	struct prof_proc_shm *h = malloc(sizeof *h);
	int ok = h && !fstat(fd, &st) && st.st_uid == getuid() &&
		 (uint64_t)st.st_size >= sizeof *h &&
		 pread(fd, h, sizeof *h, 0) == (ssize_t)sizeof *h && h->magic == PROF_SHM_MAGIC &&
		 h->version == PROF_SHM_VERSION && h->segment_size <= (uint64_t)st.st_size;
	close(fd);
	if (ok) {
		snprintf(f->name, sizeof f->name, "%.255s", name);
		pid_t named = pid_in_name(c, name);
		f->pid = named ? named : (pid_t)h->pid;
		f->created_ns = h->created_ns;
		f->segment_mib = (uint64_t)st.st_size >> 20;
		uint32_t n = h->cmdline_len < sizeof f->cmdline ? h->cmdline_len
								: (uint32_t)sizeof f->cmdline - 1;
		for (uint32_t i = 0; i < n; i++)
			f->cmdline[i] = h->cmdline[i] && (unsigned char)h->cmdline[i] >= ' '
						? h->cmdline[i] : ' ';
		while (n && f->cmdline[n - 1] == ' ')
			n--;
		f->cmdline[n] = 0;
	}
	free(h);
	return ok ? 0 : -1;
}

/* A complete segment the collector cannot map (an address-space limit, ulimit -v, or no
 * memory): after REFUSED_AFTER_NS of tries, its process is named as not profiled and kept
 * as a finished entry, so that the session does not wait for it and the program is never
 * held at its exit for outputs that wait on it. */
#define REFUSED_AFTER_NS 1000000000ull

static int map_refused(struct collector *c, const struct found *f, int err, uint64_t now)
{
	unsigned i;
	for (i = 0; i < c->nmap_failing && strcmp(c->map_failing[i].name, f->name); i++)
		;
	if (i == c->nmap_failing) {
		if (i == sizeof c->map_failing / sizeof c->map_failing[0])
			i = 0; /* the oldest try forgotten: it is tried again */
		else
			c->nmap_failing++;
		snprintf(c->map_failing[i].name, sizeof c->map_failing[i].name, "%.255s", f->name);
		c->map_failing[i].since = now;
	}
	if (now - c->map_failing[i].since < REFUSED_AFTER_NS)
		return 0;
	c->map_failing[i] = c->map_failing[--c->nmap_failing];
	struct proc_entry *p = calloc(1, sizeof *p);
	if (!p)
		return 0;
	snprintf(p->name, sizeof p->name, "/%.255s", f->name);
	p->pid = f->pid;
	p->finished = 1;
	p->next = c->procs;
	c->procs = p;
	c->refused++;
	char limit[96] = "";
	struct rlimit as;
	if (!getrlimit(RLIMIT_AS, &as) && as.rlim_cur != RLIM_INFINITY)
		snprintf(limit, sizeof limit, "; the address-space limit (ulimit -v) is %llu MiB",
			 (unsigned long long)(as.rlim_cur >> 20));
	fprintf(stderr, "libprof: process %d (%s) is not profiled: the collector cannot map "
			"its %llu MiB of shared memory (%s%s)\n", (int)f->pid, f->cmdline,
		(unsigned long long)f->segment_mib, strerror(err), limit);
	shm_remove_own(p->name);
	return 1;
}

/* New process segments, oldest first (an exec'd image after the one it replaced). */
int scan_segments(struct collector *c)
{
	DIR *d = opendir("/dev/shm");
	if (!d) {
		prof_debug(PROF_DEBUG_DRAIN, "cannot look for new processes: /dev/shm: %m");
		return 0;
	}
	struct found found[64];
	int n = 0, added = 0;
	size_t plen = strlen(c->shm_prefix);
	struct dirent *e;
	while ((e = readdir(d)) && n < 64) {
		if (strncmp(e->d_name, c->shm_prefix, plen) || known(c, e->d_name))
			continue;
		if (!read_header(c, e->d_name, &found[n]))
			n++; /* else still being made: next scan */
	}
	closedir(d);
	qsort(found, (size_t)n, sizeof *found, by_creation);
	uint64_t now = prof_mono_ns();
	for (int i = 0; i < n; i++) {
		/* an older image of the pid (it exec'd) is finished and unmapped first: its
		 * records precede the new image's, and under an address-space limit the two
		 * did not fit the collector's at once */
		for (struct proc_entry *q = c->procs; q; q = q->next)
			if (q->pid == found[i].pid)
				finish_process(c, q, INT32_MIN);
		size_t size;
		struct prof_proc_shm *shm = prof_proc_open_sized(found[i].name, &size);
		int err = errno;
		if (shm) {
			add_process(c, found[i].name, shm, size);
			added++;
		} else if (map_refused(c, &found[i], err, now)) {
			added++;
		}
	}
	return added;
}

/* Segments of processes that joined as the session closed: never drained, never kept. */
void sweep_segments(struct collector *c)
{
	DIR *d = opendir("/dev/shm");
	if (!d)
		return;
	char path[300];
	size_t plen = strlen(c->shm_prefix);
	for (struct dirent *e; (e = readdir(d));)
		if (!strncmp(e->d_name, c->shm_prefix, plen) && !known(c, e->d_name)) {
			snprintf(path, sizeof path, "/%.255s", e->d_name);
			shm_remove_own(path);
		}
	closedir(d);
}

int has_segment(struct collector *c, pid_t pid)
{
	for (struct proc_entry *p = c->procs; p; p = p->next)
		if (p->pid == pid)
			return 1;
	return 0;
}
