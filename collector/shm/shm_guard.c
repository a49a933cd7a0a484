/* SIGBUS in a shrunk segment (shm_guard.h). The ranges are read by the handler on the
 * thread that faulted; they only change on the drain thread between its reads of shared
 * memory, never while one is faulting. */
#define _GNU_SOURCE
#include "collector/shm/shm_guard.h"

#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct guarded {
	char *base;
	size_t size;
	volatile int *hit;
};

static struct guarded *ranges;
static size_t nranges, cap;
static int installed;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	char *addr = si->si_addr;
	for (size_t i = 0; i < nranges; i++) {
		if (addr < ranges[i].base || addr >= ranges[i].base + ranges[i].size)
			continue;
		uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
		void *at = (void *)((uintptr_t)addr & ~(page - 1));
		if (mmap(at, page, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0) != MAP_FAILED) {
			*ranges[i].hit = 1;
			return; /* the read is made again, of zeros */
		}
		break;
	}
	signal(sig, SIG_DFL); /* not ours: dies of it on return, as without the guard */
}

int shm_guard_add(void *base, size_t size, volatile int *hit)
{
	if (!installed) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = on_sigbus;
		sa.sa_flags = SA_SIGINFO | SA_NODEFER;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGBUS, &sa, NULL))
			return -1;
		installed = 1;
	}
	if (nranges == cap) {
		size_t n = cap ? cap * 2 : 16;
		struct guarded *r = realloc(ranges, n * sizeof *r);
		if (!r)
			return -1;
		ranges = r;
		cap = n;
	}
	ranges[nranges++] = (struct guarded){base, size, hit};
	return 0;
}

void shm_guard_remove(void *base)
{
	for (size_t i = 0; i < nranges; i++)
		if (ranges[i].base == base) {
			ranges[i] = ranges[--nranges];
			return;
		}
}
