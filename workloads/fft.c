/* 2-D FFT-like transform (NAS FT): an N*N complex matrix, N = T*ROWS_PER_THREAD, split
 * into T blocks of rows. Each thread runs radix-2 FFTs on its own rows, then an
 * all-to-all transpose (thread i builds rows of the transposed matrix from column block
 * i of every thread's rows), then FFTs on its rows of the transposed matrix.
 *
 * Sharing by construction: thread i reads an equal block of every other thread's rows
 * in the transpose, and every thread reads the same twiddle table, so every pair shares
 * the same number of lines. Expected: every pair equally.
 * Usage: fft THREADS [ROWS_PER_THREAD [REPEAT]]
 *   (ROWS_PER_THREAD a multiple of 4, THREADS*ROWS_PER_THREAD a power of two) */
#include "common.h"
#include <math.h>

struct cpx {
    double re, im;
};

/* Copies field by field: clang turns a whole-struct assignment into a memcpy that its
 * load/store instrumentation (behind `tdmap cc`) does not see. */
static inline void put(struct cpx *to, double re, double im)
{
    to->re = re;
    to->im = im;
}

static int T;
static long rows_per, n;
static struct cpx *a, *b, *twiddle; /* twiddle[k] = exp(-2 pi i k / n), k < n/2 */
static pthread_barrier_t bar;

/* In-place iterative radix-2 FFT of one row of length n (a power of two). */
static void fft_row(struct cpx *v)
{
    for (long i = 1, j = 0; i < n; i++) { /* bit-reversal permutation */
        long bit = n >> 1;
        for (; j & bit; bit >>= 1)
            j ^= bit;
        j |= bit;
        if (i < j) {
            double re = v[i].re, im = v[i].im;
            put(&v[i], v[j].re, v[j].im);
            put(&v[j], re, im);
        }
    }
    for (long len = 2; len <= n; len <<= 1)
        for (long s = 0; s < n; s += len)
            for (long k = 0; k < len / 2; k++) {
                const struct cpx *w = &twiddle[k * (n / len)];
                struct cpx *u = &v[s + k], *x = &v[s + k + len / 2];
                double tre = x->re * w->re - x->im * w->im, tim = x->re * w->im + x->im * w->re;
                double ure = u->re, uim = u->im;
                put(u, ure + tre, uim + tim);
                put(x, ure - tre, uim - tim);
            }
}

static void *work(void *arg)
{
    int id = (int)(intptr_t)arg;
    long r0 = id * rows_per, r1 = r0 + rows_per;
    uint64_t sum = 0;
    for (long r = r0; r < r1; r++)
        for (long c = 0; c < n; c++) {
            uint64_t h = mix((uint64_t)(r * n + c));
            put(&a[r * n + c], (double)(h & 0xffff) / 65536.0, (double)(h >> 48) / 65536.0);
        }
    for (long r = r0; r < r1; r++)
        fft_row(a + r * n);
    pthread_barrier_wait(&bar);
    for (long r = r0; r < r1; r++) /* all-to-all transpose */
        for (long c = 0; c < n; c++)
            put(&b[r * n + c], a[c * n + r].re, a[c * n + r].im);
    for (long r = r0; r < r1; r++)
        fft_row(b + r * n);
    pthread_barrier_wait(&bar); /* a is rewritten by the next repeat */
    for (long i = r0 * n; i < r1 * n; i++) {
        uint64_t re, im;
        memcpy(&re, &b[i].re, sizeof re);
        memcpy(&im, &b[i].im, sizeof im);
        sum += mix(re ^ (im * 3) ^ (uint64_t)i);
    }
    return (void *)(uintptr_t)sum;
}

int main(int argc, char **argv)
{
    parse_args(argc, argv, &T, &rows_per, 16);
    n = T * rows_per;
    if (rows_per % 4 || (n & (n - 1))) {
        fprintf(stderr,
                "%s: ROWS_PER_THREAD must be a multiple of 4 and THREADS*ROWS_PER_THREAD a power "
                "of two, got %d*%ld\n",
                argv[0], T, rows_per);
        return 2;
    }
    a = xalloc(sizeof(struct cpx) * (size_t)(n * n));
    b = xalloc(sizeof(struct cpx) * (size_t)(n * n));
    twiddle = xalloc(sizeof(struct cpx) * (size_t)(n / 2));
    for (long k = 0; k < n / 2; k++)
        put(&twiddle[k], cos(-2 * M_PI * (double)k / (double)n),
            sin(-2 * M_PI * (double)k / (double)n));
    pthread_barrier_init(&bar, NULL, (unsigned)T);
    print_checksum("fft", run_threads(T, work));
    return 0;
}
