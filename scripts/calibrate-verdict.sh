#!/usr/bin/env bash
# `make calibrate-verdict` (issue 18 item 8): the metrics behind `tdmap analyze`'s verdicts
# beside the SIMULATED gain of best-static over os, on every workload traced at THREADS
# (8) threads, each run once (REPEAT 1) and as an iterative program (REPEAT 16), replayed
# on MACHINE (xeon-x7550-4s). The verdicts' thresholds (crates/sharing/src/report.rs) are
# chosen from this table so that a "high potential" verdict goes with a simulated gain of
# at least 5 % and "low" with under 2 %; the last column says where they disagree.
# docs/sim-checks.md keeps the figures. Env: THREADS, MACHINE, OUT, TDMAP (default
# target/release/tdmap, built here), KEEP_TRACES=1 to reuse the last traces.
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${THREADS:-8}
MACHINE=${MACHINE:-xeon-x7550-4s}
OUT=${OUT:-target/calibrate-verdict}
# shellcheck source=bench/sim_lib.sh
. bench/sim_lib.sh
SIZES=${SIZES:-"ep:4096 stencil1d:4 stencil3d:4 pairs:256 alltoall:128 pipeline:64 cginit:1024 phase:128"}

# The first value of "key": in a JSON file.
num() { grep -m1 "\"$1\":" "$2" | sed 's/.*: *//; s/[",]//g'; }
# The first two words of a verdict.
words() { grep -m1 "\"$1\":" "$2" | sed 's/.*: *"//' | cut -d' ' -f1-2 | tr -d ':,'; }

printf '%-10s %6s %9s %7s %6s %8s  %-15s %-15s %8s  %-18s %s\n' workload repeat variation shared excl fp/cache threads data 'gain %' simulated agree
for spec in $SIZES; do
  w=${spec%%:*}; size=${spec#*:}
  for repeat in 1 16; do
    trace="$OUT/$w-$repeat.trace"
    workload_trace "$trace" "$w" "$size" "$repeat"
    j="$OUT/$w-$repeat.json"
    "$TDMAP" analyze "$trace" --machine "$MACHINE" --page-size 4K --sim --json >"$j"
    vt=$(words verdict_threads "$j"); vd=$(words verdict_data "$j")
    pot=$(grep -m1 '"potential":' "$j" | sed 's/.*: *"//; s/".*//')
    gain=$(num gain "$j")
    # The metrics' verdict: high when either says high, low when neither says more
    # than low (no potential and not applicable count as low).
    metrics=low
    case "$vt $vd" in
      *high*) metrics=high ;;
      *moderate*) metrics=moderate ;;
    esac
    agree=yes
    [ "$metrics potential" = "$pot" ] || agree="NO (metrics: $metrics)"
    awk -v w="$w" -v r="$repeat" -v v="$(num variation "$j")" -v s="$(num shared_access_fraction "$j")" \
      -v e="$(num avg_exclusivity "$j")" -v f="$(num footprint_bytes "$j")" -v c="$(num cache_bytes "$j")" \
      -v vt="$vt" -v vd="$vd" -v g="$gain" -v p="$pot" -v a="$agree" 'BEGIN {
      printf "%-10s %6s %9.2f %6.1f%% %6.3f %8.2f  %-15s %-15s %8.1f  %-18s %s\n", w, r, v, 100*s, e, f/c, vt, vd, 100*g, p, a }'
  done
done
echo "variation = sqrt(Eq. 1)/Eq. 2 of the access matrix; shared = accesses to lines another thread holds; excl = access-weighted average exclusivity (Eq. 4, 4 KiB pages); fp/cache = footprint over the machine's last-level caches; gain = 1 - best-static/os (SIMULATED)."
