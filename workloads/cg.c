/* Conjugate-gradient-like solver (NAS CG's inner loop): CSR sparse matrix-vector
 * product, two dot products with a reduction, and axpy updates, on the 7-point
 * Laplacian (plus a shift, so it is positive definite) of an NX*NX*(T*PLANES) grid.
 * Rows are split into T blocks of whole z-planes; each thread builds and owns the CSR
 * rows, and the slices of x, r, p and q, of its block.
 *
 * Sharing by construction: the SpMV reads p one plane beyond each end of the block, so
 * thread i shares that plane with i-1 and i+1 (and the CSR row pointer at the block's
 * end); the reduction's partial sums (one line per thread, read by every thread) add the
 * same few lines to every pair. Expected: the neighbour band plus a constant.
 * Usage: cg THREADS [NX [REPEAT]]   (NX a multiple of 8; 4 planes per thread) */
#include "common.h"

#define PLANES 4 /* z-planes per thread */
#define ITERS 8  /* CG iterations per repeat */
#define NNZ 7    /* entries per row: missing neighbours at the faces are explicit zeros */

static int T;
static long nx, plane, rows;
static long *rowptr, *col;
static double *val, *x, *r, *p, *q;
static double partial[1024][LINE / sizeof(double)]; /* one line per thread */
static pthread_barrier_t bar;

/* Sum of every thread's partial, in thread order, so that all threads get the same
 * value bit for bit. */
static double reduce(int id, double mine)
{
    double s = 0;
    partial[id][0] = mine;
    pthread_barrier_wait(&bar);
    for (int t = 0; t < T; t++)
        s += partial[t][0];
    pthread_barrier_wait(&bar); /* nobody overwrites a partial still being summed */
    return s;
}

/* The 7-point row of grid point `row`; the face neighbours that fall outside the grid
 * become zero entries on the diagonal's column, so every row has NNZ entries. */
static void build_row(long row)
{
    static const long dx[6] = {-1, 1, 0, 0, 0, 0}, dy[6] = {0, 0, -1, 1, 0, 0},
                      dz[6] = {0, 0, 0, 0, -1, 1};
    long ix = row % nx, iy = (row / nx) % nx, iz = row / plane, k = row * NNZ;
    rowptr[row + 1] = k + NNZ;
    col[k] = row;
    val[k] = 6.5;
    for (int n = 0; n < 6; n++) {
        long jx = ix + dx[n], jy = iy + dy[n], jz = iz + dz[n];
        int in = jx >= 0 && jx < nx && jy >= 0 && jy < nx && jz >= 0 && jz < rows / plane;
        col[k + 1 + n] = in ? jx + jy * nx + jz * plane : row;
        val[k + 1 + n] = in ? -1.0 : 0.0;
    }
}

static void *work(void *arg)
{
    int id = (int)(intptr_t)arg;
    long r0 = id * PLANES * plane, r1 = r0 + PLANES * plane;
    uint64_t sum = 0;
    if (id == 0)
        rowptr[0] = 0;
    for (long i = r0; i < r1; i++) {
        build_row(i);
        x[i] = 0;
        r[i] = p[i] = (double)(mix((uint64_t)i) >> 11) / (double)(1ULL << 53);
    }
    double rho = 0;
    for (long i = r0; i < r1; i++)
        rho += r[i] * r[i];
    rho = reduce(id, rho);
    for (int it = 0; it < ITERS; it++) {
        double pq = 0;
        for (long i = r0; i < r1; i++) { /* q = A p */
            double s = 0;
            for (long k = rowptr[i]; k < rowptr[i + 1]; k++)
                s += val[k] * p[col[k]];
            q[i] = s;
            pq += p[i] * s;
        }
        double alpha = rho / reduce(id, pq), rr = 0;
        for (long i = r0; i < r1; i++) { /* x += alpha p, r -= alpha q */
            x[i] += alpha * p[i];
            r[i] -= alpha * q[i];
            rr += r[i] * r[i];
        }
        rr = reduce(id, rr);
        double beta = rr / rho;
        rho = rr;
        for (long i = r0; i < r1; i++) /* p = r + beta p */
            p[i] = r[i] + beta * p[i];
        pthread_barrier_wait(&bar); /* p complete before the next SpMV reads the halo */
    }
    for (long i = r0; i < r1; i++) {
        uint64_t bits;
        memcpy(&bits, &x[i], sizeof bits);
        sum += mix(bits + (uint64_t)i);
    }
    return (void *)(uintptr_t)sum;
}

int main(int argc, char **argv)
{
    parse_args(argc, argv, &T, &nx, 32);
    if (nx % 8) {
        fprintf(stderr, "%s: NX must be a multiple of 8 (whole cache lines per row)\n", argv[0]);
        return 2;
    }
    plane = nx * nx;
    rows = plane * PLANES * T;
    rowptr = xalloc(sizeof(long) * (size_t)(rows + 1));
    col = xalloc(sizeof(long) * (size_t)(rows * NNZ));
    val = xalloc(sizeof(double) * (size_t)(rows * NNZ));
    x = xalloc(sizeof(double) * (size_t)rows);
    r = xalloc(sizeof(double) * (size_t)rows);
    p = xalloc(sizeof(double) * (size_t)rows);
    q = xalloc(sizeof(double) * (size_t)rows);
    pthread_barrier_init(&bar, NULL, (unsigned)T);
    print_checksum("cg", run_threads(T, work));
    return 0;
}
