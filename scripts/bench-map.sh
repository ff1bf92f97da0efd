#!/usr/bin/env bash
# Scale of `tdmap map` on sparse input (issue 20 item 6): a 3-D halo of 65,536 ranks on
# 1,024 hosts x 64 PUs (wall time and peak memory), and a 4,096-rank 3-D halo beside
# Scotch's scotch_gmap on the same graph and tleaf target, both timed (wall and CPU, with
# the machine's load before and after, since this machine is shared) and both mappings
# scored by tdmap's cost function; the 65,536-rank figures are held to the issue's limits.
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

measure() { # label, command...: wall seconds, CPU seconds and peak RSS
  local label=$1; shift
  /usr/bin/time -f "%e %U %S %M" "$@" > "$OUT/last.out" 2> "$OUT/last.err" || {
    cat "$OUT/last.err" >&2; exit 1; }
  read -r wall user sys kb < <(tail -1 "$OUT/last.err")
  cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
  echo "$label: $wall s wall, $cpu s CPU, $((kb / 1024)) MiB peak"
}

# cost MAPPING EDGES: tdmap's hop cost on a cluster of 64-PU hosts, PUs 2 hops apart
# within a host and 4 across, of a mapping given as "rank host" lines (Σ w × hops over
# the undirected edges; checked below against the cost tdmap prints for its own mapping).
cost() {
  awk 'FNR == NR { host[$1] = $2; next } { c += $3 * (host[$1] == host[$2] ? 2 : 4) }
       END { printf "%d", c }' "$1" "$2"
}
# Rank → host of a tdmap rankfile, of a Scotch mapping (part p on host p / 64), and of
# compact (rank r on host r / 64).
hosts_of_rankfile() { awk '$1 == "rank" { split($2, a, "="); print a[1], a[2] }' "$1"; }
hosts_of_scotch() { awk 'NR > 1 { print $1, int($2 / 64) }' "$1"; }
hosts_compact() { awk -v n="$1" 'BEGIN { for (r = 0; r < n; r++) print r, int(r / 64) }'; }
printed_cost() { sed -n 's/^# tdmap map: .*cost (hops) \([0-9.e+]*\).*/\1/p' "$1"; }

echo "load before: $(uptime)"
halo 64 32 32 "$OUT/halo65536.edges"
big=$(measure "tdmap map, 65536 ranks, cluster:1024x(core:64)" \
  "$TDMAP" map --matrix "$OUT/halo65536.edges" -m "cluster:1024x(core:64)" -f rankfile)
echo "$big"
cp "$OUT/last.out" "$OUT/tdmap65536.rf"
hosts_of_rankfile "$OUT/tdmap65536.rf" > "$OUT/tdmap65536.hosts"
hosts_compact 65536 > "$OUT/compact65536.hosts"
echo "  cost: tdmap $(printed_cost "$OUT/tdmap65536.rf"), compact $(cost "$OUT/compact65536.hosts" "$OUT/halo65536.edges")"

halo 16 16 16 "$OUT/halo4096.edges"
small=$(measure "tdmap map, 4096 ranks, cluster:64x(core:64)" \
  "$TDMAP" map --matrix "$OUT/halo4096.edges" -m "cluster:64x(core:64)" -f rankfile)
echo "$small"
cp "$OUT/last.out" "$OUT/tdmap4096.rf"
hosts_of_rankfile "$OUT/tdmap4096.rf" > "$OUT/tdmap4096.hosts"
ours=$(cost "$OUT/tdmap4096.hosts" "$OUT/halo4096.edges")
[ "$ours" = "$(printed_cost "$OUT/tdmap4096.rf")" ] || {
  echo "bench-map: the script's cost ($ours) is not tdmap's ($(printed_cost "$OUT/tdmap4096.rf"))" >&2; exit 1; }
if command -v scotch_gmap >/dev/null; then
  printf 'tleaf\n2 64 2 64 1\n' > "$OUT/c64.tgt"
  theirs=$(measure "scotch_gmap, 4096 ranks, tleaf 64x64" \
    scotch_gmap "$OUT/halo4096.edges.grf" "$OUT/c64.tgt" "$OUT/scotch4096.map")
  echo "$theirs"
  hosts_of_scotch "$OUT/scotch4096.map" > "$OUT/scotch4096.hosts"
  echo "  cost (tdmap's cost function): tdmap $ours, scotch_gmap $(cost "$OUT/scotch4096.hosts" "$OUT/halo4096.edges")"
  wall() { sed 's/.*: \([0-9.]*\) s wall.*/\1/' <<<"$1"; }
  cpu() { sed 's/.* \([0-9.]*\) s CPU.*/\1/' <<<"$1"; }
  awk -v tw="$(wall "$small")" -v sw="$(wall "$theirs")" -v tc="$(cpu "$small")" -v sc="$(cpu "$theirs")" \
    'BEGIN { printf "  4096 ranks, tdmap / scotch_gmap: wall %.2f, CPU %.2f\n", tw / sw, tc / (sc > 0 ? sc : 0.01) }'
else
  echo "scotch_gmap not found (Debian package scotch): Scotch's time not measured"
fi
echo "load after: $(uptime)"
# Issue 20 item 6's limits for 65,536 ranks: 10 s and 2 GiB.
awk -v w="$(sed 's/.*: \([0-9.]*\) s wall.*/\1/' <<<"$big")" -v m="$(sed 's/.* \([0-9]*\) MiB peak/\1/' <<<"$big")" \
  'BEGIN { printf "65536 ranks: %s s of 10 s, %s MiB of 2048 MiB: %s\n", w, m, (w <= 10 && m <= 2048) ? "within" : "OVER" }'
