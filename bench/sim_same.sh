#!/usr/bin/env bash
# Does this build's `tdmap sim` say what another build's says? `BASE=/path/to/tdmap
# bench/sim_same.sh [TRACE...]` replays each trace (default: the ones
# `make bench-sim-workloads` left) with both binaries under several machines and options,
# and compares their --json output byte for byte: for a change to the simulator that must
# only make it faster (docs/bench-sim.md). Prints one line per check; exits 1 if any differs.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${BASE:?set BASE to the tdmap binary of the other build}"
TDMAP=${TDMAP:-target/release/tdmap}
# shellcheck source=bench/lib.sh
. bench/lib.sh
bench_traces "$@"
ALL=os,compact,scatter,random,interleave,numa-balancing,sammu,kmaf,oracle
MORE=os,random,worst,kmaf-threads,kmaf-data,kmaf-paper,sammu-greedy
# Each check: a label, then the options after the trace.
checks=(
  "x7550-all|--machine xeon-x7550-4s --seed 1 --policies $ALL"
  "e5-2650-all|--machine xeon-e5-2650-2s --seed 1 --policies $ALL"
  "opteron-all|--machine opteron-8n --seed 2 --policies $ALL"
  "x7550-more|--machine xeon-x7550-4s --seed 3 --period-ms 5 --policies $MORE"
  "cachegrind-geom|--machine xeon-x7550-4s --seed 1 --l1 32768,8,64 --ll 8388608,16,64 --policies os,compact,oracle"
  "tiny-caches|--machine xeon-x7550-4s --seed 1 --l1 2048,4,64 --ll 65536,8,64 --policies $ALL"
  "simics-small-tlb|--machine simics-4x2 --seed 1 --oversubscribe --policies $ALL"
)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0
for trace in "${traces[@]}"; do
  for c in "${checks[@]}"; do
    label=${c%%|*}
    read -r -a opts <<<"${c#*|}"
    # A failed run (say, an option the older build lacks) must fail alike in both.
    "$BASE" sim "$trace" "${opts[@]}" --json >"$tmp/base" 2>&1 || echo "exit $?" >>"$tmp/base"
    "$TDMAP" sim "$trace" "${opts[@]}" --json >"$tmp/new" 2>&1 || echo "exit $?" >>"$tmp/new"
    name="$(basename "$trace") $label"
    if cmp -s "$tmp/base" "$tmp/new"; then
      echo "same      $name ($(wc -c <"$tmp/new") bytes)"
    else
      echo "DIFFERENT $name"
      diff "$tmp/base" "$tmp/new" | head -5 | cut -c1-200 || true
      bad=1
    fi
  done
done
exit "$bad"
