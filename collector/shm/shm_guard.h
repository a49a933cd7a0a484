/* A process can shrink its segment's file (ftruncate) while the collector has it mapped:
 * the collector's next read there would die of SIGBUS. The mapped ranges are registered
 * here; a SIGBUS inside one puts zero pages in place of the lost ones (the read then
 * sees zeros, which the checks refuse) and raises the segment's flag, so the collector
 * quarantines it. A SIGBUS anywhere else still kills, as before. */
#ifndef PROF_COLLECTOR_SHM_GUARD_H
#define PROF_COLLECTOR_SHM_GUARD_H

#include <stddef.h>

/* Registers [base, base + size); *hit is set to 1 on a fault there. 0 or -1. */
int shm_guard_add(void *base, size_t size, volatile int *hit);
void shm_guard_remove(void *base);

#endif
