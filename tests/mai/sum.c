/* A program that knows nothing of libmai: two arrays of MIB MiB each (argument, default
 * 4), one from malloc and one from calloc, and a static 4 MiB table, filled and summed.
 * It prints the sum only, so its stdout is the same with and without libmai's automatic
 * policies. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint8_t table[4 << 20];

int main(int argc, char **argv) {
  size_t n = (size_t)(argc > 1 ? atoi(argv[1]) : 4) << 20;
  uint8_t *a = malloc(n);
  uint8_t *b = calloc(n, 1);
  if (!a || !b) return 1;
  uint64_t sum = 0;
  for (size_t i = 0; i < n; i++) {
    a[i] = (uint8_t)(i * 7);
    b[i] = (uint8_t)(a[i] ^ 0x5a);
  }
  for (size_t i = 0; i < n; i++) sum += (uint64_t)a[i] * b[i];
  for (size_t i = 0; i < sizeof table; i++) table[i] = (uint8_t)(i * 3);
  for (size_t i = 0; i < sizeof table; i++) sum += table[i];
  printf("sum %llu\n", (unsigned long long)sum);
  free(a);
  free(b);
  return 0;
}
