#!/usr/bin/env bash
# `make sim-vs-cachegrind`: tdmap sim's caches checked against valgrind's cachegrind
# (issue 18 item 2). For each single-threaded kernel of tests/cachegrind/:
#   - build it twice with the same compiler front: `tdmap cc` (traced) and clang-16 -O2
#     (plain), same flags;
#   - trace the traced build, replay the trace with `tdmap sim` on a one-core machine whose
#     caches are cachegrind's (--l1 D1 --ll LL: L1 plus a non-inclusive LL, LRU,
#     write-allocate; policy os, one node, so nothing moves);
#   - run `valgrind --tool=cachegrind` with the same --D1 and --LL on the plain build;
#   - print the access counts (trace against cachegrind's Dr+Dw), the D1 misses (D1mr+D1mw)
#     and the LL data misses (DLmr+DLmw) of both tools, and each ratio sim/cachegrind.
# Exits 1 when a ratio is off by more than TOL per cent (default 2).
# cachegrind also counts the dynamic loader's and libc's accesses (about 40 k references
# and 1.4 k LL misses at start-up), which no trace sees: the kernels are sized so that
# their own loops are over 98 % of cachegrind's references and their misses dwarf those.
# Env: TDMAP (default target/debug/tdmap, built here), D1, LL (cachegrind's
# SIZE,ASSOC,LINE), TOL, OUT, PROGRAMS.
set -euo pipefail
cd "$(dirname "$0")/.."
D1=${D1:-32768,8,64}
LL=${LL:-262144,8,64}
TOL=${TOL:-2}
OUT=${OUT:-target/sim-vs-cachegrind}
PROGRAMS=${PROGRAMS:-"triad matmul chase stencil transpose unaligned"}
if [ -z "${TDMAP:-}" ]; then
  cargo build -q -p tdmap -p tdmap-rt
  TDMAP=target/debug/tdmap
fi
command -v valgrind >/dev/null || { echo "tdmap: valgrind not found: run scripts/setup.sh (installs valgrind)" >&2; exit 2; }
mkdir -p "$OUT"

# The value of "key": N in tdmap sim's JSON (one policy, so the first match).
field() { grep -m1 "\"$1\":" "$2" | sed "s/.*: *//" | tr -dc 0-9; }
# 100 x a / b with one decimal.
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b ? 100 * a / b : (a ? 1e9 : 100) }'; }
off() { awk -v p="$1" -v t="$TOL" 'BEGIN { d = p - 100; if (d < 0) d = -d; exit !(d > t) }'; }

echo "SIMULATED (tdmap sim, one core, L1 $D1, LL $LL, LRU, write-allocate) against valgrind cachegrind (same geometry), clang-16 -O2 front"
printf '%-10s %10s %10s %6s  %9s %9s %6s  %9s %9s %6s\n' program accesses Dr+Dw '%' 'D1 sim' 'D1 cg' '%' 'LL sim' 'LL cg' '%'
bad=0
for p in $PROGRAMS; do
  src=tests/cachegrind/$p.c
  clang-16 -O2 -o "$OUT/$p.plain" "$src"
  "$TDMAP" cc -O2 -o "$OUT/$p.traced" "$src" >/dev/null
  "$TDMAP" trace --force -o "$OUT/$p.trace" -- "$OUT/$p.traced" >/dev/null 2>&1
  "$TDMAP" sim "$OUT/$p.trace" --machine "package:1 core:1 pu:1" --policies os \
    --l1 "$D1" --ll "$LL" --json >"$OUT/$p.sim.json"
  valgrind --tool=cachegrind --cache-sim=yes --D1="$D1" --LL="$LL" \
    --cachegrind-out-file="$OUT/$p.cg" "$OUT/$p.plain" >/dev/null 2>"$OUT/$p.cg.log"
  # events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw
  read -r _ _ _ _ dr d1mr dlmr dw d1mw dlmw < <(grep '^summary:' "$OUT/$p.cg")
  acc=$(field accesses "$OUT/$p.sim.json")
  d1=$(field l1_misses "$OUT/$p.sim.json")
  ll=$(field llc_misses "$OUT/$p.sim.json")
  cg_acc=$((dr + dw)) cg_d1=$((d1mr + d1mw)) cg_ll=$((dlmr + dlmw))
  ra=$(pct "$acc" "$cg_acc") r1=$(pct "$d1" "$cg_d1") rl=$(pct "$ll" "$cg_ll")
  printf '%-10s %10d %10d %6s  %9d %9d %6s  %9d %9d %6s\n' "$p" "$acc" "$cg_acc" "$ra" "$d1" "$cg_d1" "$r1" "$ll" "$cg_ll" "$rl"
  for r in "$ra" "$r1" "$rl"; do
    if off "$r"; then bad=1; fi
  done
done
echo "% = sim / cachegrind x 100; accesses = the trace's, Dr+Dw = cachegrind's data references (start-up included)."
if [ "$bad" = 1 ]; then
  echo "tdmap: a figure differs from cachegrind's by more than $TOL %" >&2
  exit 1
fi
echo "all within $TOL %"
