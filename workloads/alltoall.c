/* All-to-all, homogeneous (FT/Vips-like, OpenMP): an N*N matrix transposed back and
 * forth with rows split statically over the threads. The block of rows of thread s
 * meets the block of columns of every thread t, so every pair shares the same number
 * of lines. Expected sharing: uniform off the diagonal.
 * Usage: alltoall THREADS [N] (N is rounded up to a multiple of 8*THREADS) */
#include "common.h"
#include <omp.h>

#define STEPS 4

int main(int argc, char **argv)
{
    int T;
    long n;
    uint64_t total = 0;
    parse_args(argc, argv, &T, &n, 256);
    n = (n + 8L * T - 1) / (8L * T) * (8L * T);
    uint64_t *m[2] = {xalloc(sizeof(uint64_t) * (size_t)(n * n)),
                      xalloc(sizeof(uint64_t) * (size_t)(n * n))};
    for (long rep = 0; rep < repeats; rep++)
#pragma omp parallel num_threads(T) reduction(+ : total)
    {
#pragma omp for schedule(static)
        for (long r = 0; r < n; r++)
            for (long c = 0; c < n; c++)
                m[0][r * n + c] = mix((uint64_t)(r * n + c));
        for (int s = 0; s < STEPS; s++) {
            const uint64_t *a = m[s & 1];
            uint64_t *b = m[(s + 1) & 1];
#pragma omp for schedule(static)
            for (long r = 0; r < n; r++)
                for (long c = 0; c < n; c++)
                    b[r * n + c] = a[c * n + r] * 3 + (uint64_t)s;
        }
#pragma omp for schedule(static)
        for (long r = 0; r < n; r++)
            for (long c = 0; c < n; c++)
                total += mix(m[STEPS & 1][r * n + c]);
    }
    print_checksum("alltoall", total);
    return 0;
}
