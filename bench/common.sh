# Shared by the trace benches (sourced): settings, the release build of tdmap, its
# runtime and the workloads, the timing helpers, and the header naming the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${THREADS:-8}
REPS=${REPS:-3}
OUT=${BENCH_DIR:-target/bench-trace}
TDMAP=target/release/tdmap
export OMP_WAIT_POLICY=passive

cargo build --release -q -p tdmap -p tdmap-rt
make -s -j2 -C workloads gcc tdmap TDMAP="$(realpath "$TDMAP")" BUILD="$(realpath -m "$OUT")/build" >/dev/null
mkdir -p "$OUT"

# shellcheck source=bench/lib.sh
. bench/lib.sh

# Prints the machine, the load and the settings ("$1" adds to the settings line), so
# that every table says where and under what load it was measured.
bench_header() {
  echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -r)"
  echo "load: $(uptime | sed 's/.*load average/load average/')"
  echo "$1; OMP_WAIT_POLICY=passive; release build; output on $(df -h "$OUT" | awk 'NR==2{print $1}')"
}

# The programs to run under $BASE (bench/trace_ab.sh, trace_same.sh): built by $BASE's own
# `tdmap cc` when its runtime archive sits beside it (a change to the runtime is then
# compared too: each build runs with its own runtime linked in), else this build's.
base_programs() {
  if [ -e "$(dirname "$BASE")/libtdmap_rt.a" ]; then
    make -s -j2 -C workloads tdmap TDMAP="$(realpath "$BASE")" BUILD="$(realpath -m "$OUT")/build-base" >/dev/null
    echo "$OUT/build-base/tdmap"
  else
    echo "$OUT/build/tdmap"
  fi
}
