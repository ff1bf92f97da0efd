/* libtdmap_mpi's C wrappers: each counts (tdmap_mpi.c has the rules) and calls PMPI_. */
#include "tdmap_mpi.h"

int MPI_Finalize(void)
{
    if (!tdm_depth)
        write_row();
    return CALL(PMPI_Finalize());
}

/* ---- C point-to-point ---- */

#define SEND(NAME)                                                                      \
    int MPI_##NAME(const void *buf, int count, MPI_Datatype type, int dest, int tag,   \
                   MPI_Comm comm)                                                       \
    {                                                                                   \
        COUNT(p2p(comm, dest, count, type));                                            \
        return CALL(PMPI_##NAME(buf, count, type, dest, tag, comm));                    \
    }
#define ISEND(NAME)                                                                     \
    int MPI_##NAME(const void *buf, int count, MPI_Datatype type, int dest, int tag,   \
                   MPI_Comm comm, MPI_Request *req)                                     \
    {                                                                                   \
        COUNT(p2p(comm, dest, count, type));                                            \
        return CALL(PMPI_##NAME(buf, count, type, dest, tag, comm, req));               \
    }
#define SEND_INIT(NAME)                                                                 \
    int MPI_##NAME(const void *buf, int count, MPI_Datatype type, int dest, int tag,   \
                   MPI_Comm comm, MPI_Request *req)                                     \
    {                                                                                   \
        int rc = CALL(PMPI_##NAME(buf, count, type, dest, tag, comm, req));             \
        if (rc == MPI_SUCCESS)                                                          \
            COUNT(persist_add(*req, comm, dest, count, type));                          \
        return rc;                                                                      \
    }

SEND(Send)
SEND(Ssend)
SEND(Bsend)
SEND(Rsend)
ISEND(Isend)
ISEND(Issend)
ISEND(Ibsend)
ISEND(Irsend)
SEND_INIT(Send_init)
SEND_INIT(Ssend_init)
SEND_INIT(Bsend_init)
SEND_INIT(Rsend_init)

int MPI_Start(MPI_Request *req)
{
    COUNT(persist_start(*req));
    return CALL(PMPI_Start(req));
}

int MPI_Startall(int n, MPI_Request reqs[])
{
    COUNT(for (int i = 0; i < n; i++) persist_start(reqs[i]));
    return CALL(PMPI_Startall(n, reqs));
}

int MPI_Request_free(MPI_Request *req)
{
    COUNT(persist_drop(*req));
    return CALL(PMPI_Request_free(req));
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag,
                 void *rbuf, int rcount, MPI_Datatype rtype, int src, int rtag,
                 MPI_Comm comm, MPI_Status *status)
{
    COUNT(p2p(comm, dest, scount, stype));
    return CALL(PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, src,
                              rtag, comm, status));
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype type, int dest, int stag,
                         int src, int rtag, MPI_Comm comm, MPI_Status *status)
{
    COUNT(p2p(comm, dest, count, type));
    return CALL(PMPI_Sendrecv_replace(buf, count, type, dest, stag, src, rtag, comm, status));
}

/* ---- C collectives ---- */

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    COUNT(m_bcast(comm, root, (uint64_t)count * type_size(type)));
    return CALL(PMPI_Bcast(buf, count, type, root, comm));
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
               MPI_Request *req)
{
    COUNT(m_bcast(comm, root, (uint64_t)count * type_size(type)));
    return CALL(PMPI_Ibcast(buf, count, type, root, comm, req));
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
               int root, MPI_Comm comm)
{
    COUNT(m_reduce(comm, root, (uint64_t)count * type_size(type)));
    return CALL(PMPI_Reduce(sbuf, rbuf, count, type, op, root, comm));
}

int MPI_Ireduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                int root, MPI_Comm comm, MPI_Request *req)
{
    COUNT(m_reduce(comm, root, (uint64_t)count * type_size(type)));
    return CALL(PMPI_Ireduce(sbuf, rbuf, count, type, op, root, comm, req));
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm)
{
    COUNT(m_allreduce(comm, (uint64_t)count * type_size(type)));
    return CALL(PMPI_Allreduce(sbuf, rbuf, count, type, op, comm));
}

int MPI_Iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm, MPI_Request *req)
{
    COUNT(m_allreduce(comm, (uint64_t)count * type_size(type)));
    return CALL(PMPI_Iallreduce(sbuf, rbuf, count, type, op, comm, req));
}

/* Alltoall and Allgather charge the receive side: it is valid with MPI_IN_PLACE too. */
int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                 MPI_Datatype rtype, MPI_Comm comm)
{
    COUNT(m_alltoall(comm, (uint64_t)rcount * type_size(rtype)));
    return CALL(PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm));
}

int MPI_Ialltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                  MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
    COUNT(m_alltoall(comm, (uint64_t)rcount * type_size(rtype)));
    return CALL(PMPI_Ialltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm, req));
}

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[],
                  MPI_Datatype stype, void *rbuf, const int rcounts[], const int rdispls[],
                  MPI_Datatype rtype, MPI_Comm comm)
{
    if (sbuf == MPI_IN_PLACE)
        COUNT(m_alltoallv(comm, rcounts, rtype));
    else
        COUNT(m_alltoallv(comm, scounts, stype));
    return CALL(PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype,
                               comm));
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                  MPI_Datatype rtype, MPI_Comm comm)
{
    COUNT(m_allgather(comm, (uint64_t)rcount * type_size(rtype)));
    return CALL(PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm));
}

int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                   const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm)
{
    COUNT(m_allgatherv(comm, rcounts, rtype));
    return CALL(PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm));
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
               MPI_Datatype rtype, int root, MPI_Comm comm)
{
    COUNT(m_gather(comm, root, (uint64_t)scount * type_size(stype)));
    return CALL(PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm));
}

int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                const int rcounts[], const int displs[], MPI_Datatype rtype, int root,
                MPI_Comm comm)
{
    COUNT(m_gather(comm, root, (uint64_t)scount * type_size(stype)));
    return CALL(PMPI_Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm));
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                MPI_Datatype rtype, int root, MPI_Comm comm)
{
    COUNT(m_scatter(comm, root, (uint64_t)scount * type_size(stype), NULL, stype));
    return CALL(PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm));
}

int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[],
                 MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, int root,
                 MPI_Comm comm)
{
    COUNT(m_scatter(comm, root, 0, scounts, stype));
    return CALL(PMPI_Scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm));
}
