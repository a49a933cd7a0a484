/* `prof dump [SESSION...]`: the outputs of running sessions written now (their collector
 * asked by SIGUSR2), the programs going on: what a flight recorder (PROFILER_FLIGHT) is
 * for, and a look at any long run so far. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/commands.h"
#include "collector/options.h"
#include "preload/common/session.h"

/* Asks the collector of session sid (this user's, alive) for a dump: 1 when asked, 0 when
 * the session is not one to ask (not live, not ours, not readable). */
static int ask(const char *sid)
{
	char name[128];
	prof_session_shm_name(name, sizeof name, sid);
	int fd = shm_open(name, O_RDONLY | O_CLOEXEC, 0);
	struct stat st;
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || st.st_uid != getuid() ||
	    (size_t)st.st_size < sizeof(struct prof_session_shm)) {
		close(fd);
		return 0;
	}
	struct prof_session_shm *s = mmap(NULL, sizeof *s, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (s == MAP_FAILED)
		return 0;
	int asked = 0;
	pid_t collector = (pid_t)atomic_load(&s->collector_pid);
	uint64_t ticks = atomic_load(&s->collector_start_ticks);
	if (s->magic == PROF_SHM_MAGIC && s->version == PROF_SHM_VERSION && collector > 0 &&
	    ticks && prof_proc_alive(collector, ticks) && !kill(collector, SIGUSR2)) {
		char prefix[PROF_PATH_MAX], command[120];
		snprintf(prefix, sizeof prefix, "%.*s", (int)sizeof s->output_prefix - 1,
			 s->output_prefix);
		snprintf(command, sizeof command, "%.100s", s->command); /* %.N: bounded read */
		printf("session %s (%s): its collector (pid %d) writes %s.json and %s.txt\n", sid,
		       command, (int)collector, prefix, prefix);
		asked = 1;
	}
	munmap(s, sizeof *s);
	return asked;
}

int cmd_dump(int argc, char **argv)
{
	char **only;
	int nonly, rc;
	const struct opt_command c = {
		.name = "dump",
		.usage = "prof dump [SESSION...]",
		.about = "Writes the outputs (PREFIX.json, PREFIX.txt) of your running libprof sessions\n"
			 "now, from what they captured so far (with PROFILER_FLIGHT: the last span); the\n"
			 "programs go on, and their outputs are written again at the end. The same as\n"
			 "kill -USR2 to a session's collector. SESSION ids limit it to those sessions.\n",
		.after = "Exit status: 0 when a session was asked; 1 when none is running.\n",
	};
	if ((rc = opt_parse(&c, argc, argv, &only, &nonly)))
		return rc < 0 ? 0 : rc;
	if ((rc = opt_session_ids(&c, only, nonly)))
		return rc;
	int asked = 0;
	for (int i = 0; i < nonly; i++)
		asked += ask(only[i]);
	if (!nonly) {
		DIR *d = opendir("/dev/shm");
		char prefix[64];
		snprintf(prefix, sizeof prefix, "libprof-%u-", (unsigned)getuid());
		size_t plen = strlen(prefix);
		for (struct dirent *e; d && (e = readdir(d));) {
			const char *sid = e->d_name + plen;
			/* session segments only: "libprof-UID-SID", nothing after the id */
			if (!strncmp(e->d_name, prefix, plen) && strlen(sid) == PROF_SID_LEN &&
			    strspn(sid, "0123456789abcdef") == PROF_SID_LEN)
				asked += ask(sid);
		}
		if (d)
			closedir(d);
	}
	if (!asked) {
		fprintf(stderr, "prof dump: no running libprof session of yours%s\n",
			nonly ? " with that id" : "");
		return 1;
	}
	return 0;
}
