#!/usr/bin/env bash
# Overhead of `tdmap run --sampler inject` (`make bench-run-inject`): for each workload at
# THREADS threads, the wall time of the bare gcc -O2 build, under the kernel sampler
# (--dry-run), under the inject sampler (--dry-run, then full), each the median of REPS
# runs, as ratios to bare; the extra faults the injector caused (samples on pages already
# sampled, from one more --json run) and the time they cost per fault compared with the
# kernel sampler's run. PAGES="16 64 256" also sweeps --inject-pages (the default's
# choice). Then the cost of one injected fault, measured inside a program
# (bench/inject_cost.c), with the handler free to run on any CPU and on the writer's, and
# from it an estimate of the time the extra faults cost each workload. Measured, not
# simulated (the estimate is computed from measured parts and labelled so).
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${THREADS:-2}
REPS=${REPS:-5}
OUT=${BENCH_DIR:-target/bench-run-inject}
TDMAP=target/release/tdmap
export OMP_WAIT_POLICY=passive

cargo build --release -q -p tdmap -p tdmap-rt
make -s -j2 -C workloads gcc BUILD="$(realpath -m "$OUT")/build" >/dev/null
gcc -O2 -Wall -o "$OUT/inject_cost" bench/inject_cost.c
# The sizes of bench/run.sh: runs of about 0.5-2 s at 2 threads.
SIZES=${SIZES:-"ep:20000000 stencil1d:16384 stencil3d:72 pairs:1572864 alltoall:4096 pipeline:262144 cginit:400000 phase:786432"}

# shellcheck source=bench/lib.sh
. bench/lib.sh

# Samples on pages sampled before, in one --json run of "$@".
repeats() {
  "$TDMAP" run --json --report "$OUT/report.json" "$@" >/dev/null 2>&1
  grep -o '"repeat": [0-9]*' "$OUT/report.json" | grep -o '[0-9]*$'
}

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -r), load $(cut -d' ' -f1 /proc/loadavg) at start"
echo "cost of one injected fault (bench/inject_cost.c, 64 MiB, every page protected, perf sampling on):"
SPARSE=()
for cpus in "" 0; do
  for _ in 1 2 3; do
    if [ -n "$cpus" ]; then pre=(taskset -c "$cpus"); label="program and handler on CPU $cpus"; else pre=(); label="any CPU"; fi
    line=$("${pre[@]}" "$TDMAP" run --sampler inject --dry-run --inject-fraction 1 --inject-pages 100000000 --period 1000 -- "$OUT/inject_cost" 64 2>/dev/null)
    printf '  %-32s %s\n' "$label" "$line"
    [ -n "$cpus" ] || SPARSE+=("$(echo "$line" | sed 's/.*apart): \([0-9.]*\) us.*/\1/')")
  done
done
COST_US=$(printf '%s\n' "${SPARSE[@]}" | median)
echo "median sparse cost, any CPU: $COST_US us per injected fault (used for est% below)"
echo "threads=$THREADS, median of $REPS runs, release build, period 100 ms, inject defaults unless PAGES is set"
printf '%-10s %7s %8s %6s %8s %6s %8s %6s %7s %6s\n' \
  workload bare_s kdry_s kdry_x idry_s idry_x ifull_s ifull_x extra est%
KX=() IX=() FX=()
for spec in $SIZES; do
  w=${spec%%:*}; n=${spec##*:}
  p="$OUT/build/gcc/$w"
  bare=$(timed "$p" "$THREADS" "$n")
  kdry=$(timed "$TDMAP" run --sampler kernel --dry-run -- "$p" "$THREADS" "$n")
  idry=$(timed "$TDMAP" run --sampler inject --dry-run -- "$p" "$THREADS" "$n")
  ifull=$(timed "$TDMAP" run --sampler inject -- "$p" "$THREADS" "$n")
  extra=$(( $(repeats --sampler inject --dry-run -- "$p" "$THREADS" "$n") - $(repeats --sampler kernel --dry-run -- "$p" "$THREADS" "$n") ))
  ratio() { awk -v a="$1" -v b="$bare" 'BEGIN{printf "%.3f", a/b}'; }
  kx=$(ratio "$kdry"); ix=$(ratio "$idry"); fx=$(ratio "$ifull")
  KX+=("$kx"); IX+=("$ix"); FX+=("$fx")
  est=$(awk -v e="$extra" -v c="$COST_US" -v b="$bare" 'BEGIN{ if (e > 0) printf "%.2f", e*c/1e6/b*100; else print "-" }')
  printf '%-10s %7.3f %8.3f %6s %8.3f %6s %8.3f %6s %7s %6s\n' "$w" "$bare" "$kdry" "$kx" "$idry" "$ix" "$ifull" "$fx" "$extra" "$est"
  for pages in ${PAGES:-}; do
    t=$(timed "$TDMAP" run --sampler inject --dry-run --inject-pages "$pages" -- "$p" "$THREADS" "$n")
    e=$(( $(repeats --sampler inject --dry-run --inject-pages "$pages" -- "$p" "$THREADS" "$n") ))
    printf '  --inject-pages %-5s dry %.3f s = %s x bare, %s repeat samples\n' "$pages" "$t" "$(ratio "$t")" "$e"
  done
done
stats() { printf '%s\n' "$@" | awk '{s+=$1; if ($1>m) m=$1} END {printf "mean %.3f, max %.3f", s/NR, m}'; }
echo "kernel dry-run / bare: $(stats "${KX[@]}")"
echo "inject dry-run / bare: $(stats "${IX[@]}")"
echo "inject full / bare:    $(stats "${FX[@]}")"
echo "extra: samples on pages sampled before, inject minus kernel (noisy: programs that reuse memory repeat too)"
echo "est%: extra x the median sparse cost / bare wall time, the time writers waited (an estimate from"
echo "      measured parts, for when the wall-time ratios above are within the machine's noise)"
