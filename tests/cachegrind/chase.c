/* A pointer chase through N 64-byte nodes (default 4 MiB) in a random cyclic order
 * (Sattolo's shuffle with a fixed LCG), walked 48 times round: every step a dependent
 * load from an unpredictable line. */
#include "common.h"

struct node {
    struct node *next;
    long pad[7];
};

int main(int argc, char **argv)
{
    long n = arg_size(argc, argv, 65536);
    struct node *v = aligned(n * sizeof *v);
    long *order = aligned(n * sizeof *order);
    uint64_t x = 88172645463325252ull;
    for (long i = 0; i < n; i++)
        order[i] = i;
    for (long i = n - 1; i > 0; i--) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        long j = (long)((x >> 33) % (uint64_t)i);
        long t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (long i = 0; i < n; i++)
        v[order[i]].next = &v[order[(i + 1) % n]];
    struct node *p = &v[0];
    for (long s = 0; s < 48 * n; s++)
        p = p->next;
    printf("chase %ld\n", (long)(p - v));
    return 0;
}
