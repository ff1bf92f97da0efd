/* libtdmap_mpi's internal interface: what the C and Fortran wrappers (c_calls.c,
 * fortran_calls.c) share with the counting core (tdmap_mpi.c, whose header comment
 * describes the library). Everything here is hidden: only the MPI_ and mpi_ wrappers
 * are exported. */
#ifndef TDMAP_MPI_H
#define TDMAP_MPI_H

#define _GNU_SOURCE
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#if defined(OPEN_MPI)
#define TDM_MPI "openmpi"
#elif defined(MPICH_VERSION)
#define TDM_MPI "mpich"
#else
#define TDM_MPI "unknown"
#endif

#pragma GCC visibility push(hidden)

/* Set while a wrapper runs the MPI call it wraps: wrappers entered from there (MPICH's
 * Fortran layer calls the C MPI_ functions) do not count again. */
extern __thread int tdm_depth;
/* Calls counted, and nanoseconds spent in the wrappers' own code. */
extern uint64_t tdm_lib_ns, tdm_calls;

uint64_t now_ns(void);
uint64_t type_size(MPI_Datatype t);
void p2p(MPI_Comm comm, int dest, int count, MPI_Datatype type);
void m_bcast(MPI_Comm comm, int root, uint64_t n);
void m_reduce(MPI_Comm comm, int root, uint64_t n);
void m_allreduce(MPI_Comm comm, uint64_t n);
void m_alltoall(MPI_Comm comm, uint64_t n);
void m_alltoallv(MPI_Comm comm, const int *counts_, MPI_Datatype type);
void m_allgather(MPI_Comm comm, uint64_t n);
void m_allgatherv(MPI_Comm comm, const int *rcounts, MPI_Datatype type);
void m_gather(MPI_Comm comm, int root, uint64_t n);
void m_scatter(MPI_Comm comm, int root, uint64_t n, const int *counts_, MPI_Datatype type);
void persist_add(MPI_Request req, MPI_Comm comm, int dest, int count, MPI_Datatype type);
void persist_start(MPI_Request req);
void persist_drop(MPI_Request req);
void write_row(void);

#pragma GCC visibility pop

/* COUNT: charge a call (not when entered from inside another wrapper), timed. CALL: the
 * wrapped MPI call, with nested wrappers silenced. */
#define COUNT(stmt)                                                           \
    do {                                                                      \
        if (!tdm_depth) {                                                     \
            uint64_t t0_ = now_ns();                                          \
            stmt;                                                             \
            __atomic_fetch_add(&tdm_calls, 1, __ATOMIC_RELAXED);              \
            __atomic_fetch_add(&tdm_lib_ns, now_ns() - t0_, __ATOMIC_RELAXED);\
        }                                                                     \
    } while (0)
#define CALL(expr)                                                            \
    ({                                                                        \
        tdm_depth++;                                                          \
        int rc_ = (expr);                                                     \
        tdm_depth--;                                                          \
        rc_;                                                                  \
    })

#endif
