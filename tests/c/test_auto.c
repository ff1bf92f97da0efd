/* Automatic mode (MApp §3.2): re-runs itself with MAI_AUTO=1 and a log file; the child
 * allocates large arrays through malloc, calloc, posix_memalign, aligned_alloc, memalign
 * and mmap (test `auto`), or writes its 64 MiB static array (test `static`, issue 22
 * must-show 3), and checks that
 * each got the policy the heuristic picks for this machine, which the test derives on its
 * own from the sysfs distance matrix: cyclic if NUMA factor < 2.0 and at least half the
 * node pairs are one hop apart, bind_block otherwise. */
#include "check.h"
#include "../../include/mai.h"
#include <malloc.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define MAXN 64
static int nodes[MAXN], M;
static long PS;
static char log_path[64];

/* Static arrays in .bss: `grid` is above the threshold and must be placed before main;
 * `small_grid` (1 MiB) is below it and must not. */
static char grid[64 << 20];
static char small_grid[1 << 20];

/* 1 = cyclic, 0 = bind_block, from /sys/devices/system/node/nodeN/distance. */
static int expect_cyclic(double *factor, double *conn) {
  int d[MAXN][MAXN];
  char path[96];
  for (int i = 0; i < M; i++) {
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d/distance", nodes[i]);
    FILE *f = fopen(path, "r");
    for (int j = 0; j < M; j++) if (!f || fscanf(f, "%d", &d[i][j]) != 1) d[i][j] = i == j ? 10 : 20;
    if (f) fclose(f);
  }
  int min = 1 << 30, pairs = 0, hop = 0;
  *factor = 1.0;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < M; j++) {
      if (i == j) continue;
      double r = (double)d[i][j] / d[i][i];
      if (r > *factor) *factor = r;
      if (j > i && d[i][j] < min) min = d[i][j];
    }
  for (int i = 0; i < M; i++)
    for (int j = i + 1; j < M; j++) { pairs++; hop += d[i][j] == min; }
  *conn = pairs ? (double)hop / pairs : 1.0;
  return *factor < 2.0 && *conn >= 0.5;
}

static int next_node(int n) {
  for (int k = 0; k < M; k++)
    if (nodes[k] == n) return nodes[(k + 1) % M];
  return -1;
}

/* bind_block's owner of page i of `pages` with T threads (tdmap_map::policy::bind_block). */
static int owner(size_t i, size_t pages, int t) {
  size_t o = i * t / pages;
  return o < (size_t)t ? (int)o : t - 1;
}

/* Checks the pages fully inside [p, p + len) against the expected policy. */
static int check_region(const char *call, char *p, size_t len, int cyclic) {
  char *start = (char *)(((unsigned long)p + PS - 1) / PS * PS);
  size_t pages = ((unsigned long)(p + len) / PS * PS - (unsigned long)start) / PS;
  int *st = malloc(pages * sizeof *st), ncpu = mai_get_num_cpu();
  for (size_t i = 0; i < len; i += PS) p[i] = 1; /* first touch */
  page_nodes(start, pages, st);
  for (size_t i = 0; i < pages; i++) {
    int want;
    if (cyclic) /* kernel interleave: round-robin from wherever it starts */
      want = i == 0 ? st[0] : next_node(st[i - 1]);
    else
      want = sys_cpu_node(owner(i, pages, ncpu));
    if (M == 1) want = nodes[0];
    if (st[i] != want) {
      printf("FAIL test_auto: %s: page %zu of %zu on node %d, %s wants %d\n", call, i, pages,
             st[i], cyclic ? "cyclic" : "bind_block", want);
      free(st);
      return 1;
    }
  }
  printf("test_auto: %s(%zu): %zu pages placed %s\n", call, len, pages, cyclic ? "cyclic" : "bind_block");
  free(st);
  return 0;
}

/* The policy name the log must show, from the test's own derivation. */
static const char *cyclic_or_block(void) {
  double factor, conn;
  return expect_cyclic(&factor, &conn) ? ": cyclic" : ": bind_block";
}

static int child(void) {
  double factor, conn;
  int cyclic = expect_cyclic(&factor, &conn), bad = 0;
  size_t big = 8 << 20; /* above MAI_AUTO_THRESHOLD (4 MiB) set by the parent */
  printf("test_auto: %d nodes, NUMA factor %.2f, connectivity %.2f: expect %s\n", M, factor, conn,
         cyclic ? "cyclic" : "bind_block");
  char *a = malloc(big);
  bad |= check_region("malloc", a, big, cyclic);
  char *b = calloc(big / 8, 8);
  bad |= check_region("calloc", b, big, cyclic);
  void *c = NULL;
  bad |= posix_memalign(&c, 4096, big) != 0 || check_region("posix_memalign", c, big, cyclic);
  char *d = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  bad |= d == MAP_FAILED || check_region("mmap", d, big, cyclic);
  char *e = aligned_alloc(64, big); /* C11, as tdmap's workloads allocate */
  bad |= !e || check_region("aligned_alloc", e, big, cyclic);
  char *g = memalign(4096, big);
  bad |= !g || check_region("memalign", g, big, cyclic);
  char *small = malloc(1000); /* below the threshold: not logged */
  free(a); free(b); free(c); free(e); free(g); free(small); munmap(d, big);
  return bad;
}

/* The static array, written for the first time here in main: its pages must be where the
 * policy libmai's constructor set before main puts them. */
static int static_child(void) {
  double factor, conn;
  int cyclic = expect_cyclic(&factor, &conn);
  small_grid[0] = 1;
  return check_region("static grid", grid, sizeof grid, cyclic);
}

/* Runs this program as `--MODE` with MAI_AUTO=1, the log at log_path and the threshold
 * `threshold` (NULL: libmai's default, the largest cache); returns its wait status. */
static int run_child(const char *mode, const char *threshold) {
  snprintf(log_path, sizeof log_path, "/tmp/mai-auto-%d.log", getpid());
  unlink(log_path);
  pid_t pid = fork();
  if (pid == 0) {
    setenv("MAI_AUTO", "1", 1);
    setenv("MAI_AUTO_LOG", log_path, 1);
    if (threshold) setenv("MAI_AUTO_THRESHOLD", threshold, 1);
    execl("/proc/self/exe", "test_auto", mode, (char *)NULL);
    _exit(127);
  }
  int status;
  waitpid(pid, &status, 0);
  return status;
}

/* Counts the log lines holding `what` (and `and`, if not NULL), echoing the log once. */
static int log_count(const char *what, const char *and) {
  FILE *f = fopen(log_path, "r");
  if (!f) return -1;
  char line[512];
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    if (!and) printf("log| %s", line);
    n += strstr(line, what) != NULL && (!and || strstr(line, and) != NULL);
  }
  fclose(f);
  return n;
}

static void t_auto(void) {
  /* A fixed threshold keeps the test fast where the LLC is hundreds of MiB; the
   * LLC-sized default is the unit test auto::tests::threshold_defaults_to_the_llc. */
  int status = run_child("--child", "4194304");
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
  CHECK(log_count("", NULL) >= 0, "no log at %s", log_path);
  int decision = log_count("MApp", ">= 4194304 bytes"), calls = 0, small = log_count("(1000)", "");
  const char *allocators[] = {"malloc(", "calloc(", "mmap(", "memalign(", "aligned_alloc("};
  for (int k = 0; k < 5; k++) calls += log_count(allocators[k], "");
  unlink(log_path);
  CHECK(decision == 1, "%d decision lines", decision);
  CHECK(calls >= 6, "%d allocation lines (malloc, calloc, posix_memalign, mmap, aligned_alloc, memalign)", calls);
  CHECK(small == 0, "a small allocation was logged");
}

/* Issue 22 must-show 3: the 64 MiB static array gets the policy under MAI_AUTO=1 with the
 * default threshold (the largest cache, MApp §3.2) where that cache is at most 64 MiB;
 * where it is larger (480 MiB on the development VM) the threshold is set to 64 MiB,
 * which also checks that an array exactly at the threshold is eligible. */
static void t_static(void) {
  long long llc = mai_cache_size(0);
  int status = run_child("--static-child", llc > (long long)sizeof grid ? "67108864" : NULL);
  CHECK(log_count("", NULL) >= 0, "no log at %s", log_path);
  char want[64];
  snprintf(want, sizeof want, "mai-auto: static grid(%zu) = 0x", sizeof grid);
  int placed = log_count(want, cyclic_or_block()), statics = log_count("static ", "");
  int small = log_count("small_grid", "");
  unlink(log_path);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d (placement above)", status);
  CHECK(placed == 1, "%d log lines '%s...%s'", placed, want, cyclic_or_block());
  CHECK(statics == 1, "%d static arrays placed, want only grid", statics);
  CHECK(small == 0, "the 1 MiB static array was placed");
}

static const struct test tests[] = {{"auto", t_auto}, {"static", t_static}};

int main(int argc, char **argv) {
  M = sys_nodes(nodes, MAXN);
  PS = sysconf(_SC_PAGESIZE);
  if (argc > 1 && strcmp(argv[1], "--child") == 0) return child();
  if (argc > 1 && strcmp(argv[1], "--static-child") == 0) return static_child();
  return run_tests("test_auto", tests, 2, argc, argv);
}
