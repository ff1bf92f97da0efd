/* Multigrid-like V-cycle (NAS MG): Jacobi smoothing with a 7-point stencil, residual,
 * restriction to a coarser grid and prolongation back, over LEVELS levels of a 3-D grid
 * of NX*NX*(T*PLANES) points (each coarser level halves every dimension). Every level is
 * split into T blocks of whole z-planes, thread i owning block i on each level.
 *
 * Sharing by construction: the stencils read one plane beyond each end of the block,
 * restriction reads the fine plane just below the block, prolongation the coarse plane
 * just above it; all of these belong to i-1 or i+1. Expected: the neighbour band.
 * Usage: mg THREADS [NX [REPEAT]]   (NX a multiple of 32; PLANES planes per thread) */
#include "common.h"

#define LEVELS 3
#define PLANES 4 /* z-planes per thread on the finest level: 2, then 1, below */
#define CYCLES 2 /* V-cycles per repeat */

struct level {
    long n, plane, planes; /* x and y edge, points per plane, planes per thread */
    double *u, *f, *tmp;   /* solution, right-hand side, scratch */
};

static int T;
static long nx;
static struct level lv[LEVELS];
static pthread_barrier_t bar;

static double at(const struct level *l, const double *a, long x, long y, long z)
{
    long zs = l->planes * T;
    if (x < 0 || y < 0 || z < 0 || x >= l->n || y >= l->n || z >= zs)
        return 0; /* zero Dirichlet boundary */
    return a[z * l->plane + y * l->n + x];
}

/* Weighted Jacobi sweep on this thread's planes: tmp = u + w (f - A u) / 6, then u =
 * tmp after a barrier. With `resid`, tmp = f - A u instead (the residual). */
static void sweep(struct level *l, int id, int resid)
{
    long z0 = id * l->planes, n = l->n;
    for (long z = z0; z < z0 + l->planes; z++)
        for (long y = 0; y < n; y++)
            for (long x = 0; x < n; x++) {
                double c = at(l, l->u, x, y, z);
                double nb = at(l, l->u, x - 1, y, z) + at(l, l->u, x + 1, y, z) +
                            at(l, l->u, x, y - 1, z) + at(l, l->u, x, y + 1, z) +
                            at(l, l->u, x, y, z - 1) + at(l, l->u, x, y, z + 1);
                double res = l->f[z * l->plane + y * n + x] - (6 * c - nb);
                l->tmp[z * l->plane + y * n + x] = resid ? res : c + 0.8 * res / 6;
            }
    pthread_barrier_wait(&bar);
    if (!resid)
        for (long i = z0 * l->plane; i < (z0 + l->planes) * l->plane; i++)
            l->u[i] = l->tmp[i];
    pthread_barrier_wait(&bar);
}

/* Coarse f = fine residual at the even points, weighted with the fine planes around. */
static void restrict_to(struct level *fine, struct level *coarse, int id)
{
    long z0 = id * coarse->planes, n = coarse->n;
    for (long z = z0; z < z0 + coarse->planes; z++)
        for (long y = 0; y < n; y++)
            for (long x = 0; x < n; x++) {
                double s = 0.5 * at(fine, fine->tmp, 2 * x, 2 * y, 2 * z) +
                           0.25 * (at(fine, fine->tmp, 2 * x, 2 * y, 2 * z - 1) +
                                   at(fine, fine->tmp, 2 * x, 2 * y, 2 * z + 1));
                coarse->f[z * coarse->plane + y * n + x] = 4 * s;
                coarse->u[z * coarse->plane + y * n + x] = 0;
            }
    pthread_barrier_wait(&bar);
}

/* Fine u += the coarse correction, interpolated in z between the two coarse planes. */
static void prolong(struct level *coarse, struct level *fine, int id)
{
    long z0 = id * fine->planes, n = fine->n;
    for (long z = z0; z < z0 + fine->planes; z++)
        for (long y = 0; y < n; y++)
            for (long x = 0; x < n; x++) {
                double e = 0.5 * (at(coarse, coarse->u, x / 2, y / 2, z / 2) +
                                  at(coarse, coarse->u, x / 2, y / 2, (z + 1) / 2));
                fine->u[z * fine->plane + y * n + x] += e;
            }
    pthread_barrier_wait(&bar);
}

static void vcycle(int id, int k)
{
    sweep(&lv[k], id, 0);
    if (k + 1 == LEVELS) {
        sweep(&lv[k], id, 0);
        return;
    }
    sweep(&lv[k], id, 1);
    restrict_to(&lv[k], &lv[k + 1], id);
    vcycle(id, k + 1);
    prolong(&lv[k + 1], &lv[k], id);
    sweep(&lv[k], id, 0);
}

static void *work(void *arg)
{
    int id = (int)(intptr_t)arg;
    struct level *l = &lv[0];
    long i0 = id * l->planes * l->plane, i1 = i0 + l->planes * l->plane;
    uint64_t sum = 0;
    for (long i = i0; i < i1; i++) {
        l->u[i] = 0;
        l->f[i] = (double)(mix((uint64_t)i) % 1000) / 1000.0;
    }
    pthread_barrier_wait(&bar);
    for (int c = 0; c < CYCLES; c++)
        vcycle(id, 0);
    for (long i = i0; i < i1; i++) {
        uint64_t bits;
        memcpy(&bits, &l->u[i], sizeof bits);
        sum += mix(bits + (uint64_t)i);
    }
    return (void *)(uintptr_t)sum;
}

int main(int argc, char **argv)
{
    parse_args(argc, argv, &T, &nx, 32);
    if (nx % (8 << (LEVELS - 1))) {
        fprintf(stderr, "%s: NX must be a multiple of %d (whole cache lines on every level)\n",
                argv[0], 8 << (LEVELS - 1));
        return 2;
    }
    for (int k = 0; k < LEVELS; k++) {
        struct level *l = &lv[k];
        l->n = nx >> k;
        l->plane = l->n * l->n;
        l->planes = PLANES >> k;
        size_t bytes = sizeof(double) * (size_t)(l->plane * l->planes * T);
        l->u = xalloc(bytes);
        l->f = xalloc(bytes);
        l->tmp = xalloc(bytes);
    }
    pthread_barrier_init(&bar, NULL, (unsigned)T);
    print_checksum("mg", run_threads(T, work));
    return 0;
}
