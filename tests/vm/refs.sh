#!/usr/bin/env bash
# The exact sharing matrices corr-check.sh compares `tdmap run` with (issue 7 must-show
# 1): each workload of corr-specs, built with `tdmap cc`, traced by `tdmap trace` at 8
# threads (2 repetitions: the amount of shared memory is the same after the first), then
# analysed by `tdmap analyze --json --metric amount` per 4096-byte and per 1024-byte block,
# the two granularities corr-check.sh runs the detector at.
#
#   tests/vm/refs.sh TDMAP WORKLOAD_BUILD OUT_DIR
#
# WORKLOAD_BUILD holds the `tdmap cc` builds (make -C workloads tdmap BUILD=...).
# Writes OUT_DIR/NAME.BLOCK.json.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tdmap=$1 build=$2 out=$3
mkdir -p "$out"
trace=$(mktemp -d)
trap 'rm -rf "$trace"' EXIT
grep -v '^#' "$here/corr-specs" | while read -r name size _; do
  "$tdmap" trace --force -o "$trace/$name.trace" -- "$build/$name" 8 "$size" 2 >/dev/null
  for block in 4096 1024; do
    "$tdmap" analyze --json --metric amount --sharers all --block "$block" \
      "$trace/$name.trace" >"$out/$name.$block.json"
  done
done
echo "refs: exact matrices of $(grep -vc '^#' "$here/corr-specs") workloads in $out"
