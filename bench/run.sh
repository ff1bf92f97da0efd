#!/usr/bin/env bash
# Overhead of `tdmap run` (`make bench-run`): for each workload at THREADS threads, the
# wall time of the bare gcc -O2 build, under `tdmap run --dry-run` (detect and decide)
# and under full `tdmap run` (pinning and page moves too), each the median of REPS runs,
# as ratios to bare. Then batched vs raw move_pages throughput. Measured, not simulated.
# Two sets: "single pass" (SIZES: big data touched for the first time, the worst case
# for a page-fault sampler: every page faults once and is sampled) and "iterative"
# (ITER: smaller data, the pattern repeated with the workloads' REPEAT argument, as in
# the long-running iterative programs kMAF measured).
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${THREADS:-2}
REPS=${REPS:-5}
OUT=${BENCH_DIR:-target/bench-run}
TDMAP=target/release/tdmap
export OMP_WAIT_POLICY=passive

cargo build --release -q -p tdmap
make -s -j2 -C workloads gcc BUILD="$PWD/$OUT/build" >/dev/null
# Sizes giving runs of about 0.5-2 s at 2 threads (size[:repeat]).
SIZES=${SIZES:-"ep:20000000 stencil1d:16384 stencil3d:72 pairs:1572864 alltoall:4096 pipeline:262144 cginit:400000 phase:786432"}
ITER=${ITER:-"ep:65536:400 stencil1d:64:16000 stencil3d:32:40000 pairs:16384:15000 alltoall:512:400 pipeline:2048:1200 cginit:65536:1500 phase:4096:16000"}

# shellcheck source=bench/lib.sh
. bench/lib.sh

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -r), $(ls /sys/devices/system/node | grep -c '^node') NUMA node(s)"
echo "threads=$THREADS, median of $REPS runs, release build, period 100 ms, kernel sampler"
stats() { printf '%s\n' "$@" | awk '{s+=$1; if ($1>m) m=$1} END {printf "mean %.3f, max %.3f", s/NR, m}'; }
table() {
printf '%-10s %8s %9s %9s %9s %9s\n' workload bare_s dry_s dry_x full_s full_x
DX=() FX=()
for spec in "$@"; do
  w=${spec%%:*}; rest=${spec#*:}
  # shellcheck disable=SC2206 # size and optional repeat, split on ':'
  args=("$THREADS" ${rest//:/ })
  p="$OUT/build/gcc/$w"
  bare=$(timed "$p" "${args[@]}")
  dry=$(timed "$TDMAP" run --dry-run -- "$p" "${args[@]}")
  full=$(timed "$TDMAP" run -- "$p" "${args[@]}")
  dx=$(awk -v a="$dry" -v b="$bare" 'BEGIN{printf "%.3f", a/b}')
  fx=$(awk -v a="$full" -v b="$bare" 'BEGIN{printf "%.3f", a/b}')
  DX+=("$dx"); FX+=("$fx")
  printf '%-10s %8.3f %9.3f %9s %9.3f %9s\n' "$w" "$bare" "$dry" "$dx" "$full" "$fx"
done
echo "dry-run / bare: $(stats "${DX[@]}")"
echo "full / bare:    $(stats "${FX[@]}")"
}
echo "-- single pass (every page first-touched once)"
# shellcheck disable=SC2086 # one word per workload
table $SIZES
echo "-- iterative (REPEAT)"
# shellcheck disable=SC2086
table $ITER
cargo bench -q -p tdmap-sys --bench move_pages 2>/dev/null
