#!/usr/bin/env bash
# Installs everything tdmap needs to build and test on Debian 12, as root. Idempotent.
set -euo pipefail

PKGS=(
  build-essential pkg-config make cmake
  libhwloc-dev hwloc-nox libudev-dev libscotch-dev libnuma-dev numactl
  clang-16 libclang-16-dev llvm-16 libomp-16-dev
  zstd
  # /usr/bin/time: peak memory in `make bench-map`.
  time
  # libmai's Fortran interface (include/mai.f90) is compile-checked by `make c-test`.
  gfortran
  # Both MPIs: libtdmap_mpi is built once per MPI (crates/mpi/build.rs) and
  # tests/mpi_comm.rs runs its programs under both; the launch files are checked against
  # both (tests/launch_mpi.rs). They share mpicc/mpirun/mpiexec through alternatives, so
  # they are called by their explicit names (mpicc.openmpi, mpirun.openmpi, mpicc.mpich,
  # mpiexec.mpich).
  openmpi-bin libopenmpi-dev mpich libmpich-dev
  # cachegrind, the reference of tests/cachegrind.rs and `make sim-vs-cachegrind`.
  valgrind
  # scotch_gmap, the reference of tests/scotch_halo.rs (issue 20 must-show 2).
  scotch
  # `man tdmap` on the pages `make install` writes (checked by tests/install.sh).
  man-db
  # tests/report_html.rs loads `tdmap report`'s page in headless Chromium (issue 22).
  chromium
)
# The VM harness (tests/vm) boots a multi-node guest with these.
VM_PKGS=(qemu-system-x86 linux-image-amd64 busybox-static cpio procps)

missing=()
for p in "${PKGS[@]}" "${VM_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing Debian packages: ${missing[*]}; run this script as root" >&2
    exit 2
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    echo "setup: cargo not found; install Rust (rustup) first" >&2
    exit 2
  fi
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true
echo "setup: ok"
