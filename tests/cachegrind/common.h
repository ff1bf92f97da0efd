/* Helpers of the single-threaded kernels checked against cachegrind (scripts/sim-vs-cachegrind.sh).
 *
 * Arrays are aligned to 2 MiB, so that the instrumented build and the plain build under
 * valgrind map them to the same cache sets whatever their addresses: both tools index sets
 * by the low address bits, and a 2 MiB-aligned array has the same low bits in both. The
 * kernels call no libc function in their loops and avoid read-modify-write instructions
 * (cachegrind counts `add [mem], r` as one data reference, a trace as a load and a store). */
#ifndef TDMAP_CG_COMMON_H
#define TDMAP_CG_COMMON_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static void *aligned(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, (size_t)2 << 20, bytes) != 0) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

/* SIZE from argv[1], else the default. */
static long arg_size(int argc, char **argv, long def)
{
    return argc > 1 ? strtol(argv[1], NULL, 10) : def;
}
#endif
