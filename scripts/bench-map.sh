#!/usr/bin/env bash
# Scale of `tdmap map` on sparse input (issue 20 item 6): a 3-D halo of 65,536 ranks on
# 1,024 hosts x 64 PUs (wall time and peak memory), and a 4,096-rank 3-D halo beside
# Scotch's scotch_gmap on the same graph and tleaf target, both timed.
# TDMAP=path/to/tdmap (default target/release/tdmap); graphs go to target/bench-map.
set -euo pipefail
TDMAP=${TDMAP:-target/release/tdmap}
OUT=target/bench-map
mkdir -p "$OUT"

# halo X Y Z FILE: edge list (i j 1), and FILE.grf for Scotch (vertex degrees + lists).
halo() {
  awk -v X="$1" -v Y="$2" -v Z="$3" -v E="$4" -v G="$4.grf" 'BEGIN {
    n = X * Y * Z; arcs = 0
    for (x = 0; x < X; x++) for (y = 0; y < Y; y++) for (z = 0; z < Z; z++) {
      i = (x * Y + y) * Z + z; d = 0; line = ""
      if (z + 1 < Z) { print i, i + 1, 1 > E }
      if (y + 1 < Y) { print i, i + Z, 1 > E }
      if (x + 1 < X) { print i, i + Y * Z, 1 > E }
      if (z > 0)     { line = line " " (i - 1); d++ }
      if (z + 1 < Z) { line = line " " (i + 1); d++ }
      if (y > 0)     { line = line " " (i - Z); d++ }
      if (y + 1 < Y) { line = line " " (i + Z); d++ }
      if (x > 0)     { line = line " " (i - Y * Z); d++ }
      if (x + 1 < X) { line = line " " (i + Y * Z); d++ }
      adj[i] = d line; arcs += d
    }
    print "0" > G; print n, arcs > G; print "0 000" > G
    for (i = 0; i < n; i++) print adj[i] > G
  }'
}

measure() { # label, command...: wall seconds and peak RSS
  local label=$1; shift
  /usr/bin/time -f "$label: %e s, %M KB peak" "$@" > "$OUT/last.out" 2> "$OUT/last.err" || {
    cat "$OUT/last.err" >&2; exit 1; }
  tail -1 "$OUT/last.err"
  head -1 "$OUT/last.out"
}

halo 64 32 32 "$OUT/halo65536.edges"
measure "tdmap map, 65536 ranks, cluster:1024x(core:64)" \
  "$TDMAP" map --matrix "$OUT/halo65536.edges" -m "cluster:1024x(core:64)" -f rankfile
halo 16 16 16 "$OUT/halo4096.edges"
measure "tdmap map, 4096 ranks, cluster:64x(core:64)" \
  "$TDMAP" map --matrix "$OUT/halo4096.edges" -m "cluster:64x(core:64)" -f rankfile
if command -v scotch_gmap >/dev/null; then
  printf 'tleaf\n2 64 2 64 1\n' > "$OUT/c64.tgt"
  measure "scotch_gmap, 4096 ranks, tleaf 64x64" \
    scotch_gmap "$OUT/halo4096.edges.grf" "$OUT/c64.tgt" "$OUT/scotch4096.map"
else
  echo "scotch_gmap not found (Debian package scotch): Scotch's time not measured"
fi
