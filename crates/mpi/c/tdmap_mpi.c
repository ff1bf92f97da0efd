/*
 * libtdmap_mpi: a PMPI interposition library that counts, per (sender, receiver)
 * world-rank pair, the bytes and messages an MPI program sends. Preload it
 * (`tdmap comm -- mpirun ...` does) or link it before libmpi. It is built once per MPI
 * (libtdmap_mpi_openmpi.so, libtdmap_mpi_mpich.so): their ABIs differ.
 *
 * What is counted, always at the sender, in world ranks (any communicator is translated
 * with PMPI_Group_translate_ranks, cached as an attribute of the communicator):
 *
 * - Point-to-point, exactly: MPI_Send, Isend, Ssend, Issend, Bsend, Ibsend, Rsend,
 *   Irsend, the send half of Sendrecv and Sendrecv_replace, and the persistent sends
 *   (Send_init, Ssend_init, Bsend_init, Rsend_init) once per MPI_Start/Startall.
 *   Bytes = count x PMPI_Type_size(type). Sends to MPI_PROC_NULL are not counted.
 * - Collectives, charged by a model: the point-to-point pattern of the usual algorithm
 *   (an MPI library may choose another; the volumes are then approximate). With p ranks
 *   in the communicator, n bytes per block, vr = (rank - root) mod p:
 *     Bcast, Ibcast          binomial tree: vr sends n to vr + m for each power of two
 *                            m below vr's lowest set bit (all m for the root), vr+m < p
 *     Reduce, Ireduce        the same tree upwards: vr != 0 sends n to vr - lowbit(vr)
 *     Allreduce, Iallreduce  recursive doubling (MPICH's): with q the largest power of
 *                            two <= p and e = p - q, ranks r < 2e that are even send n to
 *                            r + 1 first; the q remaining ranks exchange n with the
 *                            partner at distance 1, 2, 4 ... in their own numbering;
 *                            then odd r < 2e send the result n back to r - 1
 *     Alltoall, Ialltoall    pairwise: n to every other rank
 *     Alltoallv              sendcounts[j] x size to every other rank j
 *     Allgather              ring: p - 1 messages of n to rank + 1
 *     Allgatherv             ring: rank + 1 gets every block but its own
 *     Gather(v)              linear: each non-root sends its block to the root
 *     Scatter(v)             linear: the root sends each non-root its block
 *   Barrier, scans, reduce-scatter, neighbourhood collectives and collectives on
 *   inter-communicators are not charged. A rank's messages to itself count only for
 *   point-to-point sends it makes to itself.
 * - Fortran (mpif.h and `use mpi`, symbols `mpi_send_` and kin; not `use mpi_f08`, not
 *   the large-count `_c` forms in either language): the same calls are
 *   wrapped, since an MPI's Fortran layer may call PMPI_ directly; a Fortran wrapper
 *   counts and then calls the MPI's own `pmpi_*_`, and a C wrapper entered from inside it
 *   does not count again (a per-thread depth). Open MPI's Fortran layer calls PMPI_
 *   directly; MPICH's calls the C MPI_ functions.
 *
 * Threads: counters and times are atomic; the persistent-request table and the
 * communicator cache assume one thread at a time calls MPI (up to MPI_THREAD_SERIALIZED).
 *
 * Time: every wrapper times its own work (translation, type size, counting) with
 * CLOCK_MONOTONIC, not the MPI call it wraps; the row file reports it (`lib_ns`) with the
 * number of calls counted and the time taken to write the row.
 *
 * Output: at MPI_Finalize each rank writes $TDMAP_MPI_DIR/rank-<world rank>.row (default
 * directory tdmap-mpi-rows), text, as docs/formats.md describes: the run's id
 * ($TDMAP_MPI_RUN, else rank 0's host, pid and time, broadcast), the world size, and one
 * line per destination with bytes and messages. `tdmap comm` assembles the rows.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if defined(OPEN_MPI)
#define TDM_MPI "openmpi"
#elif defined(MPICH_VERSION)
#define TDM_MPI "mpich"
#else
#define TDM_MPI "unknown"
#endif

enum { P2P = 0, COLL = 1 };

static int world_size = -1, world_rank = -1;
/* [kind][dest][bytes, messages] */
static uint64_t *counts;
static uint64_t lib_ns, calls;
static int keyval = MPI_KEYVAL_INVALID;
static int finished;
static __thread int depth;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Counts at the first call after MPI_Init (C or Fortran, whichever ran). */
static int ready(void)
{
    if (counts)
        return 1;
    int init = 0, fin = 0;
    PMPI_Initialized(&init);
    PMPI_Finalized(&fin);
    if (!init || fin)
        return 0;
    PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    uint64_t *c = calloc((size_t)world_size * 4, sizeof *c);
    if (!c)
        return 0;
    counts = c;
    return 1;
}

static void charge(int kind, int wdest, uint64_t bytes)
{
    if (wdest < 0 || wdest >= world_size)
        return;
    uint64_t *c = counts + ((size_t)kind * world_size + wdest) * 2;
    __atomic_fetch_add(&c[0], bytes, __ATOMIC_RELAXED);
    __atomic_fetch_add(&c[1], 1, __ATOMIC_RELAXED);
}

/* A communicator's ranks in world ranks: an attribute, freed with the communicator. */
struct ctx {
    int size, rank, inter;
    int world[];
};

static int drop_ctx(MPI_Comm comm, int key, void *val, void *extra)
{
    (void)comm, (void)key, (void)extra;
    free(val);
    return MPI_SUCCESS;
}

static struct ctx *ctx_of(MPI_Comm comm)
{
    if (keyval == MPI_KEYVAL_INVALID
        && PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, drop_ctx, &keyval, NULL) != MPI_SUCCESS)
        return NULL;
    struct ctx *c = NULL;
    int found = 0;
    PMPI_Comm_get_attr(comm, keyval, &c, &found);
    if (found)
        return c;
    int inter = 0, size = 0, rank = 0;
    PMPI_Comm_test_inter(comm, &inter);
    MPI_Group group, world;
    if (inter) {
        PMPI_Comm_remote_group(comm, &group);
    } else {
        PMPI_Comm_group(comm, &group);
    }
    PMPI_Group_size(group, &size);
    PMPI_Comm_rank(comm, &rank);
    c = malloc(sizeof *c + (size_t)size * sizeof(int));
    if (!c)
        return NULL;
    c->size = size, c->rank = rank, c->inter = inter;
    int *ranks = malloc((size_t)size * sizeof(int));
    for (int i = 0; ranks && i < size; i++)
        ranks[i] = i;
    PMPI_Comm_group(MPI_COMM_WORLD, &world);
    if (ranks)
        PMPI_Group_translate_ranks(group, size, ranks, world, c->world);
    free(ranks);
    PMPI_Group_free(&group);
    PMPI_Group_free(&world);
    PMPI_Comm_set_attr(comm, keyval, c);
    return c;
}

static uint64_t type_size(MPI_Datatype t)
{
    int s = 0;
    if (t == MPI_DATATYPE_NULL || PMPI_Type_size(t, &s) != MPI_SUCCESS)
        return 0;
    return (uint64_t)s;
}

/* World rank of rank r of comm; world itself needs no table. */
static int to_world(MPI_Comm comm, struct ctx *c, int r)
{
    if (comm == MPI_COMM_WORLD)
        return r;
    return c && r >= 0 && r < c->size ? c->world[r] : -1;
}

static void p2p(MPI_Comm comm, int dest, int count, MPI_Datatype type)
{
    if (dest == MPI_PROC_NULL || dest < 0 || !ready())
        return;
    struct ctx *c = comm == MPI_COMM_WORLD ? NULL : ctx_of(comm);
    charge(P2P, to_world(comm, c, dest), (uint64_t)count * type_size(type));
}

/* The communicator of a collective: size, own rank and world table; 0 if not charged. */
struct coll {
    MPI_Comm comm;
    struct ctx *c;
    int p, r;
};

static int coll_of(MPI_Comm comm, struct coll *k)
{
    if (!ready())
        return 0;
    k->comm = comm;
    if (comm == MPI_COMM_WORLD) {
        k->c = NULL, k->p = world_size, k->r = world_rank;
        return 1;
    }
    k->c = ctx_of(comm);
    if (!k->c || k->c->inter)
        return 0;
    k->p = k->c->size, k->r = k->c->rank;
    return 1;
}

static void coll_send(struct coll *k, int to, uint64_t bytes)
{
    if (to != k->r)
        charge(COLL, to_world(k->comm, k->c, to), bytes);
}

static int lowbit(int v) { return v & -v; }

static void m_bcast(MPI_Comm comm, int root, uint64_t n)
{
    struct coll k;
    if (!coll_of(comm, &k) || root < 0 || root >= k.p)
        return;
    int vr = (k.r - root + k.p) % k.p;
    for (int m = 1; m < k.p && (vr == 0 || m < lowbit(vr)); m <<= 1)
        if (vr + m < k.p)
            coll_send(&k, (vr + m + root) % k.p, n);
}

static void m_reduce(MPI_Comm comm, int root, uint64_t n)
{
    struct coll k;
    if (!coll_of(comm, &k) || root < 0 || root >= k.p)
        return;
    int vr = (k.r - root + k.p) % k.p;
    if (vr != 0)
        coll_send(&k, (vr - lowbit(vr) + root) % k.p, n);
}

static void m_allreduce(MPI_Comm comm, uint64_t n)
{
    struct coll k;
    if (!coll_of(comm, &k))
        return;
    int q = 1;
    while (q * 2 <= k.p)
        q *= 2;
    int e = k.p - q, r = k.r, nr;
    if (r < 2 * e) {
        if (r % 2 == 0) {
            coll_send(&k, r + 1, n);
            return; /* idle until the result comes back */
        }
        nr = r / 2;
    } else {
        nr = r - e;
    }
    for (int m = 1; m < q; m <<= 1) {
        int pn = nr ^ m;
        coll_send(&k, pn < e ? pn * 2 + 1 : pn + e, n);
    }
    if (r < 2 * e)
        coll_send(&k, r - 1, n);
}

static void m_alltoall(MPI_Comm comm, uint64_t n)
{
    struct coll k;
    if (!coll_of(comm, &k))
        return;
    for (int j = 0; j < k.p; j++)
        coll_send(&k, j, n);
}

static void m_alltoallv(MPI_Comm comm, const int *counts_, MPI_Datatype type)
{
    struct coll k;
    if (!coll_of(comm, &k) || !counts_)
        return;
    uint64_t s = type_size(type);
    for (int j = 0; j < k.p; j++)
        coll_send(&k, j, (uint64_t)counts_[j] * s);
}

static void m_allgather(MPI_Comm comm, uint64_t n)
{
    struct coll k;
    if (!coll_of(comm, &k))
        return;
    for (int s = 0; s + 1 < k.p; s++)
        coll_send(&k, (k.r + 1) % k.p, n);
}

static void m_allgatherv(MPI_Comm comm, const int *rcounts, MPI_Datatype type)
{
    struct coll k;
    if (!coll_of(comm, &k) || !rcounts)
        return;
    uint64_t s = type_size(type);
    for (int step = 0; step + 1 < k.p; step++)
        coll_send(&k, (k.r + 1) % k.p, (uint64_t)rcounts[(k.r - step + k.p) % k.p] * s);
}

static void m_gather(MPI_Comm comm, int root, uint64_t n)
{
    struct coll k;
    if (coll_of(comm, &k) && root >= 0 && root < k.p && k.r != root)
        coll_send(&k, root, n);
}

/* counts_ NULL: n bytes to each; else counts_[j] x size of type. */
static void m_scatter(MPI_Comm comm, int root, uint64_t n, const int *counts_, MPI_Datatype type)
{
    struct coll k;
    if (!coll_of(comm, &k) || k.r != root)
        return;
    uint64_t s = counts_ ? type_size(type) : 0;
    for (int j = 0; j < k.p; j++)
        coll_send(&k, j, counts_ ? (uint64_t)counts_[j] * s : n);
}

/* Persistent sends: the request's destination and bytes, charged at each start. */
#define PERSIST 4096
static struct {
    MPI_Request req;
    int wdest;
    uint64_t bytes;
} persist[PERSIST];
static int npersist;

static void persist_add(MPI_Request req, MPI_Comm comm, int dest, int count, MPI_Datatype type)
{
    if (dest == MPI_PROC_NULL || !ready() || npersist == PERSIST)
        return;
    struct ctx *c = comm == MPI_COMM_WORLD ? NULL : ctx_of(comm);
    persist[npersist].req = req;
    persist[npersist].wdest = to_world(comm, c, dest);
    persist[npersist].bytes = (uint64_t)count * type_size(type);
    npersist++;
}

static void persist_start(MPI_Request req)
{
    for (int i = 0; i < npersist; i++)
        if (persist[i].req == req) {
            charge(P2P, persist[i].wdest, persist[i].bytes);
            return;
        }
}

static void persist_drop(MPI_Request req)
{
    for (int i = 0; i < npersist; i++)
        if (persist[i].req == req) {
            persist[i] = persist[--npersist];
            return;
        }
}

/* COUNT: charge a call (not when entered from inside another wrapper), timed. CALL: the
 * wrapped MPI call, with nested wrappers silenced. */
#define COUNT(stmt)                                                  \
    do {                                                             \
        if (!depth) {                                                \
            uint64_t t0_ = now_ns();                                 \
            stmt;                                                    \
            __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);         \
            __atomic_fetch_add(&lib_ns, now_ns() - t0_, __ATOMIC_RELAXED); \
        }                                                            \
    } while (0)
#define CALL(expr)                \
    ({                            \
        depth++;                  \
        int rc_ = (expr);         \
        depth--;                  \
        rc_;                      \
    })

/* ---- Writing the row at MPI_Finalize ---- */

static void write_row(void)
{
    if (finished)
        return;
    finished = 1;
    uint64_t t0 = now_ns();
    ready();
    if (!counts)
        return;
    char run[128] = {0};
    const char *env = getenv("TDMAP_MPI_RUN");
    if (env && *env) {
        snprintf(run, sizeof run, "%s", env);
    } else {
        if (world_rank == 0) {
            char host[64] = {0};
            gethostname(host, sizeof host - 1);
            snprintf(run, sizeof run, "%s-%d-%llu", host, (int)getpid(),
                     (unsigned long long)time(NULL));
        }
        PMPI_Bcast(run, sizeof run, MPI_CHAR, 0, MPI_COMM_WORLD);
        run[sizeof run - 1] = 0;
    }
    const char *dir = getenv("TDMAP_MPI_DIR");
    if (!dir || !*dir)
        dir = "tdmap-mpi-rows";
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "libtdmap_mpi: cannot create %s: %s\n", dir, strerror(errno));
        return;
    }
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/rank-%d.row", dir, world_rank);
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "libtdmap_mpi: cannot write %s: %s\n", tmp, strerror(errno));
        return;
    }
    fprintf(f, "tdmap-mpi-row 1\nrun %s\nmpi %s\nrank %d\nsize %d\ncalls %llu\nlib_ns %llu\n",
            run, TDM_MPI, world_rank, world_size, (unsigned long long)calls,
            (unsigned long long)lib_ns);
    static const char *kinds[] = {"p2p", "coll"};
    for (int k = 0; k < 2; k++)
        for (int d = 0; d < world_size; d++) {
            uint64_t *c = counts + ((size_t)k * world_size + d) * 2;
            if (c[1])
                fprintf(f, "%s %d %llu %llu\n", kinds[k], d, (unsigned long long)c[0],
                        (unsigned long long)c[1]);
        }
    fprintf(f, "finalize_ns %llu\nend\n", (unsigned long long)(now_ns() - t0));
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        fprintf(stderr, "libtdmap_mpi: cannot write %s: %s\n", path, strerror(errno));
}

int MPI_Finalize(void)
{
    if (!depth)
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
#define FCALL(name, ...)             \
    do {                             \
        ffn f_ = FNEXT(name);        \
        depth++;                     \
        f_(__VA_ARGS__);             \
        depth--;                     \
    } while (0)

#define COMM(f) PMPI_Comm_f2c(*(f))
#define TYPE(f) PMPI_Type_f2c(*(f))
typedef MPI_Fint F;

void mpi_finalize_(F *ierr)
{
    if (!depth)
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
