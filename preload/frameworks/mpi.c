/* MPI calls as messages. The traced call's arguments come from its registers, so only
 * the first six are seen: a communicator passed on the stack (MPI_Reduce, MPI_Allgather)
 * leaves the size unknown. MPI_Datatype and MPI_Comm are pointers in Open MPI and ints in
 * MPICH; both come in one register, handed back to the library's own PMPI_Type_size,
 * PMPI_Type_get_name and PMPI_Comm_size as they came (an int's upper half is not read).
 * Only arguments the call itself requires to be valid on this rank are queried: MPI
 * ignores some (the send side of an in-place MPI_Allgather, of MPI_Scatter off its root),
 * and programs pass MPI_DATATYPE_NULL or leave them unset there; asking their size would
 * end the program (MPI_ERRORS_ARE_FATAL). A count of 0 is 0 bytes, asked nothing. The
 * hooked calls are legal only between MPI_Init and MPI_Finalize, and so are these
 * queries. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>

#include "preload/common/event.h"
#include "preload/core/state.h"
#include "preload/frameworks/mpi.h"
#include "preload/trace/trace.h"
#include "preload/wrap/dl.h"

typedef int (*type_size_fn)(uintptr_t type, int *size);
typedef int (*type_get_name_fn)(uintptr_t type, char *name, int *len);
typedef int (*comm_size_fn)(uintptr_t comm, int *size);

static type_size_fn type_size;
static uintptr_t open_mpi_type_null; /* &ompi_mpi_datatype_null, 0: not Open MPI */
#define MPICH_TYPE_NULL 0x0c000000u
/* MPI_IN_PLACE: (void *)1 in Open MPI, (void *)-1 in MPICH */
#define IN_PLACE(p) ((p) == 1 || (p) == UINT64_MAX)
static type_get_name_fn type_get_name;
static comm_size_fn comm_size;
static int resolved; /* 1: looked up (found or not) */

/* Datatypes named lately, per thread: a name is looked up and interned once. */
#define TYPE_CACHE 8
static __thread struct {
	uintptr_t type;
	const void *proc; /* the process segment whose string id it is */
	uint32_t id;      /* + 1; 0: it has no name */
} type_cache[TYPE_CACHE] __attribute__((tls_model("initial-exec")));
static __thread unsigned type_next __attribute__((tls_model("initial-exec")));

/* Open MPI's libmpi.so.40, MPICH's (and Intel MPI's) libmpi.so.12: loaded by the
 * program or, locally, by mpi4py */
static void *mpi_symbol(const char *name)
{
	static const char *const libs[] = {"libmpi.so.40", "libmpi.so.12", "libmpich.so.12"};
	void *f = prof_real_dlsym(RTLD_DEFAULT, name);
	for (size_t i = 0; !f && i < sizeof libs / sizeof *libs; i++) {
		void *h = dlopen(libs[i], RTLD_LAZY | RTLD_NOLOAD);
		if (h) {
			f = prof_real_dlsym(h, name);
			dlclose(h);
		}
	}
	return f;
}

static void resolve(void)
{
	if (__atomic_load_n(&resolved, __ATOMIC_ACQUIRE))
		return;
	__atomic_store_n(&type_size, (type_size_fn)mpi_symbol("PMPI_Type_size"), __ATOMIC_RELAXED);
	__atomic_store_n(&type_get_name, (type_get_name_fn)mpi_symbol("PMPI_Type_get_name"),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&comm_size, (comm_size_fn)mpi_symbol("PMPI_Comm_size"), __ATOMIC_RELAXED);
	__atomic_store_n(&open_mpi_type_null, (uintptr_t)mpi_symbol("ompi_mpi_datatype_null"),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&resolved, 1, __ATOMIC_RELEASE);
}

/* The datatype's size, always asked (a freed derived type's handle may come back as
 * another), and its name id + 1, from the thread's cache or the library. */
static int datatype(uintptr_t type, uint32_t *name)
{
	int size = -1, len = 0;
	char text[256];
	*name = 0;
	if (!type || type == open_mpi_type_null || (uint32_t)type == MPICH_TYPE_NULL)
		return -1; /* MPI_DATATYPE_NULL: an error to ask */
	if (!type_size || type_size(type, &size) || size < 0)
		return -1;
	for (unsigned i = 0; i < TYPE_CACHE; i++)
		if (type_cache[i].proc == prof_proc && type_cache[i].type == type) {
			*name = type_cache[i].id;
			return size;
		}
	if (type_get_name && !type_get_name(type, text, &len) && len > 0 &&
	    len < (int)sizeof text) {
		text[len] = 0;
		*name = prof_intern(text) + 1;
	}
	unsigned slot = type_next++ % TYPE_CACHE;
	type_cache[slot].type = type;
	type_cache[slot].proc = prof_proc;
	type_cache[slot].id = *name;
	return size;
}

/* count elements of type (have_type 0: a call that moves no data), between this rank
 * and peer (-1: none) in comm (have_comm 0: not seen) */
static uint32_t message(int count, uintptr_t type, int have_type, int peer, uintptr_t comm,
			int have_comm)
{
	struct prof_thread *t = &prof_thr;
	if (!prof_proc || t->busy || !__atomic_load_n(&prof_trace_on, __ATOMIC_RELAXED))
		return 0;
	t->busy++; /* what the library does for these queries is libprof's doing */
	resolve();
	uint64_t bytes = have_type ? PROF_COMM_UNKNOWN : 0;
	uint32_t name = 0;
	int size = 0;
	if (have_type && count == 0) {
		bytes = 0;
	} else if (have_type && count > 0) {
		int each = datatype(type, &name);
		if (each >= 0)
			bytes = (uint64_t)count * (uint64_t)each;
	}
	if (have_comm && (!comm_size || comm_size(comm, &size) || size < 0))
		size = 0;
	/* MPI_ANY_SOURCE and MPI_PROC_NULL are negative: no peer */
	prof_trace_set_comm(bytes, PROF_COMM_WHERE(size, peer >= 0 ? peer : -1), name);
	t->busy--;
	return 0;
}

uint32_t prof_mpi_p2p_hook(const uint64_t *a)
{
	return message((int)a[1], a[2], 1, (int)a[3], a[5], 1);
}

uint32_t prof_mpi_bcast_hook(const uint64_t *a)
{
	return message((int)a[1], a[2], 1, (int)a[3], a[4], 1);
}

uint32_t prof_mpi_allreduce_hook(const uint64_t *a)
{
	return message((int)a[2], a[3], 1, -1, a[5], 1);
}

uint32_t prof_mpi_reduce_hook(const uint64_t *a)
{
	return message((int)a[2], a[3], 1, (int)a[5], 0, 0);
}

/* the receive side, valid on every rank (the send side is not, in place) */
uint32_t prof_mpi_allgather_hook(const uint64_t *a)
{
	return message((int)a[4], a[5], 1, -1, 0, 0);
}

/* the send side, but at an in-place root the receive side */
uint32_t prof_mpi_gather_hook(const uint64_t *a)
{
	return IN_PLACE(a[0]) ? message((int)a[4], a[5], 1, -1, 0, 0)
			      : message((int)a[1], a[2], 1, -1, 0, 0);
}

/* the receive side, but at an in-place root the send side */
uint32_t prof_mpi_scatter_hook(const uint64_t *a)
{
	return IN_PLACE(a[3]) ? message((int)a[1], a[2], 1, -1, 0, 0)
			      : message((int)a[4], a[5], 1, -1, 0, 0);
}

uint32_t prof_mpi_sendrecv_hook(const uint64_t *a)
{
	return message((int)a[1], a[2], 1, (int)a[3], 0, 0);
}

uint32_t prof_mpi_barrier_hook(const uint64_t *a)
{
	return message(0, 0, 0, -1, a[0], 1);
}
