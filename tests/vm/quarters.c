/* Must-show 2 of issue 7 (run in the VM by guest-test.sh under `tdmap run`): the main
 * thread (thread 0) first-touches all the data, so every page starts on its node; then
 * threads 0..3 each write their own quarter for SECONDS seconds. At the end each thread
 * prints its tid, the CPUs it may run on (sched_getaffinity) and, queried with
 * move_pages, how many pages of its quarter are on the node of its CPU, and the node
 * where its quarter started. The checks are in run-check.sh.
 * With `huge`, each quarter is one 2 MiB transparent huge page (2 MiB-aligned, advised
 * huge) instead of 256 base pages, and the program first prints how much of its data
 * the kernel backs with huge pages (AnonHugePages).
 * Usage: quarters [SECONDS] [huge] */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define T 4
#define PAGE 4096
#define HUGE (2L << 20)

static int QPAGES = 256;
static char *data;
static int init_node[T];
static double seconds = 4.0;
static pthread_barrier_t bar;

static int node_of(void *p)
{
    void *pages[1] = {p};
    int status[1] = {-1};
    if (syscall(SYS_move_pages, 0, 1UL, pages, NULL, status, 0) != 0)
        return -1;
    return status[0];
}

static int majority_node(int q)
{
    int count[64] = {0}, best = -1;
    for (int i = 0; i < QPAGES; i++) {
        int n = node_of(data + ((long)q * QPAGES + i) * PAGE);
        if (n >= 0 && n < 64 && ++count[n] > (best < 0 ? 0 : count[best]))
            best = n;
    }
    return best;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *work(void *arg)
{
    int q = (int)(long)arg;
    char *mine = data + (long)q * QPAGES * PAGE;
    double end = now() + seconds;
    unsigned long rounds = 0;
    while (now() < end) {
        /* Each round starts at another page, so the first write after tdmap clears
         * the soft-dirty bits lands anywhere in a huge page, not always on its first
         * 4 KiB: only counting a huge page's samples together then moves it. */
        for (int k = 0; k < QPAGES; k++) {
            long i = (k + rounds * 7) % QPAGES;
            mine[i * PAGE + (rounds % 64) * 8]++;
        }
        rounds++;
        /* A pause per round: under QEMU TCG a vCPU spinning in a tight loop answers the
         * TLB-shootdown IPIs of page migration only after milliseconds, which made
         * move_pages take ~50 ms per page in this guest; idle moments let it finish. */
        usleep(200);
    }
    pthread_barrier_wait(&bar);
    cpu_set_t set;
    CPU_ZERO(&set);
    sched_getaffinity(0, sizeof set, &set);
    char cpus[256] = "";
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            snprintf(cpus + strlen(cpus), sizeof cpus - strlen(cpus), "%s%d", *cpus ? "," : "", c);
    unsigned cpu = 0, node = 0;
    syscall(SYS_getcpu, &cpu, &node, NULL);
    int on = 0;
    for (int i = 0; i < QPAGES; i++)
        on += node_of(mine + (long)i * PAGE) == (int)node;
    /* One line per thread, written at once so lines do not interleave. */
    printf("quarter %d tid %ld cpus %s node %u on_node %d of %d init_node %d rounds %lu\n", q,
           (long)syscall(SYS_gettid), cpus, node, on, QPAGES, init_node[q], rounds);
    fflush(stdout);
    pthread_barrier_wait(&bar);
    return NULL;
}

/* AnonHugePages (kB) of the mapping holding `p`, from /proc/self/smaps. */
static long huge_kb(void *p)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    int inside = 0;
    long kb = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long a, b;
        if (sscanf(line, "%lx-%lx ", &a, &b) == 2)
            inside = (unsigned long)p >= a && (unsigned long)p < b;
        else if (inside && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
            break;
    }
    if (f)
        fclose(f);
    return kb;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        seconds = atof(argv[1]);
    int huge = argc > 2 && strcmp(argv[2], "huge") == 0;
    if (huge)
        QPAGES = HUGE / PAGE;
    size_t len = (size_t)T * QPAGES * PAGE;
    char *raw = mmap(NULL, len + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return 1;
    data = (char *)(((unsigned long)raw + HUGE - 1) & ~(HUGE - 1));
    /* By default 4 KiB pages, each quarter its own pages; with `huge` one huge page per
     * quarter, which tdmap must weigh and move as a whole. */
    madvise(data, len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    for (long i = 0; i < (long)len; i += 64)
        data[i] = 1;
    if (huge)
        printf("huge_kb %ld of %ld\n", huge_kb(data), (long)(len >> 10));
    for (int q = 0; q < T; q++)
        init_node[q] = majority_node(q);
    pthread_barrier_init(&bar, NULL, T);
    pthread_t th[T];
    for (long q = 1; q < T; q++)
        pthread_create(&th[q], NULL, work, (void *)q);
    work((void *)0L);
    for (int q = 1; q < T; q++)
        pthread_join(th[q], NULL);
    return 0;
}
