/* Whether an exec'd image can join the session. The loader preloads libprof only into a
 * dynamically linked image of its own class, and ignores LD_PRELOAD (outside the
 * trusted directories) in secure mode: setuid/setgid images that change the user. Such
 * an image would never register, and the session would wait for it; knowing up front
 * beats waiting. Only system calls here: the caller may be a vfork child. */
#define _GNU_SOURCE
#include "preload/wrap/exec_target.h"
#include "preload/common/env.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define MAX_PHDRS 128

/* The dynamic section names a DT_SONAME: ld.so (run as a program, it loads one and
 * honours LD_PRELOAD), where a static-pie program has none. */
static int has_soname(int fd, const Elf64_Phdr *dyn)
{
	Elf64_Dyn d[64];
	size_t size = dyn->p_filesz < sizeof d ? dyn->p_filesz : sizeof d;
	ssize_t n = pread(fd, d, size, (off_t)dyn->p_offset);
	for (ssize_t i = 0; n > 0 && i < n / (ssize_t)sizeof *d && d[i].d_tag != DT_NULL; i++)
		if (d[i].d_tag == DT_SONAME)
			return 1;
	return 0;
}

static const char *elf_refuses(int fd)
{
	Elf64_Ehdr eh;
	if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG))
		return 0; /* a script, or unreadable: its interpreter decides */
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64)
		return "built for another architecture (libprof.so cannot be preloaded)";
	if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > MAX_PHDRS)
		return 0;
	Elf64_Phdr ph[MAX_PHDRS];
	size_t size = (size_t)eh.e_phnum * sizeof *ph;
	if (pread(fd, ph, size, (off_t)eh.e_phoff) != (ssize_t)size)
		return 0;
	for (unsigned i = 0; i < eh.e_phnum; i++)
		if (ph[i].p_type == PT_INTERP)
			return 0;
	for (unsigned i = 0; i < eh.e_phnum; i++)
		if (ph[i].p_type == PT_DYNAMIC && has_soname(fd, &ph[i]))
			return 0; /* a shared object run directly: the loader itself preloads */
	return "statically linked (no loader to preload libprof.so)";
}

static const char *secure_refuses(int fd)
{
	struct stat st;
	struct statvfs vfs;
	if (fstat(fd, &st))
		return 0;
	if (getuid() != geteuid() || getgid() != getegid())
		return "run with changed privileges (the loader ignores LD_PRELOAD)";
	int setuid_bits = ((st.st_mode & S_ISUID) && st.st_uid != getuid()) ||
			  ((st.st_mode & S_ISGID) && st.st_gid != getgid());
	if (setuid_bits && fstatvfs(fd, &vfs) == 0 && !(vfs.f_flag & ST_NOSUID))
		return "setuid/setgid (the loader ignores LD_PRELOAD)";
	return 0;
}

static const char *file_refuses(const char *path, int depth);

/* A script: its interpreter (absolute, as the kernel wants it) is what runs. */
static const char *script_refuses(int fd, int depth)
{
	char line[256];
	ssize_t n = pread(fd, line, sizeof line - 1, 0);
	if (n < 3 || line[0] != '#' || line[1] != '!' || depth > 0)
		return 0;
	line[n] = 0;
	char *p = line + 2;
	while (*p == ' ' || *p == '\t')
		p++;
	char *end = p + strcspn(p, " \t\n");
	if (*p != '/' || !*end)
		return 0; /* not absolute, or cut off: leave it to the kernel */
	*end = 0;
	return file_refuses(p, depth + 1);
}

static const char *file_refuses(const char *path, int depth)
{
	/* Only a regular file is opened: opening a FIFO blocks (the exec itself fails at
	 * once with EACCES), a tty or a device may act on open. Non-blocking and checked
	 * again on the descriptor, for one swapped in between. */
	struct stat st;
	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return 0; /* the exec itself will fail, or a kernel that knows better decides */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return 0;
	}
	const char *why = secure_refuses(fd);
	if (!why)
		why = elf_refuses(fd);
	if (!why)
		why = script_refuses(fd, depth);
	close(fd);
	return why;
}

const char *prof_exec_target_refuses(const char *path)
{
	int saved = errno; /* inside a wrapper: the caller's errno is not ours to change */
	const char *why = file_refuses(path, 0);
	errno = saved;
	return why;
}

int prof_exec_resolve(const char *file, char *out, size_t len)
{
	size_t flen = strlen(file);
	if (!flen)
		return -1;
	if (strchr(file, '/')) {
		if (flen >= len)
			return -1;
		memcpy(out, file, flen + 1);
		return 0;
	}
	const char *path = prof_getenv("PATH"); /* no heap: safe after vfork */
	if (!path)
		path = "/bin:/usr/bin";
	for (const char *p = path;; p++) {
		const char *end = strchrnul(p, ':');
		size_t dlen = (size_t)(end - p);
		if (dlen + 1 + flen < len) {
			/* an empty entry is the current directory */
			memcpy(out, dlen ? p : ".", dlen ? dlen : 1);
			size_t n = dlen ? dlen : 1;
			out[n] = '/';
			memcpy(out + n + 1, file, flen + 1);
			struct stat st;
			if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
				return 0;
		}
		if (!*end)
			return -1;
		p = end;
	}
}
