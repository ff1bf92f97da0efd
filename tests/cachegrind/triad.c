/* STREAM's triad over three arrays of N doubles (default 3 x 1 MiB), 16 times. */
#include "common.h"

int main(int argc, char **argv)
{
    long n = arg_size(argc, argv, 131072);
    double *a = aligned(n * sizeof *a), *b = aligned(n * sizeof *b), *c = aligned(n * sizeof *c);
    for (long i = 0; i < n; i++) {
        b[i] = (double)i;
        c[i] = (double)(n - i);
    }
    for (int r = 0; r < 16; r++)
        for (long i = 0; i < n; i++)
            a[i] = b[i] + 3.0 * c[i];
    double s = 0;
    for (long i = 0; i < n; i += 64)
        s += a[i];
    printf("triad %g\n", s);
    return 0;
}
