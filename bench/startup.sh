#!/usr/bin/env bash
# Start-up cost of `tdmap map` (`make bench-startup`, issue 22 item 9): the CPU time
# (user + system, getrusage of the children: bench/cputime.c) of mapping a 64-thread
# matrix, side by side in one run:
#   before      tdmap as it was at BASE (default f1d199d, main before this work), with
#               hwloc loading every plugin as it does by default (TDMAP_HWLOC_ALL_PLUGINS=1);
#   hwloc only  the same binary with only the plugins the source needs
#               (crates/topo/src/discover/components.rs);
#   after       this tree: also libscotch opened at the first drb mapping
#               (crates/scotch/src/load.rs), no libgcc_s (build.rs), hop distances as a
#               table (crates/map/src/cost.rs).
# BASE is built once into $OUT/tdmap-BASE (a release build in its own target folder, a
# few minutes); BEFORE= another binary instead. ROUNDS rounds of REPS runs alternate the
# binaries, so that a busy machine slows all alike; each figure is the median over the
# rounds of the mean per run. Also `tdmap --version` (the process's fixed cost: exec,
# dynamic linking, glibc's start-up) and /bin/true. Measured, on this machine; TDMAP=
# another "after" binary.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-10}
REPS=${REPS:-50}
OUT=${BENCH_DIR:-target/bench-startup}
TDMAP=${TDMAP:-target/release/tdmap}
BASE=${BASE:-f1d199d}
mkdir -p "$OUT"
if [ "$TDMAP" = target/release/tdmap ]; then cargo build --release -q --bin tdmap; fi
if [ -z "${BEFORE:-}" ]; then
  BEFORE=$OUT/tdmap-$BASE
  if [ ! -x "$BEFORE" ]; then
    echo "building tdmap at $BASE (the 'before' binary, once) in $OUT/base" >&2
    rm -rf "$OUT/base" && mkdir -p "$OUT/base/src"
    git archive "$BASE" | tar -x -C "$OUT/base/src"
    cargo build --release -q --bin tdmap --manifest-path "$OUT/base/src/Cargo.toml" \
      --target-dir "$OUT/base/target"
    cp "$OUT/base/target/release/tdmap" "$BEFORE"
  fi
fi
gcc -O2 -Wall -o "$OUT/cputime" bench/cputime.c

# A 64-thread matrix: pairs (2k, 2k+1) share most, every other pair a little.
awk 'BEGIN { n = 64; srand(1)
  for (i = 0; i < n; i++) for (j = 0; j <= i; j++) w[i, j] = w[j, i] = (i == j) ? 0 : (int(i / 2) == int(j / 2) ? 100 : int(rand() * 6))
  for (i = 0; i < n; i++) { row = w[i, 0]; for (j = 1; j < n; j++) row = row "," w[i, j]; print row } }' > "$OUT/m64.csv"

# shellcheck source=bench/lib.sh
. bench/lib.sh

# User + system ms per run of "$@", the mean of REPS runs.
cpu_ms() { "$OUT/cputime" "$REPS" "$@" | awk '{printf "%.4f\n", $1 + $2}'; }

# TITLE ARGS...: `tdmap ARGS` before, with hwloc's plugins chosen only, and after, the
# rounds interleaved.
compare() {
  local title=$1; shift
  local b h a
  : > "$OUT/before"; : > "$OUT/hwloc"; : > "$OUT/after"
  for _ in $(seq "$ROUNDS"); do
    TDMAP_HWLOC_ALL_PLUGINS=1 cpu_ms "$BEFORE" "$@" >> "$OUT/before"
    cpu_ms "$BEFORE" "$@" >> "$OUT/hwloc"
    cpu_ms "$TDMAP" "$@" >> "$OUT/after"
  done
  b=$(median < "$OUT/before"); h=$(median < "$OUT/hwloc"); a=$(median < "$OUT/after")
  printf '%-42s %8.2f ms %8.2f ms %8.2f ms %7.2fx\n' "$title" "$b" "$h" "$a" \
    "$(awk -v a="$a" -v b="$b" 'BEGIN{print a/b}')"
}

# The work is the same: before and after print the same mappings (greedy and drb).
for args in "-m xeon-x7550-4s" "--oversubscribe" "-m xeon-x7550-4s -a drb"; do
  # shellcheck disable=SC2086 # the arguments are words
  if ! cmp -s <("$BEFORE" map --matrix "$OUT/m64.csv" $args) <("$TDMAP" map --matrix "$OUT/m64.csv" $args); then
    echo "bench-startup: tdmap map $args prints another mapping than $BEFORE" >&2
    exit 1
  fi
done

echo "CPU time per run (user + system), median of $ROUNDS rounds x $REPS runs, $(nproc) CPUs, $(uname -r), load average $(cut -d" " -f1 /proc/loadavg)"
echo "before: $BEFORE with TDMAP_HWLOC_ALL_PLUGINS=1; after: $TDMAP"
printf '%-42s %11s %11s %11s %8s\n' "command" "before" "hwloc only" "after" "after/before"
compare "tdmap map, 64 threads, -m xeon-x7550-4s" map --matrix "$OUT/m64.csv" -m xeon-x7550-4s
compare "tdmap map, 64 threads, this machine" map --matrix "$OUT/m64.csv" --oversubscribe
compare "tdmap topo -m xeon-x7550-4s" topo -m xeon-x7550-4s
compare "tdmap --version (no hwloc)" --version
printf '%-42s %35s %8.2f ms\n' "/bin/true (a process's floor here)" "" "$(for _ in $(seq "$ROUNDS"); do cpu_ms /bin/true; done | median)"
