/* Dead sessions' segments (reclaim.h). A session is alive while any of these lives: its
 * collector (a process whose maps hold the session segment: pids are reused, a stranger
 * with the same pid does not map it), its root process (the same test), or the process of
 * any of its process segments (pid and /proc start time, as the collector checks them).
 * Only this uid's segments are looked at (the name, then fstat's owner), and a session
 * any of whose segments is young is left alone. */
#define _GNU_SOURCE
#include "collector/shm/reclaim.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "preload/common/debug.h"
#include "preload/common/session.h"
#include "collector/shm/shm_remove.h"

#define MAX_SESSIONS 256

struct dead {
	char sid[PROF_SID_LEN + 1];
	unsigned segments;
	uint64_t bytes, memory; /* sizes, and what they hold in memory (tmpfs blocks) */
	int alive; /* something of it lives, is young, or is not ours */
	int has_session;
};

/* Whether pid maps the shared-memory object name (a "/libprof-..." name). */
static int maps_segment(uint32_t pid, const char *name)
{
	char path[64], line[512];
	if (!pid)
		return 0;
	snprintf(path, sizeof path, "/proc/%u/maps", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	char want[160];
	snprintf(want, sizeof want, "/dev/shm%s", name);
	int found = 0;
	while (!found && fgets(line, sizeof line, f)) {
		char *at = strstr(line, want);
		/* the whole name: not a longer one (a process segment) beginning with it */
		found = at && (at[strlen(want)] == '\n' || at[strlen(want)] == ' ' ||
			       at[strlen(want)] == 0);
	}
	fclose(f);
	return found;
}

/* Maps the first bytes of a segment read-only, if it is ours. */
static void *peek(const char *name, size_t len, struct stat *st)
{
	int fd = shm_open(name, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return NULL;
	void *p = NULL;
	if (fstat(fd, st) == 0 && st->st_uid == getuid() && (size_t)st->st_size >= len) {
		p = mmap(0, len, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			p = NULL;
	}
	close(fd);
	return p;
}

static struct dead *session_of(struct dead *d, int *n, const char *sid)
{
	for (int i = 0; i < *n; i++)
		if (!strcmp(d[i].sid, sid))
			return &d[i];
	if (*n == MAX_SESSIONS)
		return NULL;
	struct dead *s = &d[(*n)++];
	memset(s, 0, sizeof *s);
	memcpy(s->sid, sid, PROF_SID_LEN);
	return s;
}

/* Looks at one segment of session s; name is "/libprof-UID-SID[-PID-NONCE]". */
static void judge(struct dead *s, const char *name, int is_session, time_t now,
		  unsigned min_age)
{
	struct stat st;
	size_t hdr = is_session ? sizeof(struct prof_session_shm) : sizeof(struct prof_proc_shm);
	void *p = peek(name, hdr, &st);
	if (!p) {
		/* not ours, or too small to be read: a short one may still be being made */
		int fd = shm_open(name, O_RDONLY | O_CLOEXEC, 0);
		if (fd < 0 || fstat(fd, &st) || st.st_uid != getuid() ||
		    now - st.st_mtime < (time_t)min_age)
			s->alive = 1;
		if (fd >= 0)
			close(fd);
		if (!s->alive) {
			s->segments++;
			s->bytes += (uint64_t)st.st_size;
			s->memory += (uint64_t)st.st_blocks * 512;
		}
		return;
	}
	s->segments++;
	s->bytes += (uint64_t)st.st_size;
	s->memory += (uint64_t)st.st_blocks * 512;
	if (now - st.st_mtime < (time_t)min_age)
		s->alive = 1;
	if (is_session) {
		const struct prof_session_shm *ss = p;
		s->has_session = 1;
		uint32_t collector = atomic_load(&((struct prof_session_shm *)ss)->collector_pid);
		if (maps_segment(collector, name) || maps_segment(ss->root_pid, name))
			s->alive = 1;
	} else {
		const struct prof_proc_shm *ps = p;
		/* being made (no magic yet) is young, above; a finished one is gone */
		if (ps->magic == PROF_SHM_MAGIC && ps->pid &&
		    prof_proc_alive((pid_t)ps->pid, ps->proc_start_ticks))
			s->alive = 1;
		else if (ps->magic != PROF_SHM_MAGIC && ps->pid &&
			 prof_proc_start_ticks((pid_t)ps->pid))
			s->alive = 1;
	}
	munmap(p, hdr);
}

static int wanted(const char *sid, char *const *only, int nonly)
{
	for (int i = 0; i < nonly; i++)
		if (!strcmp(only[i], sid))
			return 1;
	return nonly == 0;
}

int reclaim_dead_sessions(int dry_run, unsigned min_age_s, char *const *only, int nonly,
			  reclaim_fn fn, void *ctx)
{
	DIR *dir = opendir("/dev/shm");
	if (!dir)
		return -1;
	char prefix[64], name[300];
	snprintf(prefix, sizeof prefix, "libprof-%u-", (unsigned)getuid());
	size_t plen = strlen(prefix);
	struct dead *d = calloc(MAX_SESSIONS, sizeof *d);
	if (!d) {
		closedir(dir);
		return -1;
	}
	int n = 0;
	time_t now = time(0);
	for (struct dirent *e; (e = readdir(dir));) {
		const char *sid = e->d_name + plen;
		if (strncmp(e->d_name, prefix, plen) || strspn(sid, "0123456789abcdef") != PROF_SID_LEN ||
		    (sid[PROF_SID_LEN] && sid[PROF_SID_LEN] != '-'))
			continue;
		char id[PROF_SID_LEN + 1];
		memcpy(id, sid, PROF_SID_LEN);
		id[PROF_SID_LEN] = 0;
		if (!wanted(id, only, nonly))
			continue;
		struct dead *s = session_of(d, &n, id);
		if (!s)
			prof_debug(PROF_DEBUG_SHM, "more than %d sessions' segments in /dev/shm: "
				   "the rest are looked at another time", MAX_SESSIONS);
		if (!s)
			break; /* the rest on another call */
		if (s->alive)
			continue;
		snprintf(name, sizeof name, "/%.255s", e->d_name);
		judge(s, name, !sid[PROF_SID_LEN], now, min_age_s);
	}
	int found = 0;
	for (int i = 0; i < n; i++) {
		if (d[i].alive)
			continue;
		found++;
		if (!dry_run) {
			/* the process segments, then the session (a name another user made in
			 * /dev/shm cannot be removed by us: the directory is sticky) */
			rewinddir(dir);
			char want[96];
			snprintf(want, sizeof want, "%s%s", prefix, d[i].sid);
			for (struct dirent *e; (e = readdir(dir));)
				if (!strncmp(e->d_name, want, strlen(want)) &&
				    e->d_name[strlen(want)] == '-') {
					snprintf(name, sizeof name, "/%.255s", e->d_name);
					if (shm_remove_own(name) && errno != ENOENT)
						prof_debug(PROF_DEBUG_SHM, "cannot remove "
							   "/dev/shm%s: %m", name);
				}
			snprintf(name, sizeof name, "/%s", want);
			if (shm_remove_own(name) && errno != ENOENT)
				prof_debug(PROF_DEBUG_SHM, "cannot remove /dev/shm%s: %m", name);
		}
		if (fn)
			fn(ctx, d[i].sid, d[i].segments, d[i].bytes, d[i].memory);
	}
	closedir(dir);
	free(d);
	return found;
}

void reclaim_session(const char *sid)
{
	DIR *dir = opendir("/dev/shm");
	if (!dir)
		return;
	char prefix[128], name[300];
	prof_proc_shm_prefix(prefix, sizeof prefix, sid);
	size_t plen = strlen(prefix);
	for (struct dirent *e; (e = readdir(dir));)
		if (!strncmp(e->d_name, prefix, plen)) {
			snprintf(name, sizeof name, "/%.255s", e->d_name);
			shm_remove_own(name);
		}
	closedir(dir);
}
