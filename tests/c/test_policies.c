/* Each MAi policy's page -> node placement, read back with move_pages(..., NULL, status)
 * and compared with the policy's formula (Minas §3.1) computed here, in C. On a one-node
 * machine every formula gives node 0; in the VM harness (2 and 4 nodes) they differ. */
#include "check.h"
#include "../../include/mai.h"
#include <pthread.h>
#include <sched.h>

#define MAXN 64
static int nodes[MAXN], M;
static long PS;

typedef int (*rule)(size_t page, size_t pages, long arg);
static int r_cyclic(size_t i, size_t n, long a) { (void)n; (void)a; return nodes[i % M]; }
static int r_block(size_t i, size_t n, long b) { (void)n; return nodes[(i / b) % M]; }
static int r_skew(size_t i, size_t n, long a) { (void)n; (void)a; return nodes[(i + i / M + 1) % M]; }
static int r_prime(size_t i, size_t n, long p) { (void)n; return nodes[(i % p) % M]; }
static int smallest_prime(int m) {
  for (int p = m < 2 ? 2 : m;; p++) {
    int prime = 1;
    for (int d = 2; d * d <= p; d++) if (p % d == 0) prime = 0;
    if (prime) return p;
  }
}

/* Compares every page of p with the rule; names the first wrong page. */
static int placed_as(void *p, size_t pages, rule r, long arg, char *why, size_t len) {
  int *st = malloc(pages * sizeof *st);
  page_nodes(p, pages, st);
  for (size_t i = 0; i < pages; i++) {
    int want = r(i, pages, arg);
    if (st[i] != want || mai_expected_node(p, i) != want) {
      snprintf(why, len, "page %zu of %zu is on node %d, formula says %d (libmai planned %d)",
               i, pages, st[i], want, mai_expected_node(p, i));
      free(st);
      return 0;
    }
  }
  free(st);
  return 1;
}

static void setup(void) {
  M = sys_nodes(nodes, MAXN);
  PS = sysconf(_SC_PAGESIZE);
}

#define PAGES 61 /* prime, so no policy lines up with the array's end by luck */

static void t_numarch(void) {
  int got[MAXN];
  CHECK(mai_get_num_nodes() == M, "libmai %d nodes, sysfs %d", mai_get_num_nodes(), M);
  CHECK(mai_get_nodes(got, MAXN) == M && memcmp(got, nodes, M * sizeof(int)) == 0, "node list");
  CHECK(mai_get_num_cpu() == sysconf(_SC_NPROCESSORS_ONLN), "%d CPUs", mai_get_num_cpu());
  int cpus[1024], total = 0;
  for (int k = 0; k < M; k++) {
    int n = mai_node_cpus(nodes[k], cpus, 1024);
    CHECK(n > 0, "node %d has no CPU", nodes[k]);
    for (int c = 0; c < n; c++)
      CHECK(mai_cpu_node(cpus[c]) == nodes[k] && sys_cpu_node(cpus[c]) == nodes[k], "cpu %d", cpus[c]);
    total += n;
    CHECK(mai_node_free_memory(nodes[k]) > 0, "free memory of node %d", nodes[k]);
  }
  CHECK(total == mai_get_num_cpu(), "CPUs of nodes sum to %d", total);
  CHECK(mai_numa_factor() >= 1.0, "NUMA factor %f", mai_numa_factor());
  CHECK(M > 1 || mai_numa_factor() == 1.0, "one node, factor %f", mai_numa_factor());
  CHECK(mai_cache_size(0) >= mai_cache_size(1), "LLC %lld, L1 %lld", mai_cache_size(0), mai_cache_size(1));
  printf("numarch: %d nodes, %d CPUs, NUMA factor %.2f, LLC %lld bytes, node %d free %lld bytes\n",
         M, mai_get_num_cpu(), mai_numa_factor(), mai_cache_size(0), nodes[0],
         mai_node_free_memory(nodes[0]));
}

/* Allocates `pages` pages, fills them, applies the policy and compares every page. */
static void policy_case_n(const char *name, size_t pages, int (*apply)(void *, long), rule r, long arg) {
  char why[200];
  size_t n = pages * PS / sizeof(double);
  double *a = mai_alloc_1D(n, sizeof(double));
  CHECK(a, "alloc: %s", strerror(errno));
  for (size_t i = 0; i < n; i++) a[i] = (double)i;
  CHECK(apply(a, arg) == 0, "%s: %s", name, strerror(errno));
  CHECK(placed_as(a, pages, r, arg, why, sizeof why), "%s: %s", name, why);
  /* Placement keeps the data. */
  CHECK(a[n - 1] == (double)(n - 1) && a[n / 2] == (double)(n / 2), "%s data", name);
  printf("%s: %zu pages on %d nodes as the formula says (%.6f s)\n", name, pages, M,
         mai_get_time_pmigration());
  CHECK(mai_free_array(a) == 0, "free");
}

static void policy_case(const char *name, int (*apply)(void *, long), rule r, long arg) {
  policy_case_n(name, PAGES, apply, r, arg);
}

static int a_cyclic(void *p, long x) { (void)x; return mai_cyclic(p); }
static int a_block(void *p, long b) { return mai_cyclic_block(p, b); }
static int a_skew(void *p, long x) { (void)x; return mai_skew_mapp(p); }
static int a_prime(void *p, long x) { (void)x; return mai_prime_mapp(p, 0); }
static int a_prime7(void *p, long x) { (void)x; return mai_prime_mapp(p, 7); }

static void t_cyclic(void) {
  policy_case("cyclic", a_cyclic, r_cyclic, 0);
  /* More runs than libmai applies with mbind: the prefault + move_pages path. */
  policy_case_n("cyclic (move_pages path)", 601, a_cyclic, r_cyclic, 0);
  policy_case_n("skew_mapp (move_pages path)", 601, a_skew, r_skew, 0);
}
/* A deliberately wrong formula (node i+1 mod M): on two or more nodes this must fail,
 * naming page 0; the VM harness checks that it does, so the placement checks can fail. */
static int r_wrong(size_t i, size_t n, long a) { (void)n; (void)a; return nodes[(i + 1) % M]; }
static void t_wrong_cyclic(void) { policy_case("wrong_cyclic", a_cyclic, r_wrong, 0); }
static void t_cyclic_block(void) { policy_case("cyclic_block", a_block, r_block, 4); }
static void t_skew_mapp(void) { policy_case("skew_mapp", a_skew, r_skew, 0); }
static void t_prime_mapp(void) {
  policy_case("prime_mapp", a_prime, r_prime, smallest_prime(M));
  policy_case("prime_mapp(7)", a_prime7, r_prime, 7);
}

static int bindall_last(void *p, long x) { (void)x; return mai_bind_all(p, &nodes[M - 1], 1); }
static int r_last(size_t i, size_t n, long a) { (void)i; (void)n; (void)a; return nodes[M - 1]; }
static int bindall_set(void *p, long x) { (void)x; return mai_bind_all(p, nodes, M); }
static void t_bind_all(void) {
  policy_case("bind_all(last node)", bindall_last, r_last, 0);
  policy_case("bind_all(all nodes)", bindall_set, r_cyclic, 0);
}

/* Threads on the CPUs in reverse, so blocks go to the nodes from the last down. */
static int tcpu[1024], T;
static int r_bind_block(size_t i, size_t n, long a) { (void)a; return sys_cpu_node(tcpu[i * T / n]); }
static int a_bind_block(void *p, long x) { (void)x; return mai_bind_block(p); }
static void reverse_threads(void) {
  int n = mai_get_num_cpu();
  T = n;
  for (int t = 0; t < n; t++) tcpu[t] = n - 1 - t;
  mai_set_thread_cpus(tcpu, T);
}
static void t_bind_block(void) {
  reverse_threads();
  policy_case("bind_block", a_bind_block, r_bind_block, 0);
}

/* 2-D: NX rows of NY doubles, rows not page-aligned. */
#define NX 10
#define NY 6000
static int r_rows(size_t i, size_t n, long a) {
  (void)n; (void)a;
  size_t row = i * PS / (NY * sizeof(double));
  return sys_cpu_node(tcpu[row * T / NX]);
}
static int r_cols(size_t i, size_t n, long a) {
  (void)n; (void)a;
  size_t col = (i * PS / sizeof(double)) % NY;
  return sys_cpu_node(tcpu[col * T / NY]);
}
static void t_bind_rows_columns(void) {
  char why[200];
  reverse_threads();
  size_t pages = (NX * NY * sizeof(double) + PS - 1) / PS;
  double *a = mai_alloc_2D(NX, NY, sizeof(double));
  CHECK(a, "alloc");
  CHECK(mai_bind_rows(a) == 0, "%s", strerror(errno));
  CHECK(placed_as(a, pages, r_rows, 0, why, sizeof why), "rows: %s", why);
  CHECK(mai_bind_columns(a) == 0, "%s", strerror(errno));
  CHECK(placed_as(a, pages, r_cols, 0, why, sizeof why), "columns: %s", why);
  CHECK(mai_mempol(a) == MAI_BIND_BLOCK, "policy code");
  CHECK(mai_bind_planes(a) == -1 && errno == EINVAL, "planes on 2-D");
  mai_free_array(a);
  /* 3-D by planes: 6 planes of 3 x 1000 doubles. */
  double *b = mai_alloc_3D(6, 3, 1000, sizeof(double));
  CHECK(b && mai_bind_planes(b) == 0, "3-D planes");
  size_t bp = (6 * 3000 * sizeof(double) + PS - 1) / PS;
  int *st = malloc(bp * sizeof *st);
  page_nodes(b, bp, st);
  for (size_t i = 0; i < bp; i++) {
    size_t plane = i * PS / (3000 * sizeof(double));
    CHECK(st[i] == sys_cpu_node(tcpu[plane * T / 6]), "plane page %zu on %d", i, st[i]);
  }
  free(st);
  printf("bind_rows/columns/planes: every page on its thread's node\n");
  mai_free_array(b);
}

static void t_random(void) {
  int *st = malloc(256 * sizeof *st), used[MAXN] = {0};
  double *a = mai_alloc_1D(256 * PS / 8, 8);
  CHECK(a && mai_random(a, 42) == 0, "random");
  page_nodes(a, 256, st);
  for (int i = 0; i < 256; i++) {
    CHECK(st[i] == mai_expected_node(a, i), "page %d on %d, planned %d", i, st[i], mai_expected_node(a, i));
    for (int k = 0; k < M; k++) used[k] += st[i] == nodes[k];
  }
  for (int k = 0; k < M; k++) CHECK(used[k] > 256 / M / 3, "node %d got %d of 256 pages", nodes[k], used[k]);
  printf("random: 256 pages as planned, per node:");
  for (int k = 0; k < M; k++) printf(" %d", used[k]);
  printf("\n");
  free(st);
  mai_free_array(a);
}

static void t_migrate(void) {
  int *st = malloc(1024 * sizeof *st);
  size_t pages = (NX * NY * sizeof(double) + PS - 1) / PS;
  double *a = mai_alloc_2D(NX, NY, sizeof(double));
  int last = nodes[M - 1];
  CHECK(a && mai_migrate_gather(a, nodes[0]) == 0, "gather");
  page_nodes(a, pages, st);
  for (size_t i = 0; i < pages; i++) CHECK(st[i] == nodes[0], "gather page %zu on %d", i, st[i]);
  CHECK(mai_migrate_rows(a, last, 3, 2) == 0, "rows %s", strerror(errno));
  page_nodes(a, pages, st);
  size_t rb = NY * sizeof(double);
  for (size_t i = 0; i < pages; i++) {
    int in = (i + 1) * PS > 3 * rb && i * PS < 5 * rb;
    CHECK(st[i] == (in ? last : nodes[0]), "rows: page %zu on %d", i, st[i]);
  }
  CHECK(mai_migrate_gather(a, nodes[0]) == 0 && mai_migrate_columns(a, last, 0, 1) == 0, "columns");
  page_nodes(a, pages, st);
  for (size_t i = 0; i < pages; i++) {
    int in = 0;
    for (size_t r = 0; r < NX; r++) in |= i * PS <= r * rb && r * rb < (i + 1) * PS;
    CHECK(st[i] == (in ? last : nodes[0]), "columns: page %zu on %d", i, st[i]);
  }
  unsigned long mask = 0;
  for (int k = 0; k < M; k++) mask |= 1UL << nodes[k];
  CHECK(mai_migrate_scatter(a, mask) == 0, "scatter");
  page_nodes(a, pages, st);
  for (size_t i = 0; i < pages; i++) CHECK(st[i] == nodes[i % M], "scatter page %zu on %d", i, st[i]);
  int held[MAXN];
  CHECK(mai_arraynodes(a, held, MAXN) == M, "arraynodes %d", mai_arraynodes(a, NULL, 0));
  CHECK(mai_mempol(a) == MAI_MIGRATED, "policy");
  CHECK(mai_get_time_pmigration() > 0, "time %f", mai_get_time_pmigration());
  printf("migrate: gather, rows, columns and scatter put every page where asked\n");
  free(st);
  mai_free_array(a);
}

struct touch { double *a; size_t n; int cpu; };
static void *toucher(void *arg) {
  struct touch *t = arg;
  mai_bind_cpu(t->cpu);
  for (size_t i = 0; i < t->n; i += PS / 8) t->a[i] += 1;
  return NULL;
}
static void t_next_touch(void) {
  int st[32], cpus[1024];
  double *a = mai_alloc_1D(32 * PS / 8, 8);
  CHECK(a && mai_migrate_gather(a, nodes[0]) == 0, "gather");
  CHECK(mai_next_touch(a) == 0, "next touch %s", strerror(errno));
  CHECK(mai_mempol(a) == MAI_NEXT_TOUCH, "policy");
  int last = nodes[M - 1];
  CHECK(mai_node_cpus(last, cpus, 1024) > 0, "cpus of %d", last);
  struct touch t = {a, 32 * PS / 8, cpus[0]};
  pthread_t th;
  pthread_create(&th, NULL, toucher, &t);
  pthread_join(th, NULL);
  page_nodes(a, 32, st);
  for (int i = 0; i < 32; i++) CHECK(st[i] == last, "page %d on %d after a touch from CPU %d", i, st[i], cpus[0]);
  CHECK(a[0] == 1.0 && a[32 * PS / 8 - PS / 8] == 1.0, "data after next touch");
  printf("next_touch: 32 pages followed the toucher on CPU %d to node %d\n", cpus[0], last);
  mai_free_array(a);
}

static const struct test tests[] = {
  {"numarch", t_numarch}, {"cyclic", t_cyclic}, {"cyclic_block", t_cyclic_block},
  {"skew_mapp", t_skew_mapp}, {"prime_mapp", t_prime_mapp}, {"bind_all", t_bind_all},
  {"bind_block", t_bind_block}, {"bind_rows_columns", t_bind_rows_columns},
  {"random", t_random}, {"migrate", t_migrate}, {"next_touch", t_next_touch},
  {"wrong_cyclic", t_wrong_cyclic, 1},
};

int main(int argc, char **argv) {
  setup();
  return run_tests("test_policies", tests, sizeof tests / sizeof *tests, argc, argv);
}
