/* Discovery: the session's processes are found by the names of their segments in
 * /dev/shm (libprof-UID-SID-PID-NONCE), oldest first; a newer segment of a known pid is
 * a new image (exec), and the old one is finished first. */
#define _GNU_SOURCE
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "collector/drain/drain_internal.h"
#include "collector/shm/shm_guard.h"
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
	struct prof_proc_shm *shm;
	size_t size;
};

static int by_creation(const void *a, const void *b)
{
	const struct found *x = a, *y = b;
	return x->shm->created_ns < y->shm->created_ns ? -1 : x->shm->created_ns > y->shm->created_ns;
}

static int known(struct collector *c, const char *name)
{
	for (struct proc_entry *p = c->procs; p; p = p->next)
		if (!strcmp(p->name + 1, name))
			return 1;
	return 0;
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
		size_t size;
		struct prof_proc_shm *shm = prof_proc_open_sized(e->d_name, &size);
		if (!shm)
			continue; /* still being made: next scan */
		snprintf(found[n].name, sizeof found[n].name, "%.255s", e->d_name);
		found[n].size = size;
		found[n++].shm = shm;
	}
	closedir(d);
	qsort(found, (size_t)n, sizeof *found, by_creation);
	for (int i = 0; i < n; i++, added++)
		add_process(c, found[i].name, found[i].shm, found[i].size);
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
			shm_unlink(path);
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
