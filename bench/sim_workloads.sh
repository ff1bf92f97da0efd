#!/usr/bin/env bash
# The simulated gain table (`make bench-sim-workloads`): each workload traced at THREADS
# threads on this machine, then replayed by `tdmap sim` on MACHINE under every policy.
# Prints each run's table, then modelled execution time per workload and policy relative
# to os (lower is better), and the replay throughput (simulated accesses x policies per
# CPU second of the sim process: user + system of all its replay threads, trace decoding
# and both passes included, release build; issue 18 item 7's figure, as
# bench/sim_speed.sh measures it).
# Every gain figure here is SIMULATED by tdmap-sim's model, not measured.
# KEEP_TRACES=1 replays the traces left by the last run instead of tracing again (each
# new trace interleaves the threads differently, which moves the online policies' figures).
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${THREADS:-8}
MACHINE=${MACHINE:-xeon-x7550-4s}
SEED=${SEED:-1}
OUT=${BENCH_DIR:-target/bench-sim}
POLICIES=os,compact,scatter,random,interleave,numa-balancing,sammu,kmaf,oracle
# shellcheck source=bench/sim_lib.sh
. bench/sim_lib.sh
# shellcheck source=bench/lib.sh
. bench/lib.sh

# size:repeat, giving 1-3.5 million accesses at 8 threads: each pattern run 16 times, as
# iterative programs do (the sizes of tests/sim_cli.rs). SIZES="ep:131072 ..." (repeat 1)
# gives the single-pass traces, on which kmaf cannot pay back (crates/sim/README.md).
SIZES=${SIZES:-"ep:4096:16 stencil1d:4:16 stencil3d:4:16 pairs:256:16 alltoall:128:16 pipeline:64:16 cginit:1024:16 phase:128:16"}

summary="$OUT/summary.txt"
: >"$summary"
total_acc=0
total_ns=0
total_cpu=0
cpu_file=$(mktemp)
trap 'rm -f "$cpu_file"' EXIT
for spec in $SIZES; do
  w=${spec%%:*}; rest=${spec#*:}
  # shellcheck disable=SC2206 # size and optional repeat, split on ':'
  args=(${rest//:/ })
  trace="$OUT/$w.trace"
  workload_trace "$trace" "$w" "${args[@]}"
  s=$(now)
  /usr/bin/time -f "%U %S" -o "$cpu_file" "$TDMAP" sim "$trace" --machine "$MACHINE" \
    --seed "$SEED" --policies "$POLICIES" --plot "$OUT/$w.png" >"$OUT/$w.txt" \
    2>"$OUT/$w.err" || { cat "$OUT/$w.err" >&2; exit 1; }
  ns=$(( $(now) - s ))
  total_cpu=$(awk -v t="$total_cpu" '{print t + $1 + $2}' "$cpu_file")
  cat "$OUT/$w.txt"
  echo
  acc=$(head -1 "$OUT/$w.txt" | sed 's/.* \([0-9]*\) accesses.*/\1/')
  npol=$(awk 'NR>2 && NF==8' "$OUT/$w.txt" | wc -l)
  total_acc=$(( total_acc + acc * npol ))
  total_ns=$(( total_ns + ns ))
  awk -v w="$w" 'NR>2 && NF==8 {printf "%s %s %s\n", w, $1, $2}' "$OUT/$w.txt" >>"$summary"
done

echo "SIMULATED modelled execution time relative to os on $MACHINE ($THREADS threads, seed $SEED; lower is better)"
relative_table "$summary" 9
awk -v a="$total_acc" -v ns="$total_ns" -v cpu="$total_cpu" 'BEGIN {
  printf "\nreplay throughput: %.1f M simulated accesses x policies per CPU second (%d in %.1f CPU s, user + system of the sim process, all its threads; %.1f s wall; release, trace read twice)\n", a/cpu/1e6, a, cpu, ns/1e9 }'
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
