/* A command's output file, with one-line errors; see cmd_save.h. */
#include "collector/output/cmd_save.h"

#include <unistd.h>

#include "collector/options.h"
#include "collector/output/outfile.h"

int cmd_output_ok(const char *cmd, const char *path, int force)
{
	char why[4200];
	int p = outfile_probe(path, why, sizeof why);

	if (p < 0)
		return opt_error(cmd, "%s; not writing there", why);
	if (p > 0 && !force)
		return opt_error(cmd, "%s exists; not replacing it (use --force-overwrite)", path);
	return 0;
}

int cmd_place(const char *cmd, const char *tmp, const char *path, int force)
{
	int rc = outfile_place(tmp, path, force);

	if (rc == 0)
		return 0;
	unlink(tmp);
	if (rc > 0)
		return opt_error(cmd, "%s appeared meanwhile; not replacing it%s", path,
				 force ? "" : " (use --force-overwrite)");
	return opt_error(cmd, "writing %s: %m", path);
}

int cmd_save(const char *cmd, const char *path, const char *buf, size_t len, int force)
{
	int rc = cmd_output_ok(cmd, path, force);

	if (rc)
		return rc;
	rc = outfile_save(path, buf, len, force);
	if (rc > 0)
		return opt_error(cmd, "%s appeared meanwhile; not replacing it%s", path,
				 force ? "" : " (use --force-overwrite)");
	if (rc < 0)
		return opt_error(cmd, "writing %s: %m", path);
	return 0;
}
