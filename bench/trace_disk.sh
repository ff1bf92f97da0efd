#!/usr/bin/env bash
# Disk use of `tdmap trace` (issue 17 item 1, must-show 2): traces PROGRAM ARGS (default
# stencil3d 8 64 16, about 8.5 G accesses) into a fresh tmpfs of SIZE (default 1G, so a
# raw stream of 8 bytes per access cannot fit), sampling the tmpfs's used bytes (statfs)
# every 50 ms, and prints the peak against the final trace and the stated bound (trace
# + --buffer-mib + one chunk per writing thread). Root only (it mounts the tmpfs).
source "$(dirname "$0")/common.sh"
SIZE=${SIZE:-1G}
BUFFER_MIB=${BUFFER_MIB:-64}
MNT=${MNT:-/mnt/tdmap-disk}
if [ $# -eq 0 ]; then set -- stencil3d 8 64 16; fi
prog="$PWD/$OUT/build/tdmap/$1"
shift

mkdir -p "$MNT"
umount "$MNT" 2>/dev/null || true
mount -t tmpfs -o "size=$SIZE" tmpfs "$MNT"
trap 'umount "$MNT"' EXIT
used() { stat -f -c '%b %f %S' "$MNT" | awk '{print ($1 - $2) * $3}'; }
base=$(used)

bench_header "tdmap trace $(basename "$prog") $*; output on a $SIZE tmpfs; --buffer-mib $BUFFER_MIB"
start=$(now)
"$TDMAP" trace --buffer-mib "$BUFFER_MIB" --summary "$OUT/disk.json" -o "$MNT/t.trace" -- "$prog" "$@" \
  >/dev/null 2>"$OUT/disk.err" &
pid=$!
peak=0
while kill -0 "$pid" 2>/dev/null; do
  u=$(used)
  [ "$u" -gt "$peak" ] && peak=$u
  sleep 0.05
done
rc=0
wait "$pid" || rc=$?
secs=$(awk -v a="$start" -v b="$(now)" 'BEGIN{printf "%.0f", (b-a)/1e9}')
trace=$(stat -c %s "$MNT/t.trace" 2>/dev/null || echo 0)
acc=$(grep -o '"accesses": *[0-9]*' "$OUT/disk.json" | sed 's/.*: *//')
status=$(grep -o '"status": *"[A-Za-z]*"' "$OUT/disk.json" | sed 's/.*: *//')
threads=$(grep -o '"threads": *[0-9]*' "$OUT/disk.json" | sed 's/.*: *//')
# The bound (docs/formats.md "Scratch files"): trace + buffer + one chunk (64 KiB and its
# header) per writing thread.
bound=$((trace + BUFFER_MIB * 1048576 + threads * 67584))
mib() { awk -v b="$1" 'BEGIN{printf "%.1f MiB", b / 1048576}'; }
echo "exit $rc after ${secs}s; $acc accesses, $threads threads, status $status; stderr: $(tr '\n' ' ' <"$OUT/disk.err")"
echo "final trace $(mib "$trace") ($(awk -v a="$trace" -v b="$acc" 'BEGIN{printf "%.3f", a / b}') B/access); raw stream at 8 B/access would be $(mib $((acc * 8)))"
echo "peak used $(mib $((peak - base))) (sampled every 50 ms), peak - trace $(mib $((peak - base - trace))), bound $(mib "$bound"): $([ $((peak - base)) -le "$bound" ] && echo within || echo EXCEEDED)"
