/* A 5-point Jacobi sweep over an N x N grid of doubles (default 512: 2 MiB per grid,
 * two grids), 8 sweeps swapping the grids. */
#include "common.h"

int main(int argc, char **argv)
{
    long n = arg_size(argc, argv, 512);
    double *u = aligned(n * n * sizeof *u), *w = aligned(n * n * sizeof *w);
    for (long i = 0; i < n * n; i++) {
        u[i] = (double)(i % 11);
        w[i] = 0;
    }
    for (int s = 0; s < 8; s++) {
        for (long i = 1; i < n - 1; i++)
            for (long j = 1; j < n - 1; j++)
                w[i * n + j] = 0.2 * (u[i * n + j] + u[(i - 1) * n + j] + u[(i + 1) * n + j] +
                                      u[i * n + j - 1] + u[i * n + j + 1]);
        double *t = u;
        u = w;
        w = t;
    }
    printf("stencil %g\n", u[n * n / 2 + n / 2]);
    return 0;
}
