/* libtdmap_mpi's Fortran wrappers (mpif.h and `use mpi`). */
#include "tdmap_mpi.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- Fortran (mpif.h and `use mpi`: gfortran's lower case with one underscore) ----
 * Each counts, then calls the MPI's own profiling entry `pmpi_*_`, found once with
 * dlsym(RTLD_NEXT): the program's Fortran MPI library, whichever MPI it is. */

typedef void (*ffn)();

static ffn next_fn(ffn *slot, const char *name)
{
    if (!*slot) {
        *slot = (ffn)dlsym(RTLD_NEXT, name);
        if (!*slot) {
            fprintf(stderr, "libtdmap_mpi: %s not found: %s\n", name, dlerror());
            abort();
        }
    }
    return *slot;
}

#define FNEXT(name) ({ static ffn s_; next_fn(&s_, name); })
#define FCALL(name, ...)            \
    do {                            \
        ffn f_ = FNEXT(name);       \
        tdm_depth++;                \
        f_(__VA_ARGS__);            \
        tdm_depth--;                \
    } while (0)

#define COMM(f) PMPI_Comm_f2c(*(f))
#define TYPE(f) PMPI_Type_f2c(*(f))
typedef MPI_Fint F;

void mpi_finalize_(F *ierr)
{
    if (!tdm_depth)
        write_row();
    FCALL("pmpi_finalize_", ierr);
}

#define FSEND(lower)                                                                   \
    void mpi_##lower##_(void *buf, F *count, F *type, F *dest, F *tag, F *comm, F *ierr) \
    {                                                                                  \
        COUNT(p2p(COMM(comm), *dest, *count, TYPE(type)));                             \
        FCALL("pmpi_" #lower "_", buf, count, type, dest, tag, comm, ierr);            \
    }
#define FISEND(lower)                                                                  \
    void mpi_##lower##_(void *buf, F *count, F *type, F *dest, F *tag, F *comm, F *req, \
                        F *ierr)                                                       \
    {                                                                                  \
        COUNT(p2p(COMM(comm), *dest, *count, TYPE(type)));                             \
        FCALL("pmpi_" #lower "_", buf, count, type, dest, tag, comm, req, ierr);       \
    }

FSEND(send)
FSEND(ssend)
FSEND(bsend)
FSEND(rsend)
FISEND(isend)
FISEND(issend)
FISEND(ibsend)
FISEND(irsend)

#define FSEND_INIT(lower)                                                              \
    void mpi_##lower##_(void *buf, F *count, F *type, F *dest, F *tag, F *comm, F *req, \
                        F *ierr)                                                       \
    {                                                                                  \
        FCALL("pmpi_" #lower "_", buf, count, type, dest, tag, comm, req, ierr);       \
        if (*ierr == MPI_SUCCESS)                                                      \
            COUNT(persist_add(PMPI_Request_f2c(*req), COMM(comm), *dest, *count,       \
                              TYPE(type)));                                            \
    }

FSEND_INIT(send_init)
FSEND_INIT(ssend_init)
FSEND_INIT(bsend_init)
FSEND_INIT(rsend_init)

void mpi_start_(F *req, F *ierr)
{
    COUNT(persist_start(PMPI_Request_f2c(*req)));
    FCALL("pmpi_start_", req, ierr);
}

void mpi_startall_(F *n, F *reqs, F *ierr)
{
    COUNT(for (int i = 0; i < *n; i++) persist_start(PMPI_Request_f2c(reqs[i])));
    FCALL("pmpi_startall_", n, reqs, ierr);
}

void mpi_request_free_(F *req, F *ierr)
{
    COUNT(persist_drop(PMPI_Request_f2c(*req)));
    FCALL("pmpi_request_free_", req, ierr);
}

void mpi_sendrecv_(void *sbuf, F *scount, F *stype, F *dest, F *stag, void *rbuf, F *rcount,
                   F *rtype, F *src, F *rtag, F *comm, F *status, F *ierr)
{
    COUNT(p2p(COMM(comm), *dest, *scount, TYPE(stype)));
    FCALL("pmpi_sendrecv_", sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, src, rtag,
          comm, status, ierr);
}

void mpi_sendrecv_replace_(void *buf, F *count, F *type, F *dest, F *stag, F *src, F *rtag,
                           F *comm, F *status, F *ierr)
{
    COUNT(p2p(COMM(comm), *dest, *count, TYPE(type)));
    FCALL("pmpi_sendrecv_replace_", buf, count, type, dest, stag, src, rtag, comm, status,
          ierr);
}

void mpi_bcast_(void *buf, F *count, F *type, F *root, F *comm, F *ierr)
{
    COUNT(m_bcast(COMM(comm), *root, (uint64_t)*count * type_size(TYPE(type))));
    FCALL("pmpi_bcast_", buf, count, type, root, comm, ierr);
}

void mpi_reduce_(void *sbuf, void *rbuf, F *count, F *type, F *op, F *root, F *comm, F *ierr)
{
    COUNT(m_reduce(COMM(comm), *root, (uint64_t)*count * type_size(TYPE(type))));
    FCALL("pmpi_reduce_", sbuf, rbuf, count, type, op, root, comm, ierr);
}

void mpi_allreduce_(void *sbuf, void *rbuf, F *count, F *type, F *op, F *comm, F *ierr)
{
    COUNT(m_allreduce(COMM(comm), (uint64_t)*count * type_size(TYPE(type))));
    FCALL("pmpi_allreduce_", sbuf, rbuf, count, type, op, comm, ierr);
}

void mpi_alltoall_(void *sbuf, F *scount, F *stype, void *rbuf, F *rcount, F *rtype, F *comm,
                   F *ierr)
{
    COUNT(m_alltoall(COMM(comm), (uint64_t)*rcount * type_size(TYPE(rtype))));
    FCALL("pmpi_alltoall_", sbuf, scount, stype, rbuf, rcount, rtype, comm, ierr);
}

void mpi_alltoallv_(void *sbuf, F *scounts, F *sdispls, F *stype, void *rbuf, F *rcounts,
                    F *rdispls, F *rtype, F *comm, F *ierr)
{
    COUNT(m_alltoallv(COMM(comm), scounts, TYPE(stype)));
    FCALL("pmpi_alltoallv_", sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype,
          comm, ierr);
}

void mpi_allgather_(void *sbuf, F *scount, F *stype, void *rbuf, F *rcount, F *rtype, F *comm,
                    F *ierr)
{
    COUNT(m_allgather(COMM(comm), (uint64_t)*rcount * type_size(TYPE(rtype))));
    FCALL("pmpi_allgather_", sbuf, scount, stype, rbuf, rcount, rtype, comm, ierr);
}

void mpi_gather_(void *sbuf, F *scount, F *stype, void *rbuf, F *rcount, F *rtype, F *root,
                 F *comm, F *ierr)
{
    COUNT(m_gather(COMM(comm), *root, (uint64_t)*scount * type_size(TYPE(stype))));
    FCALL("pmpi_gather_", sbuf, scount, stype, rbuf, rcount, rtype, root, comm, ierr);
}

void mpi_scatter_(void *sbuf, F *scount, F *stype, void *rbuf, F *rcount, F *rtype, F *root,
                  F *comm, F *ierr)
{
    COUNT(m_scatter(COMM(comm), *root, (uint64_t)*scount * type_size(TYPE(stype)), NULL,
                    MPI_DATATYPE_NULL));
    FCALL("pmpi_scatter_", sbuf, scount, stype, rbuf, rcount, rtype, root, comm, ierr);
}
