/* Writes a static array 20 times, 10 ms apart, then prints "statics ok". Built with
 * `tdmap cc`, the runtime's own statics lie beside the array in the anonymous part of
 * .bss, which the injector may protect (tests/run_inject.rs). */
#include <stdio.h>
#include <unistd.h>

static volatile long a[4096];

int main(void) {
    for (int r = 0; r < 20; r++) {
        for (int i = 0; i < 4096; i++)
            a[i] = i + r;
        usleep(10000);
    }
    printf("statics ok\n");
    return 0;
}
