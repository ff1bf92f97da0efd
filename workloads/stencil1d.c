/* 1-D domain decomposition (BT/SP-like): a grid of rows split into T row blocks.
 * Each step reads the row above and below, so thread i shares exactly the boundary
 * rows with threads i-1 and i+1. Expected sharing: a tridiagonal band.
 * Usage: stencil1d THREADS [ROWS_PER_THREAD]
 * spinbar.c includes this file with its own BARRIER_WAIT and NAME: the same computation
 * and checksum, with a hand-written spin barrier in place of pthread_barrier_wait. */
#include "common.h"

#ifndef BARRIER_WAIT
#define NAME "stencil1d"
static pthread_barrier_t bar;
#define BARRIER_INIT(t) pthread_barrier_init(&bar, NULL, (unsigned)(t))
#define BARRIER_WAIT() pthread_barrier_wait(&bar)
#endif

#define WIDTH 512 /* 4 KiB rows: 64 cache lines of sharing per boundary row */
#define STEPS 6

static int T;
static long rows_per;
static uint64_t *grid[2];

static void *work(void *arg)
{
    int id = (int)(intptr_t)arg;
    long r0 = id * rows_per, r1 = r0 + rows_per, rows = T * rows_per;
    uint64_t sum = 0;
    for (long r = r0; r < r1; r++)
        for (long c = 0; c < WIDTH; c++)
            grid[0][r * WIDTH + c] = mix((uint64_t)(r * WIDTH + c));
    BARRIER_WAIT();
    for (int s = 0; s < STEPS; s++) {
        const uint64_t *a = grid[s & 1];
        uint64_t *b = grid[(s + 1) & 1];
        for (long r = r0; r < r1; r++) {
            const uint64_t *up = a + (r > 0 ? r - 1 : r) * WIDTH;
            const uint64_t *dn = a + (r + 1 < rows ? r + 1 : r) * WIDTH;
            const uint64_t *me = a + r * WIDTH;
            for (long c = 0; c < WIDTH; c++)
                b[r * WIDTH + c] = (up[c] + dn[c] + 3 * me[c]) ^ (me[c] >> 7);
        }
        BARRIER_WAIT();
    }
    for (long r = r0; r < r1; r++)
        for (long c = 0; c < WIDTH; c++)
            sum += mix(grid[STEPS & 1][r * WIDTH + c] + (uint64_t)c);
    return (void *)(uintptr_t)sum;
}

int main(int argc, char **argv)
{
    parse_args(argc, argv, &T, &rows_per, 8);
    grid[0] = xalloc(sizeof(uint64_t) * WIDTH * rows_per * T);
    grid[1] = xalloc(sizeof(uint64_t) * WIDTH * rows_per * T);
    BARRIER_INIT(T);
    print_checksum(NAME, run_threads(T, work));
    return 0;
}
