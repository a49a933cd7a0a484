/* `prof clean [--dry-run]`: removes the shared-memory segments of this user's sessions
 * that died whole (program and collector killed), one line per session. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "reclaim.h"

static void said(void *ctx, const char *sid, unsigned segments, uint64_t bytes)
{
	const int *dry = ctx;
	printf("%s session %s: %u segment%s, %llu bytes\n", *dry ? "would remove" : "removed",
	       sid, segments, segments == 1 ? "" : "s", (unsigned long long)bytes);
}

int cmd_clean(int argc, char **argv)
{
	int dry = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--dry-run") || !strcmp(argv[i], "-n")) {
			dry = 1;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: prof clean [--dry-run]\n"
			       "Removes from /dev/shm the segments of your libprof sessions that died\n"
			       "whole (program and collector killed). Live sessions, other users'\n"
			       "and ones younger than %d s are left alone. --dry-run only lists.\n",
			       RECLAIM_MIN_AGE_S);
			return 0;
		} else {
			fprintf(stderr, "prof clean: unexpected argument '%s'\n", argv[i]);
			return 2;
		}
	}
	int n = reclaim_dead_sessions(dry, said, &dry);
	if (n < 0) {
		fprintf(stderr, "prof clean: cannot read /dev/shm\n");
		return 1;
	}
	if (n == 0)
		printf("no dead session\n");
	return 0;
}
