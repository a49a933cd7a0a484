/* Removing only our own names from /dev/shm. The names carry this user's uid and the
 * session id, but anyone can make a file of any name there: root's collector removed
 * 20,000 files another user had planted under its session's prefix. The owner is read
 * from the opened file (O_NOFOLLOW: not through a link); /dev/shm is sticky, so a name
 * found ours cannot be removed and made again by another user before the unlink. */
#define _GNU_SOURCE
#include "collector/shm/shm_remove.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int shm_remove_own(const char *name)
{
	int fd = shm_open(name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct stat st;
	int own = !fstat(fd, &st) && st.st_uid == getuid();
	close(fd);
	if (!own) {
		errno = EPERM;
		return -1;
	}
	return shm_unlink(name);
}
