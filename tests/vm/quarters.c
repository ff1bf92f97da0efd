/* Must-show 2 of issue 7 (run in the VM by guest-test.sh under `tdmap run`): the main
 * thread (thread 0) first-touches all the data, so every page starts on its node; then
 * threads 0..3 each write their own quarter for SECONDS seconds. At the end each thread
 * prints its tid, the CPUs it may run on (sched_getaffinity) and, queried with
 * move_pages, how many pages of its quarter are on the node of its CPU, and the node
 * where its quarter started. The checks are in guest-test.sh.
 * Usage: quarters [SECONDS] */
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
#define QPAGES 256
#define PAGE 4096

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
        for (int i = 0; i < QPAGES; i++)
            mine[(long)i * PAGE + (rounds % 64) * 8]++;
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

int main(int argc, char **argv)
{
    if (argc > 1)
        seconds = atof(argv[1]);
    data = mmap(NULL, (size_t)T * QPAGES * PAGE, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (data == MAP_FAILED)
        return 1;
    /* 4 KiB pages: a transparent huge page takes one soft-dirty fault per 2 MiB and
     * moves as a whole, so its quarters could not be told apart (see the issue 7 report). */
    madvise(data, (size_t)T * QPAGES * PAGE, MADV_NOHUGEPAGE);
    for (long i = 0; i < (long)T * QPAGES * PAGE; i += 64)
        data[i] = 1;
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
