/* out = transpose(in) for N x N floats (default 1024: 4 MiB each), twice: reads along
 * rows, writes down columns, one line per write. */
#include "common.h"

int main(int argc, char **argv)
{
    long n = arg_size(argc, argv, 1024);
    float *in = aligned(n * n * sizeof *in), *out = aligned(n * n * sizeof *out);
    for (long i = 0; i < n * n; i++)
        in[i] = (float)(i & 1023);
    for (int r = 0; r < 2; r++)
        for (long i = 0; i < n; i++)
            for (long j = 0; j < n; j++)
                out[j * n + i] = in[i * n + j];
    printf("transpose %g\n", (double)out[n * n - 1]);
    return 0;
}
