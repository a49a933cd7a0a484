/* `prof clean [--dry-run] [--min-age S] [SID...]`: removes the shared-memory segments of
 * this user's sessions that died whole (program and collector killed), one line per
 * session. */
#include <stdio.h>
#include <string.h>

#include "collector/cmd_args.h"
#include "collector/commands.h"
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

static void help(void)
{
	printf("usage: prof clean [--dry-run] [--min-age SECONDS] [SESSION...]\n"
	       "Removes from /dev/shm the segments of your libprof sessions that died whole\n"
	       "(program and collector killed): one line per session, with its bytes.\n"
	       "Live sessions, other users' and ones with a segment younger than --min-age\n"
	       "(default %d s) are left alone. SESSION ids limit it to those sessions;\n"
	       "--dry-run only lists.\n",
	       RECLAIM_MIN_AGE_S);
}

int cmd_clean(int argc, char **argv)
{
	int dry = 0, nonly = 0;
	uint64_t min_age = RECLAIM_MIN_AGE_S;
	char *only[64];
	for (int i = 1; i < argc; i++) {
		const char *v;
		if (!strcmp(argv[i], "--dry-run") || !strcmp(argv[i], "-n")) {
			dry = 1;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			help();
			return 0;
		} else if (arg_value(argc, argv, &i, "--min-age", &v)) {
			if (!v || arg_number(v, 0, 86400 * 365, &min_age))
				return arg_error("prof clean", "--min-age wants seconds, got '%s'",
						 v ? v : "");
		} else if (argv[i][0] != '-' && strlen(argv[i]) == PROF_SID_LEN &&
			   strspn(argv[i], "0123456789abcdef") == PROF_SID_LEN && nonly < 64) {
			only[nonly++] = argv[i];
		} else {
			return arg_error("prof clean", "unexpected argument '%s' (see --help)",
					 argv[i]);
		}
	}
	int n = reclaim_dead_sessions(dry, (unsigned)min_age, only, nonly, said, &dry);
	if (n < 0) {
		fprintf(stderr, "prof clean: cannot read /dev/shm\n");
		return 1;
	}
	if (n == 0)
		printf("no dead session\n");
	return 0;
}
