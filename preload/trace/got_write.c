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
 * us would crash the loader. What an object's RELRO allows is read from /proc/self/maps
 * (with open/read: no allocation) once per object pass: the loader protects the whole
 * range in one call, so its pages agree (a map of libtorch's size took ~2 ms to read,
 * once per page before).
 *
 * A page made writable stays so until a write to another page or the end of the pass
 * (prof_got_write_done): libtorch has thousands of patched entries on a few dozen pages,
 * and two mprotect calls per entry were a tenth of what libprof added to `import torch`.
 * Which page is open is the lock's state, not an object's: two passes sharing a page
 * see it alike, and it is put back before any map is read. An object unloaded while its
 * pass runs is not handled (got.c), as before; its window is now the pass, not a slot. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "preload/trace/got_write.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* the RELRO page made writable by a write and not put back yet (0: none), and what it
 * allowed before; under the lock */
static uintptr_t open_page;
static int open_prot;

static void put_back_open_page(void)
{
	if (open_page)
		mprotect((void *)open_page, (size_t)sysconf(_SC_PAGESIZE), open_prot);
	open_page = 0;
}

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
	if (relro && !o->prot_known) {
		put_back_open_page(); /* the map shows what the loader left, not our opening */
		o->prot = page_prot(page);
		if (o->prot < 0)
			o->prot = PROT_READ; /* no /proc: what the loader leaves RELRO as */
		o->prot_known = 1;
	}
	if (!relro || page == open_page) {
		__atomic_store_n(slot, value, __ATOMIC_RELEASE);
	} else if (o->prot & PROT_WRITE) {
		rc = PROF_GOT_LATER;
	} else {
		put_back_open_page();
		if (mprotect((void *)page, pagesize, o->prot | PROT_WRITE)) {
			err = errno;
			rc = PROF_GOT_REFUSED;
		} else {
			open_page = page;
			open_prot = o->prot;
			__atomic_store_n(slot, value, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&lock);
	if (rc == PROF_GOT_REFUSED)
		errno = err;
	return rc;
}

void prof_got_write_done(void)
{
	pthread_mutex_lock(&lock);
	put_back_open_page();
	pthread_mutex_unlock(&lock);
}

void prof_got_write_after_fork(void)
{
	pthread_mutex_init(&lock, 0);
}
