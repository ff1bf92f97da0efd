/* A minimal test runner for libmai's C tests: each test is a function; `prog NAME` runs
 * one (ctest runs each as its own test), `prog` runs all and prints a summary line that
 * the VM harness greps. Plus helpers that read placement from the kernel, not libmai. */
#ifndef MAI_CHECK_H
#define MAI_CHECK_H
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int check_failed;
#define CHECK(cond, ...)                                                   \
  do {                                                                     \
    if (!(cond)) {                                                         \
      printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);               \
      printf(__VA_ARGS__);                                                 \
      printf("\n");                                                        \
      check_failed = 1;                                                    \
      return;                                                              \
    }                                                                      \
  } while (0)

/* `only_by_name` tests run only when named (e.g. the VM harness's wrong expectation). */
struct test { const char *name; void (*fn)(void); int only_by_name; };

static inline int run_tests(const char *prog, const struct test *t, int n, int argc, char **argv) {
  int failed = 0, ran = 0;
  for (int i = 0; i < n; i++) {
    if (argc > 1 ? strcmp(argv[1], t[i].name) != 0 : t[i].only_by_name) continue;
    check_failed = 0;
    t[i].fn();
    ran++;
    printf("%s %s: %s\n", check_failed ? "FAIL" : "ok", prog, t[i].name);
    failed += check_failed;
  }
  if (ran == 0) {
    printf("%s: no test named '%s'\n", prog, argc > 1 ? argv[1] : "");
    return 2;
  }
  printf("%s: %d of %d failed\n", prog, failed, ran);
  return failed ? 1 : 0;
}

/* The machine's nodes from sysfs (not from libmai). */
static inline int sys_nodes(int *nodes, int max) {
  FILE *f = fopen("/sys/devices/system/node/online", "r");
  int n = 0, a, b;
  char sep;
  if (!f) { nodes[0] = 0; return 1; }
  while (fscanf(f, "%d", &a) == 1) {
    b = a;
    if (fscanf(f, "%c", &sep) == 1 && sep == '-') {
      if (fscanf(f, "%d", &b) != 1) break;
      if (fscanf(f, "%c", &sep) != 1) sep = 0;
    }
    for (int x = a; x <= b && n < max; x++) nodes[n++] = x;
    if (sep != ',') break;
  }
  fclose(f);
  return n;
}

/* The node of an OS CPU from sysfs. */
static inline int sys_cpu_node(int cpu) {
  char path[128];
  for (int node = 0; node < 1024; node++) {
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/node%d", cpu, node);
    if (access(path, F_OK) == 0) return node;
  }
  return 0; /* no node links: a one-node machine */
}

/* Each page's node from move_pages(pid 0, ..., NULL, status): the kernel's answer. */
static inline void page_nodes(void *p, size_t pages, int *status) {
  long ps = sysconf(_SC_PAGESIZE);
  void **addrs = malloc(pages * sizeof *addrs);
  for (size_t i = 0; i < pages; i++) addrs[i] = (char *)p + i * ps;
  if (syscall(SYS_move_pages, 0, pages, addrs, NULL, status, 0) != 0)
    for (size_t i = 0; i < pages; i++) status[i] = -errno;
  free(addrs);
}
#endif
