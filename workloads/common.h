/* Shared helpers for the tdmap workloads: argument parsing, thread start-up and checksums.
 *
 * Every workload runs as `prog THREADS [SIZE]` and prints one line `NAME checksum HEX`.
 * Thread 0 is the main thread; threads 1..T-1 are created in order, so that a tracer that
 * numbers threads by creation order gives thread k the workload's logical index k.
 * Thread indexes travel in the pthread argument and partial results come back through
 * pthread_join, so the harness itself adds no shared cache lines to the sharing pattern. */
#ifndef TDMAP_WORKLOAD_COMMON_H
#define TDMAP_WORKLOAD_COMMON_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE 64
#define PAGE 4096

/* How many times the parallel part runs (the optional third argument, default 1): the
 * same sharing pattern again, so that online detection (`tdmap run`), which needs runs
 * of seconds like the iterative programs it is meant for, sees it long enough. */
static long repeats = 1;

/* Parses `THREADS [SIZE [REPEAT]]`; exits 2 with a usage line on bad input. */
static void parse_args(int argc, char **argv, int *threads, long *size, long def_size)
{
    char *end;
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: %s THREADS [SIZE [REPEAT]]\n", argv[0]);
        exit(2);
    }
    *threads = (int)strtol(argv[1], &end, 10);
    if (*end || *threads < 1 || *threads > 1024) {
        fprintf(stderr, "%s: THREADS must be 1..1024, got '%s'\n", argv[0], argv[1]);
        exit(2);
    }
    *size = def_size;
    if (argc >= 3) {
        *size = strtol(argv[2], &end, 10);
        if (*end || *size < 1) {
            fprintf(stderr, "%s: SIZE must be a positive integer, got '%s'\n", argv[0], argv[2]);
            exit(2);
        }
    }
    if (argc == 4) {
        repeats = strtol(argv[3], &end, 10);
        if (*end || repeats < 1) {
            fprintf(stderr, "%s: REPEAT must be a positive integer, got '%s'\n", argv[0], argv[3]);
            exit(2);
        }
    }
}

/* Page-aligned allocation; exits 1 when memory runs out. Page alignment puts
 * every array's start on the start of a page, and so of every sharing block up to a
 * page: the sharing a workload builds, seen per 1 KiB sub-block as `tdmap run` sees
 * it, does not depend on where malloc placed the array (alltoall's readers of a
 * sub-block are threads 0-3 or 4-7 only when rows start on a sub-block). */
static void *xalloc(size_t bytes)
{
    size_t rounded = (bytes + PAGE - 1) / PAGE * PAGE;
    void *p = aligned_alloc(PAGE, rounded ? rounded : PAGE);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}

/* splitmix64: a cheap, well-mixed integer hash for deterministic data. */
static inline uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static void *(*repeated_fn)(void *);

/* Runs the thread function `repeats` times in a row, summing what it returns. */
static void *repeat_fn(void *arg)
{
    uint64_t sum = 0;
    for (long r = 0; r < repeats; r++)
        sum += (uint64_t)(uintptr_t)repeated_fn(arg);
    return (void *)(uintptr_t)sum;
}

/* Runs fn(0) on the main thread and fn(1..T-1) on new threads created in order, each
 * `repeats` times; returns the wrapping sum of the values the threads return. */
__attribute__((unused)) /* forkshare starts processes instead */
static uint64_t run_threads(int T, void *(*fn)(void *))
{
    pthread_t *tids = calloc((size_t)T, sizeof *tids);
    uint64_t total;
    if (!tids) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    repeated_fn = fn;
    for (int i = 1; i < T; i++) {
        if (pthread_create(&tids[i], NULL, repeat_fn, (void *)(intptr_t)i) != 0) {
            fprintf(stderr, "pthread_create failed for thread %d\n", i);
            exit(1);
        }
    }
    total = (uint64_t)(uintptr_t)repeat_fn((void *)(intptr_t)0);
    for (int i = 1; i < T; i++) {
        void *ret;
        pthread_join(tids[i], &ret);
        total += (uint64_t)(uintptr_t)ret;
    }
    free(tids);
    return total;
}

static void print_checksum(const char *name, uint64_t sum)
{
    printf("%s checksum %016llx\n", name, (unsigned long long)sum);
}

#endif
