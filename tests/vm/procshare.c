/* Issue 19 must-show 4 (run in the 2-node guest by procs-check.sh under `tdmap run`):
 * 4 processes, where processes 2k and 2k+1 share region k (shared anonymous memory,
 * 256 pages each). Process 0 first-touches both regions before forking, so every page
 * starts on its node; then each process writes its pair's region for SECONDS seconds.
 * At the end each process prints its pid, the CPUs it may run on, the node of its CPU
 * and, queried with move_pages, how many pages of its region are on that node, and the
 * node where the region started. The checks are in procs-check.sh.
 * Usage: procshare [SECONDS] */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define P 4
#define PAGE 4096
#define PAGES 256

static int node_of(void *p)
{
    void *pages[1] = {p};
    int status[1] = {-1};
    if (syscall(SYS_move_pages, 0, 1UL, pages, NULL, status, 0) != 0)
        return -1;
    return status[0];
}

static int majority_node(char *region)
{
    int count[64] = {0}, best = -1;
    for (int i = 0; i < PAGES; i++) {
        int n = node_of(region + (long)i * PAGE);
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

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 4.0;
    pthread_barrier_t *bar = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    char *region[P / 2];
    int init_node[P / 2];
    pthread_barrierattr_t a;
    pthread_barrierattr_init(&a);
    pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(bar, &a, P);
    for (int k = 0; k < P / 2; k++) {
        region[k] = mmap(NULL, (size_t)PAGES * PAGE, PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (region[k] == MAP_FAILED)
            return 1;
        memset(region[k], 1, (size_t)PAGES * PAGE); /* process 0's first touch */
        init_node[k] = majority_node(region[k]);
    }
    fflush(stdout);
    int proc = 0;
    for (int p = 1; p < P; p++) {
        pid_t c = fork();
        if (c < 0)
            return 1;
        if (c == 0) {
            proc = p;
            break;
        }
    }
    char *mine = region[proc / 2];
    double end = now() + seconds;
    unsigned long rounds = 0;
    while (now() < end) {
        for (int k = 0; k < PAGES; k++) {
            long i = (k + rounds * 7) % PAGES;
            mine[i * PAGE + ((rounds + proc) % 64) * 8]++;
        }
        rounds++;
        /* Idle moments let page migration's TLB shootdowns through under QEMU TCG. */
        usleep(200);
    }
    pthread_barrier_wait(bar);
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
    for (int i = 0; i < PAGES; i++)
        on += node_of(mine + (long)i * PAGE) == (int)node;
    printf("proc %d pid %ld region %d cpus %s node %u on_node %d of %d init_node %d rounds %lu\n",
           proc, (long)getpid(), proc / 2, cpus, node, on, PAGES, init_node[proc / 2], rounds);
    fflush(stdout);
    pthread_barrier_wait(bar);
    if (proc != 0)
        _exit(0);
    for (int p = 1; p < P; p++)
        wait(NULL);
    return 0;
}
