#!/usr/bin/env bash
# Start-up cost of `tdmap map` (`make bench-startup`, issue 22 item 9): the CPU time
# (user + system, getrusage of the children: bench/cputime.c) of mapping a 64-thread
# matrix, with hwloc loading every plugin as it does by default
# (TDMAP_HWLOC_ALL_PLUGINS=1: "before") and with only the plugins the source needs
# (crates/topo/src/discover/components.rs: "after"), side by side in one run. ROUNDS
# rounds of REPS runs alternate before and after, so that a busy machine slows both
# alike; each figure is the median over the rounds of the mean per run. Also `tdmap
# --version` (the process's fixed cost: exec, dynamic linking, glibc's start-up) and
# /bin/true. Measured, on this machine; TDMAP= another binary.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-10}
REPS=${REPS:-50}
OUT=${BENCH_DIR:-target/bench-startup}
TDMAP=${TDMAP:-target/release/tdmap}
mkdir -p "$OUT"
if [ "$TDMAP" = target/release/tdmap ]; then cargo build --release -q --bin tdmap; fi
gcc -O2 -Wall -o "$OUT/cputime" bench/cputime.c

# A 64-thread matrix: pairs (2k, 2k+1) share most, every other pair a little.
awk 'BEGIN { n = 64; srand(1)
  for (i = 0; i < n; i++) for (j = 0; j <= i; j++) w[i, j] = w[j, i] = (i == j) ? 0 : (int(i / 2) == int(j / 2) ? 100 : int(rand() * 6))
  for (i = 0; i < n; i++) { row = w[i, 0]; for (j = 1; j < n; j++) row = row "," w[i, j]; print row } }' > "$OUT/m64.csv"

# shellcheck source=bench/lib.sh
. bench/lib.sh

# User + system ms per run of "$@", the mean of REPS runs.
cpu_ms() { "$OUT/cputime" "$REPS" "$@" | awk '{printf "%.4f\n", $1 + $2}'; }

# TITLE ARGS...: `tdmap ARGS` before and after, the rounds interleaved.
compare() {
  local title=$1; shift
  local b a
  : > "$OUT/before" ; : > "$OUT/after"
  for _ in $(seq "$ROUNDS"); do
    TDMAP_HWLOC_ALL_PLUGINS=1 cpu_ms "$TDMAP" "$@" >> "$OUT/before"
    cpu_ms "$TDMAP" "$@" >> "$OUT/after"
  done
  b=$(median < "$OUT/before"); a=$(median < "$OUT/after")
  printf '%-44s %8.2f ms %8.2f ms %7.2fx\n' "$title" "$b" "$a" "$(awk -v a="$a" -v b="$b" 'BEGIN{print a/b}')"
}

echo "CPU time per run (user + system), median of $ROUNDS rounds x $REPS runs, $(nproc) CPUs, $(uname -r), load average $(cut -d" " -f1 /proc/loadavg)"
printf '%-44s %11s %11s %8s\n' "command" "before" "after" "after/before"
compare "tdmap map, 64 threads, -m xeon-x7550-4s" map --matrix "$OUT/m64.csv" -m xeon-x7550-4s
compare "tdmap map, 64 threads, this machine" map --matrix "$OUT/m64.csv" --oversubscribe
compare "tdmap topo -m xeon-x7550-4s" topo -m xeon-x7550-4s
compare "tdmap --version (no hwloc)" --version
printf '%-44s %11s %8.2f ms\n' "/bin/true (a process's floor here)" "" "$(for _ in $(seq "$ROUNDS"); do cpu_ms /bin/true; done | median)"
