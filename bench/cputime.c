/* CPU time of a command, for `make bench-startup`: cputime N CMD ARGS... runs CMD N
 * times (posix_spawn, stdout and stderr to /dev/null, the environment inherited) and
 * prints the user and system CPU time per run in milliseconds, from
 * getrusage(RUSAGE_CHILDREN), which counts the children only (not this program, nor a
 * shell or `env` in front). Exits 1 if a run fails. */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>

extern char **environ;

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: cputime N CMD [ARGS...]\n");
    return 2;
  }
  long n = strtol(argv[1], NULL, 10);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  for (long i = 0; i < n; i++) {
    pid_t pid;
    int status;
    if (posix_spawnp(&pid, argv[2], &fa, NULL, argv + 2, environ) != 0 ||
        waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "cputime: %s failed\n", argv[2]);
      return 1;
    }
  }
  struct rusage ru;
  getrusage(RUSAGE_CHILDREN, &ru);
  printf("%.4f %.4f\n", (ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3) / n,
         (ru.ru_stime.tv_sec * 1e3 + ru.ru_stime.tv_usec / 1e3) / n);
  return 0;
}
