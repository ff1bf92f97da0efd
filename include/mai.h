/*
 * mai.h - libmai, the Minas memory-affinity interface (MAi) for C.
 *
 * Minas (Ribeiro et al., minas-geophysics.txt) gives numerical programs array-oriented
 * memory policies (MAi, §3.1), machine queries (numarch, §3.3) and an automatic policy
 * choice (MApp, §3.2). This is tdmap's implementation (crates/mai), built as
 * target/{debug,release}/libmai.so and libmai.a:
 *
 *     cc prog.c -Iinclude -Ltarget/release -lmai           (shared)
 *     cc prog.c -Iinclude target/release/libmai.a -lhwloc -lscotch -lm -ldl -lpthread
 *
 * Nodes and CPUs are the kernel's (OS) numbers, as in numactl and libnuma. A policy
 * places every page of an array with move_pages/mbind; page i is the i-th page of the
 * array (arrays from mai_alloc_* are page-aligned). A policy may be applied again at any
 * time (MAi's "changing an array's policy while the program runs"). Apply policies while
 * no other thread writes the array.
 *
 * Differences from the original MAi header: allocation takes sizes (no type code);
 * policies return a status instead of void; mai_bind_all takes the node list,
 * mai_random a seed; mai_arraynodes and mai_print_pagenodes take the array.
 *
 * ERRORS. Functions returning int return -1 (pointers: NULL; sizes: -1) and set errno:
 *   EFAULT  the pointer was not returned by mai_alloc_* (or was freed): nothing happens;
 *   EINVAL  a size, count or dimension is zero, overflows or is out of range; a bad
 *           prime; mai_bind_planes on a non-3-D array; a malformed configuration file,
 *           or one that is not format "tdmap-mapping" version 1 (docs/formats.md);
 *   ENODEV  a node or CPU that this machine does not have;
 *   ENOENT  (and other open errors) a configuration file that cannot be read;
 *   EIO     the machine could not be discovered, or an internal error;
 *   other   the kernel's errno from mbind/move_pages (e.g. ENOMEM, EBUSY, EPERM).
 * No function panics or aborts on bad input. Set MAI_DEBUG=1 to print each error's
 * message on stderr.
 *
 * AUTOMATIC MODE (MApp §3.2). libmai defines malloc, calloc, posix_memalign,
 * aligned_alloc, memalign and mmap (forwarding to glibc). With MAI_AUTO=1 in the environment, each allocation of at least
 * the size of the highest-level cache (MApp's "eligible array"; MAI_AUTO_THRESHOLD=bytes
 * overrides) gets the policy picked for the machine:
 *   cyclic      if NUMA factor < 2.0 and >= 50% of node pairs are one hop apart (many
 *               interconnections): kernel interleave over all nodes;
 *   bind_block  otherwise (high NUMA factor or few links): one block per thread
 *               (OMP_NUM_THREADS or one per CPU, placed compactly) on its node.
 * The choice and each array are logged on stderr, or appended to the file MAI_AUTO_LOG.
 * Works when the program links libmai or runs with LD_PRELOAD=libmai.so.
 */
#ifndef MAI_H
#define MAI_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Policy codes returned by mai_mempol. */
enum mai_policy {
  MAI_FIRST_TOUCH = 0, MAI_CYCLIC = 1, MAI_CYCLIC_BLOCK = 2, MAI_SKEW_MAPP = 3,
  MAI_PRIME_MAPP = 4, MAI_BIND_ALL = 5, MAI_BIND_BLOCK = 6, MAI_RANDOM = 7,
  MAI_NEXT_TOUCH = 8, MAI_MIGRATED = 9
};

/* ---- set-up and allocation ---- */

/* Discovers the machine. config: NULL (or ""), or a `tdmap map --format json` file whose
 * thread -> CPU mapping becomes the threads' placement (see mai_bind_thread).
 * Optional: every function discovers the machine on first use. */
int mai_init(const char *config);
/* Frees every array still allocated. */
int mai_final(void);
/* Zeroed, page-aligned, contiguous row-major arrays of nx [x ny [x nz]] items of
 * `item` bytes (use as double (*a)[ny] = mai_alloc_2D(nx, ny, sizeof(double))).
 * NULL + EINVAL on a zero size or overflow. */
void *mai_alloc_1D(size_t nx, size_t item);
void *mai_alloc_2D(size_t nx, size_t ny, size_t item);
void *mai_alloc_3D(size_t nx, size_t ny, size_t nz, size_t item);
/* Frees an array from mai_alloc_*; EFAULT for any other pointer. */
int mai_free_array(void *p);

/* ---- memory policies (Minas §3.1); M = number of nodes, nodes in OS order ---- */

/* Page i on node i mod M. */
int mai_cyclic(void *p);
/* Blocks of `block` pages round-robin: page i on node (i / block) mod M. */
int mai_cyclic_block(void *p, long block);
/* Page i on node (i + floor(i/M) + 1) mod M. */
int mai_skew_mapp(void *p);
/* Cyclic on `prime` virtual nodes (a prime >= M; 0 = the smallest), folded cyclically
 * onto the M nodes: page i on node (i mod prime) mod M. */
int mai_prime_mapp(void *p, int prime);
/* Pages on the n nodes listed, cyclically within the set (page i on nodes[i mod n]);
 * nodes NULL or n 0: all on the calling thread's node. */
int mai_bind_all(void *p, const int *nodes, int n);
/* One contiguous block per thread, on that thread's node (threads: mai_set_threads,
 * mai_set_thread_cpus, mai_bind_threads_file, mai_init(config); default
 * OMP_NUM_THREADS or one per CPU, compact). With T threads, page i goes to the node of
 * thread floor(i * T / pages). */
int mai_bind_block(void *p);
/* bind_block by rows (2-D) or planes (3-D): page i goes to the node of thread
 * floor(r * T / nx), r the row of the page's first element. */
int mai_bind_rows(void *p);
/* bind_block by columns: thread floor(c * T / ny), c the column of the page's first
 * element. */
int mai_bind_columns(void *p);
/* 3-D bind_block by planes of the first dimension; EINVAL if p is not 3-D. */
int mai_bind_planes(void *p);
/* Uniform random nodes, reproducible for a seed. */
int mai_random(void *p, unsigned long seed);
/* Next-touch: each page moves to the node of the next thread that touches it (the array
 * is protected and a SIGSEGV handler migrates pages on access). At most 64 arrays at once. */
int mai_next_touch(void *p);
/* The OS node the last policy or migration planned for page `page` (for checks);
 * -1 + EINVAL if no placement was planned (first touch, next touch). */
int mai_expected_node(void *p, size_t page);

/* ---- migration ---- */

/* Moves the pages of rows [start, start+n) (planes of a 3-D array) to `node`. */
int mai_migrate_rows(void *p, int node, size_t start, size_t n);
/* Moves the pages holding columns [start, start+n) of every row to `node`. */
int mai_migrate_columns(void *p, int node, size_t start, size_t n);
/* Spreads the pages cyclically over the nodes whose bits are set in `nodes`. */
int mai_migrate_scatter(void *p, unsigned long nodes);
/* Moves every page to `node`. */
int mai_migrate_gather(void *p, int node);

/* ---- threads ---- */

/* n threads, thread t on the t-th CPU in topology order. */
int mai_set_threads(int n);
/* Thread t on OS CPU cpus[t]. */
int mai_set_thread_cpus(const int *cpus, int n);
/* Thread t on the CPU `tdmap map --format json > FILE` gave it ("mapping"[t].os). */
int mai_bind_threads_file(const char *path);
/* Pins the calling thread to thread t's CPU (e.g. mai_bind_thread(omp_get_thread_num()));
 * returns the OS CPU. */
int mai_bind_thread(int t);
/* Pins the calling thread to OS CPU cpu. */
int mai_bind_cpu(int cpu);
/* OS CPU of thread t. */
int mai_thread_cpu(int t);

/* ---- queries and diagnostics (numarch, Minas §3.3) ---- */

int mai_get_num_nodes(void);
int mai_get_num_cpu(void);
/* OS node numbers into nodes[0..max); returns the number of nodes. */
int mai_get_nodes(int *nodes, int max);
/* OS CPUs of `node` into cpus[0..max); returns how many. */
int mai_node_cpus(int node, int *cpus, int max);
/* Node of OS CPU `cpu`. */
int mai_cpu_node(int cpu);
/* Bytes of the level-`level` data cache of CPU 0 (0 = the highest level); 0 if none. */
long long mai_cache_size(int level);
/* Free memory of `node` in bytes. */
long long mai_node_free_memory(int node);
/* Largest remote/local distance ratio (1.0 on one node). */
double mai_numa_factor(void);
/* Distinct nodes holding the array's pages into nodes[0..max); returns how many. */
int mai_arraynodes(void *p, int *nodes, int max);
/* Prints "page I node N" for every page (N = -2: never touched) to stdout. */
int mai_print_pagenodes(void *p);
/* Prints the array's policy and returns its code (enum mai_policy). */
int mai_mempol(void *p);
/* Seconds the last policy placement or migration took. */
double mai_get_time_pmigration(void);

#ifdef __cplusplus
}
#endif
#endif /* MAI_H */
