/* MPI's communication calls: hooks that give each call's event its bytes, datatype,
 * communicator size and peer (see mpi.c). */
#ifndef PROF_PRELOAD_MPI_H
#define PROF_PRELOAD_MPI_H

#include <stdint.h>

/* prof_trace_hooks, by the call's argument layout */
uint32_t prof_mpi_p2p_hook(const uint64_t *args);       /* buf, count, type, peer, tag, comm */
uint32_t prof_mpi_bcast_hook(const uint64_t *args);     /* buf, count, type, root, comm */
uint32_t prof_mpi_allreduce_hook(const uint64_t *args); /* s, r, count, type, op, comm */
uint32_t prof_mpi_reduce_hook(const uint64_t *args);    /* s, r, count, type, op, root, comm */
/* s, scount, stype, r, rcount, rtype, ...: the root and comm on the stack */
uint32_t prof_mpi_allgather_hook(const uint64_t *args); /* also MPI_Alltoall */
uint32_t prof_mpi_gather_hook(const uint64_t *args);
uint32_t prof_mpi_scatter_hook(const uint64_t *args);
uint32_t prof_mpi_sendrecv_hook(const uint64_t *args);  /* s, count, type, dest, ... */
uint32_t prof_mpi_barrier_hook(const uint64_t *args);   /* comm */

#endif
