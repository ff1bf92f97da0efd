#!/usr/bin/env bash
# Overhead of `tdmap run` (`make bench-run`): for each workload at THREADS threads, the
# wall time of the bare gcc -O2 build, under `tdmap run --dry-run` (detect and decide)
# and under full `tdmap run` (pinning and page moves too), each the median of REPS runs,
# as ratios to bare; and the bare program again (bare2), whose ratio is the noise floor.
# Then batched vs raw move_pages throughput. Measured, not simulated.
# Two sets: "single pass" (SIZES: big data touched for the first time, the worst case
# for a page-fault sampler: every page faults once and is sampled) and "iterative"
# (ITER: smaller data, the pattern repeated with the workloads' REPEAT argument, as in
# the long-running iterative programs kMAF measured).
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${THREADS:-2}
REPS=${REPS:-7}
OUT=${BENCH_DIR:-target/bench-run}
TDMAP=target/release/tdmap
export OMP_WAIT_POLICY=passive

cargo build --release -q -p tdmap
make -s -j2 -C workloads gcc BUILD="$(realpath -m "$OUT")/build" >/dev/null
# Sizes (size[:repeat]) at 2 threads: single-pass runs of 0.1-0.4 s on the 2-vCPU
# development VM (2026-11), all page faults; iterative runs of about 2-4 s, each rep well
# above the cost of its barriers, which is erratic on a 2-vCPU VM. tdmap's fixed start-up
# cost (printed first) is about 1% of a 1 s run.
SIZES=${SIZES:-"ep:20000000 stencil1d:16384 stencil3d:72 pairs:1572864 alltoall:4096 pipeline:262144 cginit:400000 phase:786432"}
ITER=${ITER:-"ep:16384:15000 stencil1d:64:7500 stencil3d:16:6000 pairs:4096:4800 alltoall:256:8000 pipeline:512:3300 cginit:4096:9000 phase:1024:5400"}

# shellcheck source=bench/lib.sh
. bench/lib.sh

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -r), $(ls /sys/devices/system/node | grep -c '^node') NUMA node(s)"
echo "threads=$THREADS, median of $REPS interleaved rounds, release build, period 100 ms, kernel sampler"
stats() { printf '%s\n' "$@" | awk '{s+=$1; if ($1>m) m=$1} END {printf "mean %.3f, max %.3f", s/NR, m}'; }
# One table: REPS rounds, each running bare, --dry-run and full once in turn (so that
# load changes hit all three alike); medians of wall and of CPU time, as ratios to bare.
table() {
printf '%-10s %8s %8s %8s %8s %8s %8s %8s\n' workload bare_s bare2_x dry_x full_x bare_cpu dry_cpu_x full_cpu_x
DX=() FX=() DC=() FC=() BX=()
for spec in "$@"; do
  w=${spec%%:*}; rest=${spec#*:}
  # shellcheck disable=SC2206 # size and optional repeat, split on ':'
  args=("$THREADS" ${rest//:/ })
  p="$OUT/build/gcc/$w"
  : >"$OUT/t.bare"; : >"$OUT/t.bare2"; : >"$OUT/t.dry"; : >"$OUT/t.full"
  for _ in $(seq "$REPS"); do
    wall_cpu "$p" "${args[@]}" >>"$OUT/t.bare"
    wall_cpu "$TDMAP" run --sampler kernel --dry-run -- "$p" "${args[@]}" >>"$OUT/t.dry"
    wall_cpu "$TDMAP" run --sampler kernel -- "$p" "${args[@]}" >>"$OUT/t.full"
    # The control: bare again, so the table shows this machine's noise floor.
    wall_cpu "$p" "${args[@]}" >>"$OUT/t.bare2"
  done
  med() { cut -d' ' -f"$2" "$OUT/t.$1" | median; }
  ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.3f", a/b}'; }
  bw=$(med bare 1); bc=$(med bare 2)
  dx=$(ratio "$(med dry 1)" "$bw"); fx=$(ratio "$(med full 1)" "$bw")
  dc=$(ratio "$(med dry 2)" "$bc"); fc=$(ratio "$(med full 2)" "$bc")
  bx=$(ratio "$(med bare2 1)" "$bw")
  DX+=("$dx"); FX+=("$fx"); DC+=("$dc"); FC+=("$fc"); BX+=("$bx")
  printf '%-10s %8.3f %8s %8s %8s %8.3f %8s %8s\n' "$w" "$bw" "$bx" "$dx" "$fx" "$bc" "$dc" "$fc"
done
echo "wall, bare2 / bare:   $(stats "${BX[@]}") (the control: noise, no tdmap)"
echo "wall, dry-run / bare: $(stats "${DX[@]}")"
echo "wall, full / bare:    $(stats "${FX[@]}")"
echo "CPU,  dry-run / bare: $(stats "${DC[@]}")"
echo "CPU,  full / bare:    $(stats "${FC[@]}")"
}
# The fixed cost: start-up (hwloc topology, perf events) and report, around a program
# that does nothing.
: >"$OUT/t.bare"; : >"$OUT/t.dry"
for _ in $(seq "$REPS"); do
  wall_cpu true >>"$OUT/t.bare"
  wall_cpu "$TDMAP" run --sampler kernel --dry-run -- true >>"$OUT/t.dry"
done
fixed=$(awk -v a="$(cut -d' ' -f1 "$OUT/t.dry" | median)" -v b="$(cut -d' ' -f1 "$OUT/t.bare" | median)" 'BEGIN{printf "%.1f", (a-b)*1000}')
events=$("$TDMAP" run --sampler kernel --dry-run -- true 2>&1 | sed -n 's/.*, \([a-z-]*\) perf events,.*/\1/p')
echo "fixed cost of tdmap run (-- true vs true): $fixed ms; $events perf events"
echo "-- single pass (every page first-touched once)"
# shellcheck disable=SC2086 # one word per workload
table $SIZES
echo "-- iterative (REPEAT)"
# shellcheck disable=SC2086
table $ITER
cargo bench -q -p tdmap-sys --bench move_pages 2>/dev/null
