/* Removing a /dev/shm name only when the file is this user's. */
#ifndef PROF_COLLECTOR_SHM_REMOVE_H
#define PROF_COLLECTOR_SHM_REMOVE_H

/* shm_unlink(name) ("/libprof-...") if the file it names is owned by this process's
 * user, checked on the opened file; 0 when removed, -1 otherwise (errno: EPERM for
 * another user's, or the open's or unlink's error). */
int shm_remove_own(const char *name);

#endif
