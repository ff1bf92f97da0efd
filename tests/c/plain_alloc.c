/* A program that knows nothing of libmai (not linked with it): one 8 MiB malloc, written
 * and freed, and a 16 MiB static table. Run with LD_PRELOAD=libmai.so MAI_AUTO=1 both
 * must get an automatic policy. */
#include <stdlib.h>
#include <string.h>

static char table[16 << 20];

int main(void) {
  memset(table, 2, sizeof table);
  char *p = malloc(8 << 20);
  if (!p) return 1;
  memset(p, 1, 8 << 20);
  int ok = p[(8 << 20) - 1] == 1;
  free(p);
  return ok ? 0 : 1;
}
