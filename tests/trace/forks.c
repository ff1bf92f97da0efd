/* Forked children under `tdmap trace` (issue 19 item 5): each mode forks one child that
 * writes a buffer of its own, then ends in its own way; the parent waits and exits 0.
 *   threads: the parent runs 1 extra thread, the child 2 (tasks by process, then thread)
 *   kill:    the child kills itself with SIGKILL (no end marker)
 *   execv:   the child execs /bin/true (wrapped: its part ends whole)
 *   execl:   the child execs /bin/true through the variadic execl (not wrapped)
 *   exit:    the child returns through exit() (atexit) rather than _exit
 *   spawn:   the child execs this program again in mode leaf (fork + exec)
 *   system:  no fork: system() runs this program in mode leaf through sh
 *   leaf:    touches a buffer and exits
 *   late:    forks two children, the second scheduled first: the parent, alone on its
 *            CPU under SCHED_FIFO, forks the first at priority 10 and the second at 20,
 *            then waits, so the second runs (and starts recording) before the first;
 *            prints both pids in fork order, or "unordered" if SCHED_FIFO is refused */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define WORDS 4096
static volatile long sink;

static void *touch(void *arg)
{
    long *buf = malloc(WORDS * sizeof *buf);
    for (long i = 0; i < WORDS; i++)
        buf[i] = i + (long)arg;
    long s = 0;
    for (long i = 0; i < WORDS; i++)
        s += buf[i];
    sink = s;
    free(buf);
    return NULL;
}

static void threads(int n)
{
    pthread_t t[4];
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, touch, (void *)(long)i);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
}

static int fifo(int prio)
{
    struct sched_param sp = {.sched_priority = prio};
    return sched_setscheduler(0, SCHED_FIFO, &sp);
}

static int late(void)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    if (sched_setaffinity(0, sizeof one, &one) || fifo(10)) {
        printf("forks late unordered\n");
        return 0;
    }
    pid_t kids[2];
    for (int k = 0; k < 2; k++) {
        if (k == 1 && fifo(20))
            return 1;
        kids[k] = fork();
        if (kids[k] < 0)
            return 1;
        if (kids[k] == 0) {
            touch((void *)(long)k);
            _exit(0);
        }
    }
    for (int k = 0; k < 2; k++)
        waitpid(kids[k], NULL, 0);
    printf("forks late %d %d\n", (int)kids[0], (int)kids[1]);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "threads";
    touch(NULL);
    if (!strcmp(mode, "leaf"))
        return 0;
    if (!strcmp(mode, "system")) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "%s leaf", argv[0]);
        int rc = system(cmd);
        printf("forks system %s\n", rc == 0 ? "ok" : "failed");
        return rc != 0;
    }
    if (!strcmp(mode, "late"))
        return late();
    if (!strcmp(mode, "threads"))
        threads(1);
    pid_t c = fork();
    if (c < 0)
        return 1;
    if (c == 0) {
        touch((void *)1);
        if (!strcmp(mode, "threads"))
            threads(2);
        if (!strcmp(mode, "kill"))
            raise(SIGKILL);
        if (!strcmp(mode, "execv")) {
            char *args[] = {"true", NULL};
            execv("/bin/true", args);
        }
        if (!strcmp(mode, "spawn")) {
            char *args[] = {argv[0], "leaf", NULL};
            execv(argv[0], args);
        }
        if (!strcmp(mode, "execl"))
            execl("/bin/true", "true", (char *)NULL);
        if (!strcmp(mode, "exit"))
            exit(0);
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    touch((void *)2);
    printf("forks %s child %s\n", mode,
           WIFSIGNALED(st) ? "killed" : WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "ok" : "failed");
    return 0;
}
