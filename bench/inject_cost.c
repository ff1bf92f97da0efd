/* Cost of one injected fault (`bench/run_inject.sh`): run under `tdmap run --sampler
 * inject --inject-fraction 1 --period 1000`, it touches MIB MiB, sleeps past the
 * injector's next pass (which write-protects every page), then times one write per page
 * (each faults and waits for the handler) and the same writes again (no fault). The
 * first SPARSE pages are written 200 us apart, so that the handler sleeps between two
 * faults (as in a real program), the others back to back.
 * Prints the time per write in microseconds of each kind.
 * Usage: inject_cost MIB */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

#define SPARSE 2000
#define GAP 200e-6

/* Writes one byte per page of [from, to); with a gap, waits between writes and counts
 * only the writes. Returns seconds. */
static double pass(volatile unsigned char *p, size_t from, size_t to, unsigned char v, double gap)
{
    double spent = 0;
    for (size_t i = from; i < to; i += 4096) {
        double t0 = now();
        p[i] = v;
        double t1 = now();
        spent += t1 - t0;
        while (gap > 0 && now() - t1 < gap)
            ;
    }
    return spent;
}

int main(int argc, char **argv)
{
    size_t n = (size_t)(argc > 1 ? atol(argv[1]) : 64) << 20;
    unsigned char *p = malloc(n);
    if (!p)
        return 1;
    memset(p, 1, n);
    struct timespec pause = {1, 300 * 1000 * 1000};
    nanosleep(&pause, NULL);
    size_t pages = n / 4096, cut = (size_t)SPARSE * 4096;
    if (pages <= 2 * SPARSE)
        return 2;
    double sparse = pass(p, 0, cut, 2, GAP), dense = pass(p, cut, n, 2, 0);
    double plain = pass(p, 0, n, 3, 0);
    printf("injected fault, sparse (200 us apart): %.2f us; back to back: %.2f us; "
           "unprotected write: %.3f us (%zu pages)\n",
           sparse / SPARSE * 1e6, dense / (pages - SPARSE) * 1e6, plain / pages * 1e6, pages);
    return 0;
}
