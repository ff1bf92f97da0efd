/* tdmap exec's test program: BATCHES batches of PER threads, one batch after the other
 * (each joined before the next starts). While a batch's threads wait at a barrier, main
 * reads each one's Cpus_allowed_list from /proc/self/task/TID/status; at the end it
 * prints one line per thread in creation order (main = 0), then exits with CODE.
 * Usage: batches BATCHES PER CODE */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_barrier_t ready, done;
static char lists[256][256];

static void allowed(pid_t tid, char *out) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)tid);
  FILE *f = fopen(path, "r");
  strcpy(out, "?");
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "Cpus_allowed_list:", 18)) {
      line[strcspn(line, "\n")] = 0;
      strcpy(out, line + 18 + strspn(line + 18, " \t"));
    }
  if (f) fclose(f);
}

static void *worker(void *arg) {
  *(pid_t *)arg = (pid_t)syscall(SYS_gettid);
  pthread_barrier_wait(&ready);
  pthread_barrier_wait(&done);
  return NULL;
}

int main(int argc, char **argv) {
  int batches = argc > 1 ? atoi(argv[1]) : 1, per = argc > 2 ? atoi(argv[2]) : 2;
  int code = argc > 3 ? atoi(argv[3]) : 0, n = 1;
  if (1 + batches * per > 256) return 100;
  allowed((pid_t)syscall(SYS_gettid), lists[0]);
  for (int b = 0; b < batches; b++) {
    pthread_t t[64];
    pid_t tids[64];
    pthread_barrier_init(&ready, NULL, per + 1);
    pthread_barrier_init(&done, NULL, per + 1);
    for (int i = 0; i < per; i++) pthread_create(&t[i], NULL, worker, &tids[i]);
    pthread_barrier_wait(&ready);
    for (int i = 0; i < per; i++) allowed(tids[i], lists[n + i]);
    pthread_barrier_wait(&done);
    for (int i = 0; i < per; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&ready);
    pthread_barrier_destroy(&done);
    n += per;
  }
  for (int i = 0; i < n; i++) printf("thread %d: %s\n", i, lists[i]);
  return code;
}
