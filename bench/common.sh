# Shared by bench/trace.sh and bench/trace_model.sh (sourced): settings, the release
# build of tdmap, its runtime and the workloads, and the timing helpers.
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${THREADS:-2}
REPS=${REPS:-3}
OUT=${BENCH_DIR:-target/bench-trace}
TDMAP=target/release/tdmap
export OMP_WAIT_POLICY=passive

cargo build --release -q -p tdmap -p tdmap-rt
make -s -j2 -C workloads gcc tdmap TDMAP="$PWD/$TDMAP" BUILD="$PWD/$OUT/build" >/dev/null
mkdir -p "$OUT"

now() { date +%s%N; }
# Median; the mean of the two middle values for an even count.
median() { sort -g | awk '{v[NR]=$1} END {m=int((NR+1)/2); print (NR%2 ? v[m] : (v[m]+v[m+1])/2)}'; }
# Runs "$@" REPS times and prints the median wall time in seconds.
timed() {
  for _ in $(seq "$REPS"); do
    local s; s=$(now); "$@" >/dev/null 2>&1; awk -v a="$s" -v b="$(now)" 'BEGIN{printf "%.6f\n", (b-a)/1e9}'
  done | median
}
