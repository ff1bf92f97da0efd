/* Calls setuid(getuid()) N times while two threads write their memory, under tdmap's
 * inject runtime. In a multi-threaded program glibc runs its set-id signal handler on
 * every thread, the runtime's handler thread included, and that handler writes a
 * counter on the caller's stack: were that page write-protected, the handler thread
 * would wait on its own protection. Nothing may hang; prints "setuid N".
 * Usage: setuid N */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PER_THREAD (4L << 20)

static volatile int stop;
static unsigned char *buf;

static void *work(void *arg)
{
    long k = (long)arg;
    while (!stop)
        for (long i = 0; i < PER_THREAD; i += 4096)
            buf[k * PER_THREAD + i]++;
    return NULL;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000;
    buf = calloc(2, PER_THREAD);
    if (!buf)
        return 1;
    pthread_t t[2];
    for (long k = 0; k < 2; k++)
        pthread_create(&t[k], NULL, work, (void *)k);
    for (long i = 0; i < n; i++) {
        /* Fresh stack pages for each call: glibc's set-id command lands among them. */
        volatile char pad[8192];
        memset((char *)pad, (int)i, sizeof pad);
        if (setuid(getuid()) != 0) {
            perror("setuid");
            return 1;
        }
        if (pad[100] != (char)i)
            return 3;
    }
    stop = 1;
    for (int k = 0; k < 2; k++)
        pthread_join(t[k], NULL);
    printf("setuid %ld\n", n);
    return 0;
}
