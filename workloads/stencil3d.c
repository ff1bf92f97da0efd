/* 3-D domain decomposition (MG-like): a 7-point stencil on a grid split over a
 * px*py*pz process grid. Local blocks are (8n)*n*n, so each face holds n*n cache lines
 * in every direction and all face neighbours share equally. Expected sharing: 1 between
 * face neighbours of the process grid (dims3 below, mirrored by the Rust test helper).
 * Usage: stencil3d THREADS [N] */
#include "common.h"

#define STEPS 4

static int T, P[3];
static long n, L[3], G[3];
static uint64_t *grid[2];
static pthread_barrier_t bar;

/* Splits T over three dimensions: each prime factor, largest first, multiplies the
 * currently smallest dimension (ties go to x, then y). */
static int largest_prime(int f)
{
    int big = 1;
    for (int q = 2; q <= f; q++)
        while (f % q == 0) {
            big = q;
            f /= q;
        }
    return big;
}

static void dims3(int t, int d[3])
{
    d[0] = d[1] = d[2] = 1;
    while (t > 1) {
        int p = largest_prime(t), k = 0;
        for (int j = 1; j < 3; j++)
            if (d[j] < d[k])
                k = j;
        d[k] *= p;
        t /= p;
    }
}

static inline long at(long x, long y, long z) { return (z * G[1] + y) * G[0] + x; }

static void *work(void *arg)
{
    int id = (int)(intptr_t)arg;
    long c[3] = {id % P[0], (id / P[0]) % P[1], id / (P[0] * P[1])};
    long lo[3], hi[3];
    uint64_t sum = 0;
    for (int k = 0; k < 3; k++) {
        lo[k] = c[k] * L[k];
        hi[k] = lo[k] + L[k];
    }
    for (long z = lo[2]; z < hi[2]; z++)
        for (long y = lo[1]; y < hi[1]; y++)
            for (long x = lo[0]; x < hi[0]; x++)
                grid[0][at(x, y, z)] = mix((uint64_t)at(x, y, z));
    pthread_barrier_wait(&bar);
    for (int s = 0; s < STEPS; s++) {
        const uint64_t *a = grid[s & 1];
        uint64_t *b = grid[(s + 1) & 1];
        for (long z = lo[2]; z < hi[2]; z++)
            for (long y = lo[1]; y < hi[1]; y++)
                for (long x = lo[0]; x < hi[0]; x++) {
                    uint64_t v = 6 * a[at(x, y, z)];
                    v += a[at(x > 0 ? x - 1 : x, y, z)] + a[at(x + 1 < G[0] ? x + 1 : x, y, z)];
                    v += a[at(x, y > 0 ? y - 1 : y, z)] + a[at(x, y + 1 < G[1] ? y + 1 : y, z)];
                    v += a[at(x, y, z > 0 ? z - 1 : z)] + a[at(x, y, z + 1 < G[2] ? z + 1 : z)];
                    b[at(x, y, z)] = v ^ (v >> 9);
                }
        pthread_barrier_wait(&bar);
    }
    for (long z = lo[2]; z < hi[2]; z++)
        for (long y = lo[1]; y < hi[1]; y++)
            for (long x = lo[0]; x < hi[0]; x++)
                sum += mix(grid[STEPS & 1][at(x, y, z)] ^ (uint64_t)x);
    return (void *)(uintptr_t)sum;
}

int main(int argc, char **argv)
{
    parse_args(argc, argv, &T, &n, 4);
    dims3(T, P);
    L[0] = 8 * n;
    L[1] = L[2] = n;
    for (int k = 0; k < 3; k++)
        G[k] = L[k] * P[k];
    grid[0] = xalloc(sizeof(uint64_t) * G[0] * G[1] * G[2]);
    grid[1] = xalloc(sizeof(uint64_t) * G[0] * G[1] * G[2]);
    pthread_barrier_init(&bar, NULL, (unsigned)T);
    print_checksum("stencil3d", run_threads(T, work));
    return 0;
}
