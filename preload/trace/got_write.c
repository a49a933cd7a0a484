/* Every GOT entry libprof changes goes through here, under one lock. An entry in RELRO
 * is on a read-only page: made writable, written, put back as it was. Two writers doing
 * that under different locks interleave (A makes the page writable, B too, A restores it
 * read-only, B's store faults), hence the one lock; it is held only around mprotect and
 * the store, never while calling into the loader, so waiting for it cannot deadlock with
 * the loader's locks.
 *
 * dl_iterate_phdr takes only the loader's list lock, not the one dlopen holds while it
 * relocates: an object another thread is still relocating can be listed. Its RELRO pages
 * are still writable then; such an object is left alone (-1): the loader writes its
 * entries itself and makes them read-only after, and a page put back read-only early by
 * us would crash the loader. What a page allows is read from /proc/self/maps (with
 * open/read: no allocation), once per page and object pass. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "preload/trace/got_write.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static uintptr_t hex(const char **p)
{
	uintptr_t v = 0;
	for (;; (*p)++) {
		char ch = **p;
		if (ch >= '0' && ch <= '9')
			v = v * 16 + (uintptr_t)(ch - '0');
		else if (ch >= 'a' && ch <= 'f')
			v = v * 16 + (uintptr_t)(ch - 'a' + 10);
		else
			return v;
	}
}

/* The protection of the mapping holding addr, or -1 when unknown. */
static int page_prot(uintptr_t addr)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char buf[4096];
	size_t have = 0;
	int prot = -1;
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
		if (n <= 0)
			break;
		have += (size_t)n;
		buf[have] = 0;
		char *line = buf, *nl;
		while ((nl = memchr(line, '\n', have - (size_t)(line - buf)))) {
			const char *p = line;
			uintptr_t lo = hex(&p);
			uintptr_t hi = *p == '-' ? (p++, hex(&p)) : 0;
			if (addr >= lo && addr < hi && *p == ' ' && nl - p > 4) {
				prot = (p[1] == 'r' ? PROT_READ : 0) | (p[2] == 'w' ? PROT_WRITE : 0) |
				       (p[3] == 'x' ? PROT_EXEC : 0);
				goto out;
			}
			line = nl + 1;
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (have == sizeof buf - 1)
			have = 0; /* a line longer than the buffer: a path, not the range */
	}
out:
	close(fd);
	return prot;
}

int prof_got_write(struct prof_got_object *o, void **slot, void *value)
{
	uintptr_t pagesize = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t page = (uintptr_t)slot & ~(pagesize - 1);
	/* the loader protects only RELRO's whole pages: its last partial page stays writable */
	uintptr_t relro_end = o->relro_hi & ~(pagesize - 1);
	int relro = (uintptr_t)slot >= o->relro_lo && page + pagesize <= relro_end;
	int rc = 0, err = 0;
	pthread_mutex_lock(&lock);
	if (relro && o->page != page) {
		o->page = page;
		o->prot = page_prot(page);
		if (o->prot < 0)
			o->prot = PROT_READ; /* no /proc: what the loader leaves RELRO as */
	}
	if (!relro) {
		__atomic_store_n(slot, value, __ATOMIC_RELEASE);
	} else if (o->prot & PROT_WRITE) {
		rc = PROF_GOT_LATER;
	} else if (mprotect((void *)page, pagesize, o->prot | PROT_WRITE)) {
		err = errno;
		rc = PROF_GOT_REFUSED;
	} else {
		__atomic_store_n(slot, value, __ATOMIC_RELEASE);
		mprotect((void *)page, pagesize, o->prot);
	}
	pthread_mutex_unlock(&lock);
	if (rc == PROF_GOT_REFUSED)
		errno = err;
	return rc;
}

void prof_got_write_after_fork(void)
{
	pthread_mutex_init(&lock, 0);
}
