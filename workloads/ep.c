/* Private data only (EP-like, OpenMP): every thread fills and reduces its own array.
 * Expected sharing: none between threads (a diagonal matrix). Each thread allocates its
 * array once and keeps it: an array freed at the end of every repetition could come
 * back at an address another thread's had, and so show up as shared memory.
 * Usage: ep THREADS [ELEMENTS_PER_THREAD] */
#include "common.h"
#include <omp.h>

#define STEPS 4

int main(int argc, char **argv)
{
    int T;
    long n;
    uint64_t total = 0;
    parse_args(argc, argv, &T, &n, 16384);
    uint64_t **arrays = xalloc(sizeof(uint64_t *) * (size_t)T);
#pragma omp parallel num_threads(T)
    arrays[omp_get_thread_num()] = xalloc(sizeof(uint64_t) * (size_t)n);
    for (long rep = 0; rep < repeats; rep++)
#pragma omp parallel num_threads(T) reduction(+ : total)
    {
        uint64_t *mine = arrays[omp_get_thread_num()];
        uint64_t seed = (uint64_t)omp_get_thread_num() * 0x1000003ULL, acc = 0;
        for (int s = 0; s < STEPS; s++) {
            for (long k = 0; k < n; k++)
                mine[k] = mix(seed + (uint64_t)(k + s * n)) ^ (k ? mine[k - 1] : 0);
            for (long k = 0; k < n; k++)
                acc += mine[k] >> (k & 7);
        }
        total += acc;
    }
    for (int t = 0; t < T; t++)
        free(arrays[t]);
    free(arrays);
    print_checksum("ep", total);
    return 0;
}
