/* `prof clean [--dry-run] [--min-age S] [SID...]`: removes the shared-memory segments of
 * this user's sessions that died whole (program and collector killed), one line per
 * session. */
#include <stdio.h>
#include <string.h>

#include "collector/commands.h"
#include "collector/options.h"
#include "collector/shm/reclaim.h"
#include "preload/common/session.h"

static void said(void *ctx, const char *sid, unsigned segments, uint64_t bytes,
		 uint64_t memory)
{
	const int *dry = ctx;
	printf("%s session %s: %u segment%s, %llu bytes (%.1f MB in memory)\n",
	       *dry ? "would remove" : "removed", sid, segments, segments == 1 ? "" : "s",
	       (unsigned long long)bytes, memory / 1e6);
}

int cmd_clean(int argc, char **argv)
{
	int dry = 0, nonly, rc;
	uint64_t min_age = RECLAIM_MIN_AGE_S;
	char **only, about[512];

	snprintf(about, sizeof(about),
		 "Removes from /dev/shm the segments of your libprof sessions that died whole\n"
		 "(program and collector killed): one line per session, with its bytes.\n"
		 "Live sessions, other users' and ones with a segment younger than --min-age\n"
		 "(default %d s) are left alone. SESSION ids limit it to those sessions;\n"
		 "--dry-run only lists.\n",
		 RECLAIM_MIN_AGE_S);
	const struct opt opts[] = {
		{ .name = "dry-run", .letter = 'n', .kind = OPT_FLAG, .dest = &dry,
		  .help = "only list what would be removed" },
		{ .name = "min-age", .kind = OPT_NUMBER, .value = "SECONDS", .dest = &min_age,
		  .max = 86400 * 365, .needs = "seconds",
		  .help = "leave sessions with a segment younger than this alone" },
	};
	const struct opt_command c = {
		.name = "clean",
		.usage = "prof clean [--dry-run] [--min-age SECONDS] [SESSION...]",
		.about = about,
		.opts = opts,
		.nopts = ARRAY_LEN(opts),
	};

	if ((rc = opt_parse(&c, argc, argv, &only, &nonly)))
		return rc < 0 ? 0 : rc;
	if ((rc = opt_session_ids(&c, only, nonly)))
		return rc;
	int n = reclaim_dead_sessions(dry, (unsigned)min_age, only, nonly, said, &dry);
	if (n < 0) {
		fprintf(stderr, "prof clean: cannot read /dev/shm\n");
		return 1;
	}
	if (n == 0)
		printf("no dead session\n");
	return 0;
}
