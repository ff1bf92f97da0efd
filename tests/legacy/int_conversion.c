/* Int-to-pointer conversion without a cast, and an incompatible function pointer. */
#include <stdint.h>
static int value = 7;
static int get(long *p) { return (int)*p; }
int main(void) {
    intptr_t raw = (intptr_t)&value;
    int *p = raw;
    int (*f)(int *) = get;
    return *p == 7 && f != 0 ? 0 : 1;
}
