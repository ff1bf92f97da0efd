/* Producer-consumer whose ownership moves (a phase change): every thread produces its
 * own buffer each step; in the first half thread b's buffer is consumed by b^1 (near
 * pairs), in the second half by (b+T/2)%T (distant pairs). Expected sharing: the sum
 * of both pairings over the whole run, and each pairing alone within its half.
 * Usage: phase THREADS [LINES_PER_BUFFER] (THREADS must be even) */
#include "common.h"

#define STEPS 8
#define PER_LINE (LINE / 8)

static int T;
static long lines;
static uint64_t **buf;
static pthread_barrier_t bar;

static void *work(void *arg)
{
    int id = (int)(intptr_t)arg;
    long n = lines * PER_LINE;
    uint64_t sum = 0;
    for (int s = 0; s < STEPS; s++) {
        /* Whose buffer this thread consumes: its near partner, then its distant one. */
        int from = s < STEPS / 2 ? id ^ 1 : (id + T / 2) % T;
        for (long k = 0; k < n; k++)
            buf[id][k] = mix((uint64_t)(id * n + k + s) ^ sum);
        pthread_barrier_wait(&bar);
        for (long k = 0; k < n; k++)
            sum += buf[from][k] >> 2;
        pthread_barrier_wait(&bar);
    }
    return (void *)(uintptr_t)sum;
}

int main(int argc, char **argv)
{
    parse_args(argc, argv, &T, &lines, 128);
    if (T % 2) {
        fprintf(stderr, "%s: THREADS must be even, got %d\n", argv[0], T);
        return 2;
    }
    buf = xalloc(sizeof(uint64_t *) * (size_t)T);
    for (int b = 0; b < T; b++)
        buf[b] = xalloc(sizeof(uint64_t) * (size_t)(lines * PER_LINE));
    pthread_barrier_init(&bar, NULL, (unsigned)T);
    print_checksum("phase", run_threads(T, work));
    return 0;
}
