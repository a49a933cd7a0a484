/* A command's output file (prof report -o, export, summary, diff): the rules of outfile.h
 * with each problem said in one line "prof <cmd>: ..." (exit status 2). */
#ifndef PROF_COLLECTOR_CMD_SAVE_H
#define PROF_COLLECTOR_CMD_SAVE_H

#include <stddef.h>

/* Writes buf to path (outputs are made in memory first, so an unusable input leaves no
 * empty file behind) by a temporary file renamed into place. An existing file is
 * replaced only with force; anything else at path (a symbolic link, a FIFO...) never is.
 * 0, or 2 after one line. */
int cmd_save(const char *cmd, const char *path, const char *buf, size_t len, int force);
/* Whether path may be written, before the work starts (the same rules): 0, or 2 after one
 * line. */
int cmd_output_ok(const char *cmd, const char *path, int force);
/* Renames tmp to path under those rules (tmp is removed on failure): 0, or 2 after one
 * line. */
int cmd_place(const char *cmd, const char *tmp, const char *path, int force);

#endif
