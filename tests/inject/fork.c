/* Forks while tdmap's inject runtime keeps the parent's memory write-protected: the
 * child, which has no handler thread, writes every page and forks a grandchild that
 * does too; then the parent writes every page again. Nothing may hang, and the sums
 * are fixed: "child 2N", "grandchild 3N", "parent 2N" for N pages.
 * Usage: fork MIB */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static unsigned long write_all(unsigned char *p, size_t n, unsigned char v)
{
    unsigned long sum = 0;
    for (size_t i = 0; i < n; i += 4096) {
        p[i] = v;
        sum += p[i];
    }
    return sum;
}

static int wait_ok(pid_t pid)
{
    int st;
    return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(int argc, char **argv)
{
    size_t n = (size_t)(argc > 1 ? atol(argv[1]) : 16) << 20;
    unsigned char *p = malloc(n);
    if (!p)
        return 1;
    memset(p, 1, n);
    /* Several injector periods pass: its pages are protected when we fork. */
    struct timespec pause = {0, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        printf("child %lu\n", write_all(p, n, 2));
        fflush(stdout);
        pid_t grand = fork();
        if (grand == 0) {
            printf("grandchild %lu\n", write_all(p, n, 3));
            fflush(stdout);
            _exit(0);
        }
        _exit(wait_ok(grand) ? 0 : 1);
    }
    int ok = wait_ok(child);
    printf("parent %lu %s\n", write_all(p, n, 2), ok ? "children ok" : "children FAILED");
    return ok ? 0 : 1;
}
