/* The three error cases of issue 9, and their neighbours: each returns the code and sets
 * the errno that mai.h documents, changes nothing and does not crash. */
#include "check.h"
#include "../../include/mai.h"

#define EXPECT_ERR(call, code)                                                       \
  do {                                                                               \
    errno = 0;                                                                       \
    long rc_ = (long)(call);                                                         \
    CHECK(rc_ == -1 && errno == (code), "%s returned %ld, errno %d (%s), want -1, %s", \
          #call, rc_, errno, strerror(errno), #code);                               \
  } while (0)

static void t_foreign_pointer(void) {
  char stack[8192];
  double *heap = malloc(1 << 20);
  double *a = mai_alloc_1D(1024, 8);
  CHECK(heap && a, "allocations");
  EXPECT_ERR(mai_cyclic(heap), EFAULT);
  EXPECT_ERR(mai_bind_block(stack), EFAULT);
  EXPECT_ERR(mai_skew_mapp(NULL), EFAULT);
  EXPECT_ERR(mai_random(a + 1, 1), EFAULT); /* inside a libmai array, not its start */
  EXPECT_ERR(mai_next_touch(heap), EFAULT);
  EXPECT_ERR(mai_migrate_gather(heap, 0), EFAULT);
  EXPECT_ERR(mai_mempol(heap), EFAULT);
  EXPECT_ERR(mai_arraynodes(heap, NULL, 0), EFAULT);
  EXPECT_ERR(mai_free_array(heap), EFAULT);
  CHECK(mai_free_array(a) == 0, "free");
  EXPECT_ERR(mai_free_array(a), EFAULT); /* twice */
  EXPECT_ERR(mai_cyclic(a), EFAULT);     /* after free */
  heap[0] = 1; /* still ours, untouched by libmai */
  free(heap);
  printf("foreign pointers: EFAULT, no crash\n");
}

static void t_size_zero(void) {
  errno = 0;
  CHECK(mai_alloc_1D(0, 8) == NULL && errno == EINVAL, "1D nx=0: errno %d", errno);
  errno = 0;
  CHECK(mai_alloc_2D(10, 0, 8) == NULL && errno == EINVAL, "2D ny=0: errno %d", errno);
  errno = 0;
  CHECK(mai_alloc_3D(2, 2, 2, 0) == NULL && errno == EINVAL, "item=0: errno %d", errno);
  errno = 0;
  CHECK(mai_alloc_2D((size_t)-1, 4, 8) == NULL && errno == EINVAL, "overflow: errno %d", errno);
  double *a = mai_alloc_2D(4, 1024, 8);
  CHECK(a, "alloc");
  EXPECT_ERR(mai_cyclic_block(a, 0), EINVAL);
  EXPECT_ERR(mai_migrate_rows(a, 0, 0, 0), EINVAL);
  EXPECT_ERR(mai_migrate_rows(a, 0, 3, 2), EINVAL); /* past the last row */
  EXPECT_ERR(mai_migrate_columns(a, 0, 0, 0), EINVAL);
  EXPECT_ERR(mai_set_threads(0), EINVAL);
  EXPECT_ERR(mai_prime_mapp(a, 4), EINVAL); /* not a prime */
  CHECK(mai_mempol(a) == MAI_FIRST_TOUCH, "nothing was applied");
  mai_free_array(a);
  printf("sizes of zero: EINVAL, no crash\n");
}

static void t_no_such_node(void) {
  int bad = 4096, neg = -1;
  double *a = mai_alloc_1D(4096, 8);
  CHECK(a, "alloc");
  EXPECT_ERR(mai_bind_all(a, &bad, 1), ENODEV);
  EXPECT_ERR(mai_bind_all(a, &neg, 1), ENODEV);
  EXPECT_ERR(mai_migrate_gather(a, bad), ENODEV);
  EXPECT_ERR(mai_migrate_rows(a, bad, 0, 1), ENODEV);
  EXPECT_ERR(mai_migrate_scatter(a, 1UL << 63), ENODEV);
  EXPECT_ERR(mai_node_cpus(bad, NULL, 0), ENODEV);
  EXPECT_ERR(mai_node_free_memory(bad), ENODEV);
  EXPECT_ERR(mai_cpu_node(100000), ENODEV);
  EXPECT_ERR(mai_bind_cpu(100000), ENODEV);
  int cpus[1] = {100000};
  EXPECT_ERR(mai_set_thread_cpus(cpus, 1), ENODEV);
  CHECK(mai_mempol(a) == MAI_FIRST_TOUCH, "nothing was applied");
  mai_free_array(a);
  printf("nodes that do not exist: ENODEV, no crash\n");
}

static void t_config_file(void) {
  EXPECT_ERR(mai_init("/nonexistent/map.json"), ENOENT);
  char path[] = "/tmp/mai-map-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0, "mkstemp");
  const char *bad = "{\"mapping\": 3}";
  CHECK(write(fd, bad, strlen(bad)) == (ssize_t)strlen(bad), "write");
  close(fd);
  EXPECT_ERR(mai_bind_threads_file(path), EINVAL);
  /* What `tdmap map --format json` writes: thread 0 on the last CPU, thread 1 on CPU 0. */
  int last = mai_get_num_cpu() - 1;
  FILE *f = fopen(path, "w");
  const char *map = "{\"format\": \"tdmap-mapping\", \"version\": %d, \"machine\": \"this\","
                    " \"algorithm\": \"greedy\", \"threads\": 2, \"distance\": \"hops\", \"seed\": 0,"
                    " \"cost\": 0, \"compact_cost\": 0, \"random_cost\": 0, \"mapping\": ["
                    "{\"thread\": 0, \"pu\": %d, \"os\": %d, \"core\": 0, \"package\": 0, \"node\": 0},"
                    " {\"thread\": 1, \"pu\": 0, \"os\": 0, \"core\": 0, \"package\": 0, \"node\": 0}]}\n";
  fprintf(f, map, 99, last, last);
  fclose(f);
  EXPECT_ERR(mai_init(path), EINVAL); /* a version this libmai does not know */
  f = fopen(path, "w");
  fprintf(f, map, 1, last, last);
  fclose(f);
  CHECK(mai_init(path) == 0, "init with map: %s", strerror(errno));
  CHECK(mai_thread_cpu(0) == last && mai_thread_cpu(1) == 0, "threads %d %d", mai_thread_cpu(0), mai_thread_cpu(1));
  EXPECT_ERR(mai_thread_cpu(2), EINVAL);
  CHECK(mai_bind_thread(0) == last && sched_getcpu() == last, "bound to %d", sched_getcpu());
  unlink(path);
  printf("configuration file: thread 0 bound to CPU %d as the map file says\n", last);
}

static const struct test tests[] = {
  {"foreign_pointer", t_foreign_pointer}, {"size_zero", t_size_zero},
  {"no_such_node", t_no_such_node}, {"config_file", t_config_file},
};

int main(int argc, char **argv) {
  return run_tests("test_errors", tests, sizeof tests / sizeof *tests, argc, argv);
}
