/* Distant pairs (LU-like): thread i and thread T-1-i exchange a buffer every step, the
 * writer and the reader swapping roles each step. Expected sharing: the anti-diagonal.
 * With odd T the middle thread has no partner and works alone.
 * Usage: pairs THREADS [LINES_PER_PAIR] */
#include "common.h"

#define STEPS 8
#define PER_LINE (LINE / 8)

static int T;
static long lines;
static uint64_t **buf;
static pthread_barrier_t bar;

static void *work(void *arg)
{
    int id = (int)(intptr_t)arg, partner = T - 1 - id;
    int p = id < partner ? id : partner;
    long n = lines * PER_LINE;
    uint64_t sum = 0;
    for (int s = 0; s < STEPS; s++) {
        /* The lower thread writes on even steps, the upper on odd ones. */
        int i_write = (id < partner) ? !(s & 1) : (s & 1);
        if (partner == id || i_write)
            for (long k = 0; k < n; k++)
                buf[p][k] = mix((uint64_t)(k + s * n) ^ sum);
        pthread_barrier_wait(&bar);
        if (partner == id || !i_write)
            for (long k = 0; k < n; k++)
                sum += buf[p][k] >> 3;
        pthread_barrier_wait(&bar);
    }
    return (void *)(uintptr_t)sum;
}

int main(int argc, char **argv)
{
    parse_args(argc, argv, &T, &lines, 256);
    buf = xalloc(sizeof(uint64_t *) * (size_t)(T / 2 + 1));
    for (int p = 0; p < T / 2 + 1; p++)
        buf[p] = xalloc(sizeof(uint64_t) * (size_t)(lines * PER_LINE));
    pthread_barrier_init(&bar, NULL, (unsigned)T);
    print_checksum("pairs", run_threads(T, work));
    return 0;
}
