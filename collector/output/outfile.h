/* Creating output files safely: nothing at an output name is ever opened (so a symbolic
 * link is never followed and a FIFO never blocks), files are written under an
 * unpredictable temporary name made exclusively beside their final name and renamed into
 * place, and a name taken by someone else is not replaced unless asked. */
#ifndef PROF_COLLECTOR_OUTFILE_H
#define PROF_COLLECTOR_OUTFILE_H

#include <stddef.h>
#include <sys/types.h>

/* What is at path, without following it: 0 nothing, 1 a regular file, -1 anything else
 * (err gets "PATH is a symbolic link" / "a FIFO" / "a directory" / ...). */
int outfile_probe(const char *path, char *err, size_t errlen);

/* Creates a new file ".NAME.RANDOM.tmp" in final's directory (O_EXCL|O_NOFOLLOW, mode
 * 0666 less the umask) and returns its descriptor, its name in tmp; -1 with errno. */
int outfile_temp(const char *final, char *tmp, size_t tmplen);

/* Renames tmp to final. replace: a regular file at final is replaced (anything else is
 * not); otherwise nothing at final is (renameat2 RENAME_NOREPLACE). Returns 0, 1 when
 * final is taken (tmp is left alone), or -1 with errno. */
int outfile_place(const char *tmp, const char *final, int replace);

/* Writes len bytes of buf to path by a temporary file; see outfile_place for replace.
 * Returns 0, 1 when path is taken, or -1 with errno. */
int outfile_save(const char *path, const char *buf, size_t len, int replace);

/* Claims the output prefix of a session: PREFIX, else PREFIX-2, PREFIX-3, ... — the first
 * whose .json and .txt do not exist and whose .prof can be created exclusively. With
 * overwrite, regular files at PREFIX's names are replaced instead (the new capture is put
 * in place by a rename). A name holding anything but a regular file is never used: one
 * line on stderr names it and the next suffix is tried. prefix is updated to the claimed
 * one. Returns the capture's descriptor, or -1 with a reason in err. */
int outfile_claim(char *prefix, size_t len, int overwrite, char *err, size_t errlen);
/* The same for a capture in parts (PROFILER_ROTATE, PROFILER_FLIGHT): PREFIX.prof is made
 * a new directory (mkdir is exclusive); with overwrite a regular file there is replaced,
 * a directory never (the next suffix is taken). Returns the directory's descriptor, or
 * -1 with a reason. */
int outfile_claim_parts(char *prefix, size_t len, int overwrite, char *err, size_t errlen);

/* "PREFIX-N" (N >= 2) or PREFIX itself (N == 1), then ext; -1 when it does not fit. */
int outfile_suffixed(char *out, size_t len, const char *prefix, unsigned n, const char *ext);

#endif
