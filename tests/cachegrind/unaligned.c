/* 8-byte loads at addresses 8k+3 over an N-byte buffer (default 1 MiB), 64 passes: one
 * load in eight crosses a 64-byte line, which both tools must count as one access that
 * touches two lines. */
#include "common.h"
#include <string.h>

int main(int argc, char **argv)
{
    long n = arg_size(argc, argv, 1 << 20);
    unsigned char *buf = aligned(n + 16);
    uint64_t *init = (uint64_t *)buf;
    for (long i = 0; i < (n + 16) / 8; i++)
        init[i] = (uint64_t)i * 0x9E3779B97F4A7C15ull;
    uint64_t s = 0;
    for (int r = 0; r < 64; r++)
        for (long i = 0; i + 8 <= n; i += 8) {
            uint64_t v;
            memcpy(&v, buf + i + 3, 8);
            s ^= v;
        }
    printf("unaligned %llx\n", (unsigned long long)s);
    return 0;
}
