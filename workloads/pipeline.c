/* Pipeline stages (Dedup/Ferret-like): thread s is stage s; items flow through a
 * two-slot buffer between consecutive stages, one wavefront step per barrier.
 * Expected sharing: stage s with stage s+1 only (a chain).
 * Usage: pipeline THREADS [LINES_PER_ITEM] */
#include "common.h"

#define ITEMS 24
#define SLOTS 2
#define PER_LINE (LINE / 8)

static int T;
static long item_lines;
static uint64_t *ring; /* ring[s]: the slots stage s-1 writes and stage s reads */
static pthread_barrier_t bar;

static uint64_t *slot(int stage, long item)
{
    long n = item_lines * PER_LINE;
    return ring + ((long)stage * SLOTS + item % SLOTS) * n;
}

static void *work(void *arg)
{
    int s = (int)(intptr_t)arg;
    long n = item_lines * PER_LINE;
    uint64_t sum = 0;
    for (long round = 0; round < ITEMS + T - 1; round++) {
        long item = round - s;
        if (item >= 0 && item < ITEMS) {
            uint64_t *in = s > 0 ? slot(s, item) : NULL;
            uint64_t *out = s + 1 < T ? slot(s + 1, item) : NULL;
            for (long k = 0; k < n; k++) {
                uint64_t v = in ? in[k] : mix((uint64_t)(item * n + k));
                v = mix(v + (uint64_t)s);
                if (out)
                    out[k] = v;
                else
                    sum += v;
            }
        }
        pthread_barrier_wait(&bar);
    }
    return (void *)(uintptr_t)sum;
}

int main(int argc, char **argv)
{
    parse_args(argc, argv, &T, &item_lines, 64);
    ring = xalloc(sizeof(uint64_t) * (size_t)((T + 1) * SLOTS * item_lines * PER_LINE));
    pthread_barrier_init(&bar, NULL, (unsigned)T);
    print_checksum("pipeline", run_threads(T, work));
    return 0;
}
