/* A 2-D Jacobi stencil on libmai arrays (issue 9's example): the grids come from
 * mai_alloc_2D and get mai_bind_block, so each thread's band of rows sits on its node;
 * threads are pinned with mai_bind_thread. It checks its result against a plain serial
 * run on malloc'd grids (bitwise equal) and that the grids' pages are where bind_block
 * put them (move_pages). Exit 0 = verified.
 *
 *   cc -O2 -Iinclude examples/stencil_mai.c -Ltarget/debug -lmai -lpthread -o stencil_mai */
#define _GNU_SOURCE
#include "mai.h"
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define N 512
#define STEPS 20
static int T;
static double (*a)[N], (*b)[N];
static pthread_barrier_t bar;

static void sweep(double (*src)[N], double (*dst)[N], int r0, int r1) {
  for (int i = r0; i < r1; i++)
    for (int j = 0; j < N; j++) {
      if (i == 0 || j == 0 || i == N - 1 || j == N - 1) { dst[i][j] = src[i][j]; continue; }
      dst[i][j] = 0.25 * (src[i - 1][j] + src[i + 1][j] + src[i][j - 1] + src[i][j + 1]);
    }
}

static void *worker(void *arg) {
  int t = (int)(long)arg;
  if (mai_bind_thread(t) < 0) perror("mai_bind_thread");
  int r0 = N * t / T, r1 = N * (t + 1) / T;
  double (*s)[N] = a, (*d)[N] = b, (*x)[N];
  for (int k = 0; k < STEPS; k++) {
    sweep(s, d, r0, r1);
    pthread_barrier_wait(&bar);
    x = s; s = d; d = x;
  }
  return NULL;
}

static void init(double (*g)[N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) g[i][j] = (i == 0) ? 100.0 : (double)((i * 7 + j * 13) % 10);
}

/* Every page of g on the node of the thread that owns it under bind_block. */
static int placed(double (*g)[N]) {
  long ps = sysconf(_SC_PAGESIZE);
  size_t pages = (sizeof(double) * N * N + ps - 1) / ps;
  void **addr = malloc(pages * sizeof *addr);
  int *st = malloc(pages * sizeof *st), bad = 0;
  for (size_t i = 0; i < pages; i++) addr[i] = (char *)g + i * ps;
  syscall(SYS_move_pages, 0, pages, addr, NULL, st, 0);
  for (size_t i = 0; i < pages && !bad; i++) {
    size_t t = i * T / pages;
    int want = mai_cpu_node(mai_thread_cpu(t < (size_t)T ? (int)t : T - 1));
    if (st[i] != want) {
      printf("stencil_mai: page %zu on node %d, bind_block says %d\n", i, st[i], want);
      bad = 1;
    }
  }
  free(addr);
  free(st);
  return !bad;
}

int main(void) {
  T = mai_get_num_cpu();
  if (mai_set_threads(T) != 0) return perror("mai_set_threads"), 1;
  a = mai_alloc_2D(N, N, sizeof(double));
  b = mai_alloc_2D(N, N, sizeof(double));
  if (!a || !b) return perror("mai_alloc_2D"), 1;
  init(a);
  if (mai_bind_block(a) != 0 || mai_bind_block(b) != 0) return perror("mai_bind_block"), 1;
  int ok_place = placed(a) && placed(b);

  pthread_barrier_init(&bar, NULL, T);
  pthread_t th[1024];
  for (int t = 0; t < T; t++) pthread_create(&th[t], NULL, worker, (void *)(long)t);
  for (int t = 0; t < T; t++) pthread_join(th[t], NULL);
  double (*res)[N] = STEPS % 2 ? b : a;

  /* The reference: the same sweeps, serial, on malloc'd grids. */
  double (*ra)[N] = malloc(sizeof(double) * N * N), (*rb)[N] = malloc(sizeof(double) * N * N), (*x)[N];
  init(ra);
  for (int k = 0; k < STEPS; k++) { sweep(ra, rb, 0, N); x = ra; ra = rb; rb = x; }
  int ok_result = memcmp(res, ra, sizeof(double) * N * N) == 0;
  double sum = 0;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) sum += res[i][j];
  printf("stencil_mai: %dx%d Jacobi, %d steps, %d threads on %d nodes: checksum %.6f, "
         "result %s, bind_block placement %s\n", N, N, STEPS, T, mai_get_num_nodes(), sum,
         ok_result ? "matches serial" : "DIFFERS", ok_place ? "verified" : "WRONG");
  mai_free_array(a);
  mai_free_array(b);
  free(ra);
  free(rb);
  return ok_result && ok_place ? 0 : 1;
}
