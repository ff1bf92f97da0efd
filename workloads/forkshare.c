/* Processes sharing memory (MPI ranks on one node, NAS-MZ): PROCS processes, where
 * processes 2k and 2k+1 share region k and nothing else. Expected sharing: the pairs
 * (0,1), (2,3), ... between processes, each process with one thread.
 *
 * Process 0 is the one started; it forks processes 1..PROCS-1. Before forking it first
 * touches every page of every region (as a master-initialising MPI rank or a launcher
 * would), so that a first-touch placement puts all shared pages on its node.
 * The regions are of two kinds, so that a tool keys shared pages by their backing object
 * and not by address:
 * - even k: shared anonymous memory (mmap MAP_SHARED|MAP_ANONYMOUS) made before the
 *   fork, at the same address in every process;
 * - odd k: a memfd, mapped by each process after the fork at an address of its own
 *   (process p first maps p guard pages, so that the addresses differ).
 * Each process also writes and reads a private buffer of PAGES pages.
 * Usage: forkshare PROCS [PAGES [REPEAT]] (PROCS even, 2..64; PAGES default 256).
 * Prints `forkshare checksum HEX`, the same for every run. */
#define _GNU_SOURCE
#include "common.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define STEPS 8
#define WORDS (PAGE / 8)

struct shared {
    pthread_barrier_t bar;
    uint64_t sums[64];
};

static int P;
static long pages;
static struct shared *sh;
static uint64_t **anon;  /* the even regions, mapped before the fork */
static int *memfds;      /* the odd regions' memfds */

static uint64_t *map_region(int k, int proc)
{
    size_t bytes = (size_t)pages * PAGE;
    if (k % 2 == 0)
        return anon[k / 2];
    /* Guard pages first, so that this process maps the memfd at an address of its own. */
    if (proc > 0 && mmap(NULL, (size_t)proc * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED) {
        perror("forkshare: mmap guard");
        exit(1);
    }
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfds[k / 2], 0);
    if (p == MAP_FAILED) {
        perror("forkshare: mmap memfd");
        exit(1);
    }
    return p;
}

/* Process `proc`'s work: the lower process of a pair writes on even steps, the upper on
 * odd ones; the other reads. */
static uint64_t work(int proc, uint64_t *region, uint64_t *priv)
{
    long n = pages * WORDS;
    uint64_t sum = 0;
    int lower = proc % 2 == 0;
    for (long r = 0; r < repeats; r++)
        for (int s = 0; s < STEPS; s++) {
            int i_write = lower ? !(s & 1) : (s & 1);
            if (i_write)
                for (long w = 0; w < n; w++)
                    region[w] = mix((uint64_t)(w + s * n) ^ (uint64_t)(proc / 2));
            for (long w = 0; w < n; w++)
                priv[w] = mix(priv[w] ^ (uint64_t)s);
            pthread_barrier_wait(&sh->bar);
            if (!i_write)
                for (long w = 0; w < n; w++)
                    sum += region[w] >> 3;
            for (long w = 0; w < n; w++)
                sum += priv[w] >> 5;
            pthread_barrier_wait(&sh->bar);
        }
    return sum;
}

static void *shared_map(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("forkshare: mmap shared");
        exit(1);
    }
    return p;
}

int main(int argc, char **argv)
{
    parse_args(argc, argv, &P, &pages, 256);
    if (P < 2 || P > 64 || P % 2) {
        fprintf(stderr, "%s: PROCS must be even, 2..64, got %d\n", argv[0], P);
        exit(2);
    }
    int regions = P / 2;
    size_t bytes = (size_t)pages * PAGE;
    sh = shared_map(sizeof *sh);
    pthread_barrierattr_t a;
    pthread_barrierattr_init(&a);
    pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&sh->bar, &a, (unsigned)P);
    anon = xalloc(sizeof(uint64_t *) * (size_t)regions);
    memfds = xalloc(sizeof(int) * (size_t)regions);
    for (int k = 0; k < regions; k++) {
        if (k % 2 == 0) {
            anon[k / 2] = shared_map(bytes);
            memset(anon[k / 2], 0, bytes); /* process 0's first touch */
        } else {
            memfds[k / 2] = memfd_create("forkshare", 0);
            if (memfds[k / 2] < 0 || ftruncate(memfds[k / 2], (off_t)bytes)) {
                perror("forkshare: memfd");
                exit(1);
            }
            uint64_t *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfds[k / 2], 0);
            if (m == MAP_FAILED) {
                perror("forkshare: mmap memfd");
                exit(1);
            }
            memset(m, 0, bytes); /* process 0's first touch */
            munmap(m, bytes);
        }
    }
    fflush(stdout);
    int proc = 0;
    for (int p = 1; p < P; p++) {
        pid_t c = fork();
        if (c < 0) {
            perror("forkshare: fork");
            exit(1);
        }
        if (c == 0) {
            proc = p;
            break;
        }
    }
    uint64_t *region = map_region(proc / 2, proc);
    uint64_t *priv = xalloc(bytes);
    for (long w = 0; w < pages * WORDS; w++)
        priv[w] = (uint64_t)(w + proc);
    sh->sums[proc] = work(proc, region, priv);
    if (proc != 0)
        _exit(0);
    int failed = 0;
    for (int p = 1; p < P; p++) {
        int st;
        if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            failed = 1;
    }
    if (failed) {
        fprintf(stderr, "forkshare: a process failed\n");
        return 1;
    }
    uint64_t total = 0;
    for (int p = 0; p < P; p++)
        total = mix(total ^ sh->sums[p]);
    print_checksum("forkshare", total);
    return 0;
}
