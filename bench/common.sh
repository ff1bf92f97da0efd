# Shared by bench/trace.sh and bench/trace_model.sh (sourced): settings, the release
# build of tdmap, its runtime and the workloads, and the timing helpers.
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${THREADS:-2}
REPS=${REPS:-3}
OUT=${BENCH_DIR:-target/bench-trace}
TDMAP=target/release/tdmap
export OMP_WAIT_POLICY=passive

cargo build --release -q -p tdmap -p tdmap-rt
make -s -j2 -C workloads gcc tdmap TDMAP="$PWD/$TDMAP" BUILD="$PWD/$OUT/build" >/dev/null
mkdir -p "$OUT"

# shellcheck source=bench/lib.sh
. bench/lib.sh
