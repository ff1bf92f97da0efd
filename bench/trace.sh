#!/usr/bin/env bash
# Overhead of exact tracing (`make bench-trace`): for each workload at THREADS threads,
# the wall time of the uninstrumented gcc -O2 build, of `tdmap trace --count-only`
# (callbacks that only count), of the traced run alone (program writing raw chunks), of
# the whole `tdmap trace` (run + conversion to the compressed trace), and of the whole
# `tdmap trace --filter-lines`; each the median of REPS runs, as slowdowns against gcc.
# Also the compressed trace size in bytes per access. Figures are measured, not simulated.
source "$(dirname "$0")/common.sh"

# Sizes giving about 25 million accesses at 2 threads.
SIZES="ep:2000000 stencil1d:2048 stencil3d:36 pairs:393216 alltoall:1280 pipeline:65536 cginit:100000 phase:196608"

json_field() { grep "\"$1\"" | head -1 | sed 's/.*: *//; s/,$//'; }

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -r)"
echo "threads=$THREADS, median of $REPS runs, OMP_WAIT_POLICY=passive, release build, trace on $(df -h "$OUT" | awk 'NR==2{print $1}')"
printf '%-10s %9s %10s %9s %8s %8s %8s %8s %8s %7s\n' workload accesses gcc_s count_x run_x total_x filter_x B/acc filt_B/a conv_s
declare -a CX RX TX FX
for spec in $SIZES; do
  w=${spec%%:*}; n=${spec##*:}
  gcc=$(timed "$OUT/build/gcc/$w" "$THREADS" "$n")
  count=$(timed "$TDMAP" trace --count-only -- "$OUT/build/tdmap/$w" "$THREADS" "$n")
  total=$(timed "$TDMAP" trace --force -o "$OUT/$w.trace" -- "$OUT/build/tdmap/$w" "$THREADS" "$n")
  filt=$(timed "$TDMAP" trace --filter-lines --force -o "$OUT/$w.f.trace" -- "$OUT/build/tdmap/$w" "$THREADS" "$n")
  js=$("$TDMAP" trace --json --force -o "$OUT/$w.trace" -- "$OUT/build/tdmap/$w" "$THREADS" "$n" 2>/dev/null)
  fjs=$("$TDMAP" trace --json --filter-lines --force -o "$OUT/$w.f.trace" -- "$OUT/build/tdmap/$w" "$THREADS" "$n" 2>/dev/null)
  acc=$(echo "$js" | json_field accesses)
  run=$(echo "$js" | json_field run_seconds)
  conv=$(echo "$js" | json_field convert_seconds)
  bpa=$(echo "$js" | json_field bytes_per_access)
  fbytes=$(echo "$fjs" | json_field trace_bytes)
  ratio() { awk -v a="$1" -v b="$gcc" 'BEGIN{printf "%.2f", a/b}'; }
  CX+=("$(ratio "$count")"); RX+=("$(ratio "$run")"); TX+=("$(ratio "$total")"); FX+=("$(ratio "$filt")")
  printf '%-10s %9s %10.3f %9s %8s %8s %8s %8.2f %8.2f %7.2f\n' "$w" "$acc" "$gcc" "${CX[-1]}" "${RX[-1]}" \
    "${TX[-1]}" "${FX[-1]}" "$bpa" "$(awk -v a="$fbytes" -v b="$acc" 'BEGIN{printf "%.4f", a/b}')" "$conv"
  rm -f "$OUT/$w.trace" "$OUT/$w.f.trace"
done
med() { printf '%s\n' "$@" | median; }
printf '%-10s %9s %10s %9s %8s %8s %8s\n' median "" "" "$(med "${CX[@]}")" "$(med "${RX[@]}")" "$(med "${TX[@]}")" "$(med "${FX[@]}")"
echo "count_x: callbacks that only count; run_x: the traced program alone (raw chunks to disk);"
echo "total_x: whole tdmap trace incl. conversion; filter_x: whole tdmap trace --filter-lines;"
echo "B/acc: compressed trace bytes per recorded access; filt_B/a: --filter-lines trace bytes per access made."
