/* The environment as libc keeps it, whatever the program defines (env.c). */
#ifndef PROF_COMMON_ENV_H
#define PROF_COMMON_ENV_H

/* libc's getenv, never the program's: the value of name in environ, or NULL. No heap,
 * no lock: safe after vfork and in a constructor before the program's own setup. */
const char *prof_getenv(const char *name);

#endif
