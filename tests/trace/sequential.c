/* Threads that run one after another (each created after the one before it was
 * joined), so the order of their accesses, and with it the sharing model, is the same
 * in every run: tests/trace/model_only.rs compares --model-only with and without the
 * runtime's aggregation, and with tdmap trace + tdmap analyze.
 * Each thread first-touches its part of a shared array, sweeps it and the next part
 * three times (runs of one line, lines shared with the next thread), updates
 * pseudo-random elements of a shared table (lines met once, far apart), and polls a
 * flag as a spin-wait does, writing it now and then (reads that the runtime's spin
 * collapse counts in one record per run: aggregation must not count them again). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 15)
#define B 4096

static double *a;
static long b[B];
static volatile long flag[8];
static long threads;

static void *work(void *arg) {
    long t = (long)arg, lo = t * N / threads, hi = (t + 1) * N / threads;
    double s = 0;
    for (long i = lo; i < hi; i++)
        a[i] = i * 0.5;
    for (int r = 0; r < 3; r++)
        for (long i = lo; i < hi; i++)
            s += a[i] + a[(i + N / threads) % N];
    unsigned x = 12345 + (unsigned)t;
    for (int k = 0; k < 20000; k++) {
        x = x * 1103515245u + 12345u;
        b[(x >> 8) % B] += k;
    }
    for (int k = 0; k < 3000; k++) {
        s += flag[t & 7];
        if (k % 1000 == 999)
            flag[t & 7] = k;
    }
    return (void *)(long)s;
}

int main(int argc, char **argv) {
    threads = argc > 1 ? atol(argv[1]) : 4;
    a = malloc(N * sizeof *a);
    long sum = 0;
    for (long t = 0; t < threads; t++) {
        pthread_t th;
        void *r;
        pthread_create(&th, 0, work, (void *)t);
        pthread_join(th, &r);
        sum += (long)r;
    }
    printf("%ld %ld\n", sum, b[7]);
    return 0;
}
