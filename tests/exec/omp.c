/* tdmap exec's OpenMP test program: each thread of one parallel region reads its own
 * Cpus_allowed_list from /proc/thread-self/status; main prints them by OpenMP thread
 * number, one line each. */
#include <omp.h>
#include <stdio.h>
#include <string.h>

static char lists[64][256];

int main(void) {
#pragma omp parallel
  {
    int t = omp_get_thread_num();
    char line[256];
    FILE *f = fopen("/proc/thread-self/status", "r");
    while (t < 64 && f && fgets(line, sizeof line, f))
      if (!strncmp(line, "Cpus_allowed_list:", 18)) {
        line[strcspn(line, "\n")] = 0;
        strcpy(lists[t], line + 18 + strspn(line + 18, " \t"));
      }
    if (f) fclose(f);
  }
  int n = omp_get_max_threads();
  for (int i = 0; i < n && i < 64; i++) printf("thread %d: %s\n", i, lists[i]);
  return 0;
}
