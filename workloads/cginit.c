/* Master-initialised data used in parallel (CG-like): the main thread builds a sparse
 * matrix and the vectors, touching every page first, then all threads run sparse
 * matrix-vector products on row blocks and read the whole shared vector x.
 * Expected sharing: uniform between all threads (through x), plus thread 0 with
 * everyone (it initialised their rows): the first-touch pathology.
 * Usage: cginit THREADS [ROWS] (ROWS is rounded up to a multiple of 8*THREADS) */
#include "common.h"

#define NNZ 16
#define STEPS 4

static int T;
static long n;
static uint64_t *val, *x, *y;
static uint32_t *col;
static pthread_barrier_t bar;

static void *work(void *arg)
{
    int id = (int)(intptr_t)arg;
    long r0 = id * (n / T), r1 = r0 + n / T;
    uint64_t sum = 0;
    for (int s = 0; s < STEPS; s++) {
        for (long r = r0; r < r1; r++) {
            uint64_t acc = 0;
            for (long k = r * NNZ; k < (r + 1) * NNZ; k++)
                acc += val[k] * x[col[k]];
            y[r] = acc;
        }
        pthread_barrier_wait(&bar);
        for (long r = r0; r < r1; r++)
            x[r] = (y[r] >> 5) | 1;
        pthread_barrier_wait(&bar);
    }
    for (long r = r0; r < r1; r++)
        sum += mix(x[r]);
    return (void *)(uintptr_t)sum;
}

int main(int argc, char **argv)
{
    parse_args(argc, argv, &T, &n, 4096);
    n = (n + 8L * T - 1) / (8L * T) * (8L * T);
    val = xalloc(sizeof(uint64_t) * (size_t)(n * NNZ));
    col = xalloc(sizeof(uint32_t) * (size_t)(n * NNZ));
    x = xalloc(sizeof(uint64_t) * (size_t)n);
    y = xalloc(sizeof(uint64_t) * (size_t)n);
    for (long k = 0; k < n * NNZ; k++) {
        val[k] = mix((uint64_t)k) & 0xffff;
        col[k] = (uint32_t)(mix((uint64_t)k ^ 0x5555) % (uint64_t)n);
    }
    for (long r = 0; r < n; r++)
        x[r] = y[r] = 1;
    pthread_barrier_init(&bar, NULL, (unsigned)T);
    print_checksum("cginit", run_threads(T, work));
    return 0;
}
