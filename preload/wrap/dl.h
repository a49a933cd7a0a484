#ifndef PROF_PRELOAD_DL_H
#define PROF_PRELOAD_DL_H
/* glibc's dlsym, not libprof's wrapper. */
void *prof_real_dlsym(void *handle, const char *name);
#endif
