/* stencil1d with a hand-written sense-reversing spin barrier instead of
 * pthread_barrier_wait, as pthreads codes that avoid the futex often have: an atomic
 * counter, and a flag that waiting threads poll with plain (volatile) loads. The
 * computation, sharing and checksum value are stencil1d's; only the name differs.
 * Waiting threads poll without yielding, so most of a traced run is flag reads: the
 * case `tdmap trace` must collapse (issue 17, must-show 5 compares the trace sizes of
 * `spinbar` and `stencil1d` at 8 threads).
 * Usage: spinbar THREADS [ROWS_PER_THREAD [REPEAT]] */
#include "common.h"

/* Counter and flag on their own line, so polling touches nothing else. */
static struct {
    int count;
    volatile int sense;
} __attribute__((aligned(LINE))) spin;
static int spin_threads;
static __thread int my_sense; /* each thread's sense of the current episode */

static void spin_init(int t)
{
    spin.count = spin_threads = t;
}

/* The last thread to arrive resets the counter and flips the flag; the others poll the
 * flag until it matches their own flipped sense. */
static void spin_wait(void)
{
    my_sense = !my_sense;
    if (__atomic_sub_fetch(&spin.count, 1, __ATOMIC_ACQ_REL) == 0) {
        spin.count = spin_threads;
        __atomic_store_n(&spin.sense, my_sense, __ATOMIC_RELEASE);
    } else {
        while (spin.sense != my_sense)
            __builtin_ia32_pause();
        /* One acquire load once the flip is seen (gcc's thread sanitizer, behind `tdmap
         * gcc`, has no fences): the others' writes before the barrier are visible. */
        (void)__atomic_load_n(&spin.sense, __ATOMIC_ACQUIRE);
    }
}

#define NAME "spinbar"
#define BARRIER_INIT(t) spin_init(t)
#define BARRIER_WAIT() spin_wait()
#include "stencil1d.c"
