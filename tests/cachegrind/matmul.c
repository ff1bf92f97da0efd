/* Naive i-j-k product of N x N doubles (default 192): B is walked down its columns, a
 * stride of N x 8 bytes that conflicts in the L1's sets. */
#include "common.h"

int main(int argc, char **argv)
{
    long n = arg_size(argc, argv, 192);
    double *a = aligned(n * n * sizeof *a), *b = aligned(n * n * sizeof *b);
    double *c = aligned(n * n * sizeof *c);
    for (long i = 0; i < n * n; i++) {
        a[i] = (double)(i % 7);
        b[i] = (double)(i % 5);
    }
    for (long i = 0; i < n; i++)
        for (long j = 0; j < n; j++) {
            double s = 0;
            for (long k = 0; k < n; k++)
                s += a[i * n + k] * b[k * n + j];
            c[i * n + j] = s;
        }
    printf("matmul %g\n", c[n * n - 1] + c[n / 2]);
    return 0;
}
