#!/usr/bin/env bash
# `make sim-ordering` (issue 18 item 9): the kMAF paper's Fig. 7 ordering as a check, not a
# target. Each workload is traced as an iterative run at THREADS (64) threads on this
# machine and replayed by `tdmap sim` on MACHINE (xeon-x7550-4s: 64 PUs); the table gives
# each policy's modelled execution time relative to os, per workload and as a geometric
# mean, then checks the averages against oracle <= kmaf <= compact <= random, with os
# near random (within 5 %). Every figure is SIMULATED by tdmap-sim's model. Prints the
# failed comparisons and exits 0 either way: where the model departs from the paper,
# the figures say why (see docs/sim-checks.md), and no policy is tuned to pass.
# KEEP_TRACES=1 replays the traces of the last run. Env: THREADS, MACHINE, SEED, SIZES,
# OUT, TDMAP (default target/release/tdmap, built here).
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${THREADS:-64}
MACHINE=${MACHINE:-xeon-x7550-4s}
SEED=${SEED:-1}
OUT=${OUT:-target/sim-ordering}
POLICIES=os,compact,random,kmaf,oracle
export OMP_WAIT_POLICY=passive
if [ -z "${TDMAP:-}" ]; then
  cargo build --release -q -p tdmap -p tdmap-rt
  TDMAP=target/release/tdmap
fi
mkdir -p "$OUT"
make -s -j2 -C workloads tdmap TDMAP="$PWD/$TDMAP" BUILD="$PWD/$OUT/build" >/dev/null
# workload:size:repeat; at 64 threads, 2-8 M accesses each (alltoall is T x T at least).
SIZES=${SIZES:-"ep:512:8 stencil1d:1:8 stencil3d:3:8 pairs:128:8 alltoall:64:2 pipeline:16:8 cginit:2048:8 phase:64:8"}

summary="$OUT/summary.txt"
: >"$summary"
for spec in $SIZES; do
  w=${spec%%:*}; rest=${spec#*:}
  # shellcheck disable=SC2206 # size and repeat, split on ':'
  args=(${rest//:/ })
  trace="$OUT/$w.trace"
  if [ "${KEEP_TRACES:-0}" != 1 ] || [ ! -s "$trace" ]; then
    "$TDMAP" trace --force -o "$trace" -- "$OUT/build/tdmap/$w" "$THREADS" "${args[@]}" >/dev/null 2>&1
  fi
  "$TDMAP" sim "$trace" --machine "$MACHINE" --seed "$SEED" --policies "$POLICIES" >"$OUT/$w.txt"
  cat "$OUT/$w.txt"
  echo
  # policy and time (first two fields) of each row of the table.
  awk -v w="$w" 'NR>2 && $2 ~ /^[0-9.]+$/ && $1 ~ /^[a-z-]+$/ {printf "%s %s %s\n", w, $1, $2}' "$OUT/$w.txt" >>"$summary"
done

echo "SIMULATED modelled execution time relative to os on $MACHINE ($THREADS threads, iterative runs, seed $SEED; lower is better)"
awk '
  { if (!($2 in seen)) { seen[$2]=1; pol[++np]=$2 }
    if (!($1 in wseen)) { wseen[$1]=1; wl[++nw]=$1 }
    t[$1, $2]=$3 }
  END {
    printf "%-10s", "workload"; for (p=1; p<=np; p++) printf " %11.11s", pol[p]; printf "\n"
    for (i=1; i<=nw; i++) {
      printf "%-10s", wl[i]
      for (p=1; p<=np; p++) { v=t[wl[i], pol[p]]; printf " %11.3f", v; lg[p]+=log(v) }
      printf "\n"
    }
    printf "%-10s", "geomean"
    for (p=1; p<=np; p++) { g[pol[p]]=exp(lg[p]/nw); printf " %11.3f", g[pol[p]] }
    printf "\n\nkMAF Fig. 7 ordering on the averages (SIMULATED):\n"
    o = "best-static"
    split(o " kmaf compact random", chain, " ")
    for (k=1; k<4; k++) {
      a=chain[k]; b=chain[k+1]
      printf "  %-11s <= %-8s %.3f <= %.3f  %s\n", a, b, g[a], g[b], (g[a] <= g[b] ? "holds" : "DEPARTS")
    }
    d = g["os"] - g["random"]; if (d < 0) d = -d
    printf "  os near random    |%.3f - %.3f| = %.3f  %s\n", g["os"], g["random"], d, (d <= 0.05 ? "holds" : "DEPARTS")
  }' "$summary"
