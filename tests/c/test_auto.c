/* Automatic mode (MApp §3.2): re-runs itself with MAI_AUTO=1 and a log file; the child
 * allocates large arrays through malloc, calloc, posix_memalign, aligned_alloc, memalign
 * and mmap and checks that
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

static void t_auto(void) {
  snprintf(log_path, sizeof log_path, "/tmp/mai-auto-%d.log", getpid());
  unlink(log_path);
  pid_t pid = fork();
  if (pid == 0) {
    setenv("MAI_AUTO", "1", 1);
    setenv("MAI_AUTO_LOG", log_path, 1);
    /* A fixed threshold keeps the test fast where the LLC is hundreds of MiB; the
     * LLC-sized default is the unit test auto::tests::threshold_defaults_to_the_llc. */
    setenv("MAI_AUTO_THRESHOLD", "4194304", 1);
    execl("/proc/self/exe", "test_auto", "--child", (char *)NULL);
    _exit(127);
  }
  int status;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
  FILE *f = fopen(log_path, "r");
  CHECK(f, "no log at %s", log_path);
  char line[512];
  int decision = 0, calls = 0, small = 0;
  while (fgets(line, sizeof line, f)) {
    printf("log| %s", line);
    decision += strstr(line, "MApp") != NULL && strstr(line, ">= 4194304 bytes") != NULL;
    calls += strstr(line, "malloc(") || strstr(line, "calloc(") || strstr(line, "mmap(") ||
             strstr(line, "memalign(") || strstr(line, "aligned_alloc(");
    small += strstr(line, "(1000)") != NULL;
  }
  fclose(f);
  unlink(log_path);
  CHECK(decision == 1, "%d decision lines", decision);
  CHECK(calls >= 6, "%d allocation lines (malloc, calloc, posix_memalign, mmap, aligned_alloc, memalign)", calls);
  CHECK(small == 0, "a small allocation was logged");
}

static const struct test tests[] = {{"auto", t_auto}};

int main(int argc, char **argv) {
  M = sys_nodes(nodes, MAXN);
  PS = sysconf(_SC_PAGESIZE);
  if (argc > 1 && strcmp(argv[1], "--child") == 0) return child();
  return run_tests("test_auto", tests, 1, argc, argv);
}
