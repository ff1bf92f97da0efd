# Timing helpers shared by the bench scripts (sourced; REPS must be set).
now() { date +%s%N; }
# Median; the mean of the two middle values for an even count.
median() { sort -g | awk '{v[NR]=$1} END {m=int((NR+1)/2); print (NR%2 ? v[m] : (v[m]+v[m+1])/2)}'; }
# Runs "$@" REPS times and prints the median wall time in seconds.
timed() {
  for _ in $(seq "$REPS"); do
    local s; s=$(now); "$@" >/dev/null 2>&1; awk -v a="$s" -v b="$(now)" 'BEGIN{printf "%.6f\n", (b-a)/1e9}'
  done | median
}
# Prints "wall cpu" in seconds for one run of "$@" (cpu: user + system of the command and
# its children, tdmap's monitor included when "$@" is tdmap).
wall_cpu() {
  local TIMEFORMAT='%R %U %S' t
  t=$( { time "$@" >/dev/null 2>&1; } 2>&1 )
  echo "$t" | awk '{printf "%.4f %.4f\n", $1, $2 + $3}'
}
# bench_traces ARGS...: the release build (unless TDMAP_SKIP_BUILD is set), then the traces
# to replay into the array `traces`: ARGS, or those `make bench-sim-workloads` left; exits 2
# with one line when there are none.
bench_traces() {
  [ -n "${TDMAP_SKIP_BUILD:-}" ] || cargo build --release -q -p tdmap
  traces=("$@")
  [ ${#traces[@]} -gt 0 ] || traces=(target/bench-sim/*.trace)
  if [ ! -f "${traces[0]}" ]; then
    echo "tdmap: no trace at ${traces[0]}: run make bench-sim-workloads first, or name traces" >&2
    exit 2
  fi
}
