#!/usr/bin/env bash
# SAMMU against os on FFT-like traces (`make bench-sim-fft`, issue 18 item 4: "on an
# FFT-like all-to-all transpose trace, sammu is within 2 % of os or better"). Traces
# workloads/fft.c at THREADS threads for each ROWS:REPEAT of SIZES (single runs and
# iterated ones, from data that fits one L3 of xeon-x7550-4s to data that does not) and
# replays each on MACHINE under os, sammu, compact and kmaf. Prints per trace the modelled
# time of each policy relative to os, sammu's L3 misses relative to os, its thread and
# page migrations, and whether sammu is within 2 %. Every figure is SIMULATED. Each new
# trace interleaves the threads differently: REPS traces per size show the spread.
# KEEP_TRACES=1 replays the traces of the last run. About 4 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${THREADS:-8}
MACHINE=${MACHINE:-xeon-x7550-4s}
REPS=${REPS:-1}
OUT=${BENCH_DIR:-target/bench-sim-fft}
SIZES=${SIZES:-"32:1 32:4 64:1 64:2 64:4 128:1 128:2 128:4"}
# shellcheck source=bench/sim_lib.sh
. bench/sim_lib.sh

printf '%-14s %8s %9s %8s %8s %8s %9s %5s %6s %s\n' trace accesses period_us sammu compact kmaf sammu_L3 tm pm "within 2 %"
for spec in $SIZES; do
  IFS=: read -r rows rep <<<"$spec"
  for r in $(seq "$REPS"); do
    trace="$OUT/fft-$rows-$rep-$r.trace"
    workload_trace "$trace" fft "$rows" "$rep"
    "$TDMAP" sim "$trace" --machine "$MACHINE" --policies os,sammu,compact,kmaf --json \
      >"$OUT/fft-$rows-$rep-$r.json" 2>"$OUT/fft-$rows-$rep-$r.err" ||
      { cat "$OUT/fft-$rows-$rep-$r.err" >&2; exit 1; }
    python3 - "fft $rows $rep #$r" "$OUT/fft-$rows-$rep-$r.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[2]))
r = {x["policy"]: x for x in d["results"]}
t = lambda p: r[p]["normalised"]["time"]
s = r["sammu"]
rep = s["report"]
print("%-14s %8d %9.0f %8.3f %8.3f %8.3f %9.3f %5d %6d %s" % (
    sys.argv[1], d["accesses"], d["period_cycles"] / d["energy_model"]["hz"] * 1e6, t("sammu"), t("compact"), t("kmaf"),
    s["normalised"]["l3_misses"], rep["thread_migrations"], rep["page_migrations"],
    "yes" if t("sammu") <= 1.02 else "NO"))
PY
  done
done
echo "SIMULATED on $MACHINE, $THREADS threads; times relative to os (lower is better); tm, pm: sammu's thread and page migrations."
echo "period_us: the online policies' period; 100 ms (100000) unless the trace is too short to span 20 of them, when it is cut and migrations keep their full cost (crates/sim/README.md, SAMMU)"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
