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
 *
 * Files: this one counts (state, communicator cache, the collective model, persistent
 * requests, the row); c_calls.c and fortran_calls.c hold the wrappers; tdmap_mpi.h is
 * what they share.
 */
#include "tdmap_mpi.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { P2P = 0, COLL = 1 };

static int world_size = -1, world_rank = -1;
/* [kind][dest][bytes, messages] */
static uint64_t *counts;
uint64_t tdm_lib_ns, tdm_calls;
static int keyval = MPI_KEYVAL_INVALID;
static int finished;
__thread int tdm_depth;

uint64_t now_ns(void)
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

uint64_t type_size(MPI_Datatype t)
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

void p2p(MPI_Comm comm, int dest, int count, MPI_Datatype type)
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

void m_bcast(MPI_Comm comm, int root, uint64_t n)
{
    struct coll k;
    if (!coll_of(comm, &k) || root < 0 || root >= k.p)
        return;
    int vr = (k.r - root + k.p) % k.p;
    for (int m = 1; m < k.p && (vr == 0 || m < lowbit(vr)); m <<= 1)
        if (vr + m < k.p)
            coll_send(&k, (vr + m + root) % k.p, n);
}

void m_reduce(MPI_Comm comm, int root, uint64_t n)
{
    struct coll k;
    if (!coll_of(comm, &k) || root < 0 || root >= k.p)
        return;
    int vr = (k.r - root + k.p) % k.p;
    if (vr != 0)
        coll_send(&k, (vr - lowbit(vr) + root) % k.p, n);
}

void m_allreduce(MPI_Comm comm, uint64_t n)
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

void m_alltoall(MPI_Comm comm, uint64_t n)
{
    struct coll k;
    if (!coll_of(comm, &k))
        return;
    for (int j = 0; j < k.p; j++)
        coll_send(&k, j, n);
}

void m_alltoallv(MPI_Comm comm, const int *counts_, MPI_Datatype type)
{
    struct coll k;
    if (!coll_of(comm, &k) || !counts_)
        return;
    uint64_t s = type_size(type);
    for (int j = 0; j < k.p; j++)
        coll_send(&k, j, (uint64_t)counts_[j] * s);
}

void m_allgather(MPI_Comm comm, uint64_t n)
{
    struct coll k;
    if (!coll_of(comm, &k))
        return;
    for (int s = 0; s + 1 < k.p; s++)
        coll_send(&k, (k.r + 1) % k.p, n);
}

void m_allgatherv(MPI_Comm comm, const int *rcounts, MPI_Datatype type)
{
    struct coll k;
    if (!coll_of(comm, &k) || !rcounts)
        return;
    uint64_t s = type_size(type);
    for (int step = 0; step + 1 < k.p; step++)
        coll_send(&k, (k.r + 1) % k.p, (uint64_t)rcounts[(k.r - step + k.p) % k.p] * s);
}

void m_gather(MPI_Comm comm, int root, uint64_t n)
{
    struct coll k;
    if (coll_of(comm, &k) && root >= 0 && root < k.p && k.r != root)
        coll_send(&k, root, n);
}

/* counts_ NULL: n bytes to each; else counts_[j] x size of type. */
void m_scatter(MPI_Comm comm, int root, uint64_t n, const int *counts_, MPI_Datatype type)
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

void persist_add(MPI_Request req, MPI_Comm comm, int dest, int count, MPI_Datatype type)
{
    if (dest == MPI_PROC_NULL || !ready() || npersist == PERSIST)
        return;
    struct ctx *c = comm == MPI_COMM_WORLD ? NULL : ctx_of(comm);
    persist[npersist].req = req;
    persist[npersist].wdest = to_world(comm, c, dest);
    persist[npersist].bytes = (uint64_t)count * type_size(type);
    npersist++;
}

void persist_start(MPI_Request req)
{
    for (int i = 0; i < npersist; i++)
        if (persist[i].req == req) {
            charge(P2P, persist[i].wdest, persist[i].bytes);
            return;
        }
}

void persist_drop(MPI_Request req)
{
    for (int i = 0; i < npersist; i++)
        if (persist[i].req == req) {
            persist[i] = persist[--npersist];
            return;
        }
}

/* ---- Writing the row at MPI_Finalize ---- */

void write_row(void)
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
            run, TDM_MPI, world_rank, world_size, (unsigned long long)tdm_calls,
            (unsigned long long)tdm_lib_ns);
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
