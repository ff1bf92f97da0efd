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
