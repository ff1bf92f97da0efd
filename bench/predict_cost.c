/* What predicting each access costs in the program's thread, against counting it
 * (`make bench-predict-cost`; docs/bench-trace.md, "Next"): a 3-point stencil over 1 Mi
 * doubles, 20 sweeps, calls a non-inlined callback per load and store, as an
 * instrumented build does. `count` only counts (the floor's callback); `predict` keeps
 * the last accesses and predicts each as a[i-k] + (a[i-k] - a[i-2k]) with a[i-k]'s size
 * and write flag, for the distance k (1-32) that predicted the last miss, and counts a
 * run of hits or writes a literal per miss (crates/trace/examples/predict.rs measures
 * how many symbols that leaves of a trace). Prints CPU time per access of each, and
 * their ratio, measured side by side in one run. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define K 32
#define RING (2 * K + 2)

static struct {
    uint64_t addr[RING], sw[RING], out[1 << 16];
    unsigned at, k, outn;
    uint64_t seen, run, hits;
} st;

__attribute__((noinline)) static void count(uint64_t addr, uint64_t sw) {
    (void)addr;
    (void)sw;
    st.seen++;
}

static inline unsigned back(unsigned n) {
    unsigned j = st.at + RING - n;
    return j >= RING ? j - RING : j;
}

__attribute__((noinline)) static void miss(uint64_t addr, uint64_t sw) {
    if (st.run) {
        st.out[st.outn++ & 0xffff] = st.run;
        st.run = 0;
    }
    for (unsigned k = 1; k <= K; k++)
        if (2 * st.addr[back(k)] - st.addr[back(2 * k)] == addr && st.sw[back(k)] == sw) {
            st.k = k;
            break;
        }
    st.out[st.outn++ & 0xffff] = addr ^ sw;
}

__attribute__((noinline)) static void predict(uint64_t addr, uint64_t sw) {
    st.seen++;
    unsigned k = st.k;
    if (2 * st.addr[back(k)] - st.addr[back(2 * k)] == addr && st.sw[back(k)] == sw) {
        st.run++;
        st.hits++;
    } else {
        miss(addr, sw);
    }
    st.addr[st.at] = addr;
    st.sw[st.at] = sw;
    if (++st.at == RING)
        st.at = 0;
}

typedef void (*callback)(uint64_t, uint64_t);

static double sweep(callback f, double *a, double *b, long n, int reps) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    for (int r = 0; r < reps; r++)
        for (long i = 1; i < n - 1; i++) {
            f((uint64_t)&a[i - 1], 3 << 1);
            f((uint64_t)&a[i], 3 << 1);
            f((uint64_t)&a[i + 1], 3 << 1);
            b[i] = a[i - 1] + a[i] + a[i + 1];
            f((uint64_t)&b[i], 3 << 1 | 1);
        }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    return (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
}

int main(void) {
    long n = 1 << 20;
    int reps = 20;
    double *a = calloc((size_t)n, sizeof *a), *b = calloc((size_t)n, sizeof *b);
    if (!a || !b)
        return 1;
    double acc = 4.0 * (double)(n - 2) * reps;
    double tc = sweep(count, a, b, n, reps), tp = sweep(predict, a, b, n, reps);
    double tc2 = sweep(count, a, b, n, reps), tp2 = sweep(predict, a, b, n, reps);
    tc = tc < tc2 ? tc : tc2;
    tp = tp < tp2 ? tp : tp2;
    printf("CPU time per access (best of 2): count %.2f ns, predict %.2f ns; predict/count %.2f;"
           " %.1f %% predicted, %.4f symbols per access\n",
           1e9 * tc / acc, 1e9 * tp / acc, tp / tc, 100.0 * (double)st.hits / (double)(2 * acc),
           (double)(st.outn) / (2 * acc));
    return b[5] != 0;
}
