#!/usr/bin/env bash
# Overhead of `tdmap trace --model-only` (`make bench-trace-model`): for a few workloads
# at THREADS threads, the wall time of the uninstrumented gcc -O2 build and of the whole
# `tdmap trace --model-only` (program plus the sharing model fed while it runs), each the
# median of REPS runs, as a slowdown against gcc; also the model's size. Measured.
source "$(dirname "$0")/common.sh"

# The sizes of bench/trace.sh: about 25 million accesses at 2 threads.
SIZES=${SIZES:-"pairs:393216 stencil1d:2048 alltoall:1280"}

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -r)"
echo "threads=$THREADS, median of $REPS runs, OMP_WAIT_POLICY=passive, release build, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-10s %10s %10s %10s %9s %10s\n' workload events gcc_s model_s model_x model_KiB
for spec in $SIZES; do
  w=${spec%%:*}; n=${spec##*:}
  gcc=$(timed "$OUT/build/gcc/$w" "$THREADS" "$n")
  model=$(timed "$TDMAP" trace --model-only --force -o "$OUT/$w.model.json" -- "$OUT/build/tdmap/$w" "$THREADS" "$n")
  events=$(grep -o '"events":[0-9]*' "$OUT/$w.model.json" | head -1 | cut -d: -f2)
  kib=$(grep -o '"model_bytes":[0-9]*' "$OUT/$w.model.json" | cut -d: -f2)
  printf '%-10s %10s %10.3f %10.3f %9s %10d\n' "$w" "$events" "$gcc" "$model" \
    "$(awk -v a="$model" -v b="$gcc" 'BEGIN{printf "%.2f", a/b}')" "$((kib / 1024))"
  rm -f "$OUT/$w.model.json"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
