/* Changing the environment with libc's setenv and unsetenv, never the program's
 * (env_set.c). */
#ifndef PROF_PRELOAD_ENV_SET_H
#define PROF_PRELOAD_ENV_SET_H

int prof_setenv(const char *name, const char *value, int overwrite);
int prof_unsetenv(const char *name);

#endif
