#!/usr/bin/env bash
# This build's `tdmap trace` against another build's, side by side: `BASE=/path/to/tdmap
# bench/trace_ab.sh` (docs/bench-trace.md). For each workload of AB_SIZES at THREADS
# threads, the CPU time (user + system of every process) of `--count-only` (the floor),
# the whole `trace` and the whole `--model-only`, each the median of REPS runs, the two
# builds run in turn within each repetition so that the machine's load falls on both
# alike; then trace/floor and model/floor for each build and new/base for each mode.
# Each build runs the programs its own `tdmap cc` built (its runtime linked in) when
# libtdmap_rt.a sits beside $BASE, else both run this build's (`base_programs`).
source "$(dirname "$0")/common.sh"
: "${BASE:?set BASE to the tdmap binary of the other build}"
AB_SIZES=${AB_SIZES:-"stencil3d:35 cg:104 pairs:393216 stencil1d:1680 fft:128"}
S=$OUT/ab
mkdir -p "$S"
BASE_PROGS=$(base_programs)
# CPU seconds of one run of "$@".
cpu1() {
  local TIMEFORMAT='%U %S' t
  t=$( { time "$@" >/dev/null 2>&1; } 2>&1 ) || { echo "trace_ab: failed: $*" >&2; return 1; }
  echo "$t" | awk '{printf "%.4f\n", $1 + $2}'
}
div() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", (b > 0 ? a / b : 0)}'; }
bench_header "threads=$THREADS, CPU time (user+sys, all processes), median of $REPS runs, base and new in turn; base programs from $BASE_PROGS"
printf '%-10s %5s %8s %8s %8s %12s %12s %11s %11s\n' program build floor_s trace_s model_s \
  trace/floor model/floor trace:n/b model:n/b
for spec in $AB_SIZES; do
  IFS=: read -r w n rep <<<"$spec"
  args=("$THREADS" "$n" "${rep:-1}")
  for r in $(seq "$REPS"); do
    for b in base new; do
      t=$TDMAP prog="$OUT/build/tdmap/$w"
      [ "$b" = base ] && t=$BASE prog="$BASE_PROGS/$w"
      cpu1 "$t" trace --count-only -- "$prog" "${args[@]}" >>"$S/$w.$b.floor"
      cpu1 "$t" trace --force -o "$S/$w.trace" -- "$prog" "${args[@]}" >>"$S/$w.$b.trace"
      cpu1 "$t" trace --model-only --force -o "$S/$w.json" -- "$prog" "${args[@]}" >>"$S/$w.$b.model"
    done
  done
  declare -A M
  for b in base new; do
    for m in floor trace model; do M[$b.$m]=$(median <"$S/$w.$b.$m"); done
  done
  for b in base new; do
    printf '%-10s %5s %8.3f %8.3f %8.3f %12s %12s' "$w" "$b" \
      "${M[$b.floor]}" "${M[$b.trace]}" "${M[$b.model]}" \
      "$(div "${M[$b.trace]}" "${M[$b.floor]}")" "$(div "${M[$b.model]}" "${M[$b.floor]}")"
    if [ "$b" = new ]; then
      printf ' %11s %11s' "$(div "${M[new.trace]}" "${M[base.trace]}")" "$(div "${M[new.model]}" "${M[base.model]}")"
    fi
    echo
  done
  rm -f "$S/$w".*
done
rm -rf "$S"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
