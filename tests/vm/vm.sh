#!/usr/bin/env bash
# Boots one multi-node guest under QEMU (TCG) and returns the guest's test status.
#
#   tests/vm/vm.sh SHAPE [CHECKER_FLAG...]
#
# SHAPE is 2x2 (2 nodes x 2 CPUs) or 4x1 (4 nodes x 1 CPU); each has its own distance
# matrix, given to QEMU with -numa dist and to the guest checker as the expectation.
# The initramfs holds busybox, tdmap, the numa_check and fault_check examples, their
# shared libraries and the dynamic loader, /init (tests/vm/init) and /guest-test.sh.
#
# Exit status: the guest's status (0 = all checks passed), 124 if the guest did not
# finish within VM_TIMEOUT seconds (qemu is killed), 3 if the guest died without a
# result, 2 if something the harness needs is missing.
# Environment: VM_TIMEOUT (default 600: a guard against a hung guest; the 2-node guest
# takes 150-310 s under TCG on a loaded 2-core machine), VM_KERNEL (default: newest
# /boot/vmlinuz-*-amd64), TDMAP_BIN, NUMA_CHECK_BIN (default: target/debug builds),
# MAI_TEST_DIR (default target/c-tests: libmai's C tests, `make c-test` builds them; the
# guest runs those present, with libmai.so found through their RUNPATH), WORKLOAD_DIR
# (default target/vm/wl/gcc: the gcc builds of workloads/, for corr-check.sh), REF_DIR
# (default target/vm/ref: their exact matrices, made by refs.sh).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
TIMEOUT=${VM_TIMEOUT:-600}
TDMAP_BIN=${TDMAP_BIN:-$repo/target/debug/tdmap}
NUMA_CHECK_BIN=${NUMA_CHECK_BIN:-$repo/target/debug/examples/numa_check}
FAULT_CHECK_BIN=${FAULT_CHECK_BIN:-$repo/target/debug/examples/fault_check}
MAI_TEST_DIR=${MAI_TEST_DIR:-$repo/target/c-tests}
QUARTERS_BIN=${QUARTERS_BIN:-$repo/target/vm/quarters}
BATCHES_BIN=${BATCHES_BIN:-$repo/target/vm/batches}
RT_SO=${RT_SO:-$(dirname "$TDMAP_BIN")/libtdmap_rt.so}
PROCSHARE_BIN=${PROCSHARE_BIN:-$repo/target/vm/procshare}
WORKLOAD_DIR=${WORKLOAD_DIR:-$repo/target/vm/wl/gcc}
REF_DIR=${REF_DIR:-$repo/target/vm/ref}

die() { echo "vm: $1" >&2; exit 2; }

[ $# -ge 1 ] || die "usage: tests/vm/vm.sh 2x2|4x1 [CHECKER_FLAG...]"
shape=$1; shift
case $shape in
  2x2) nodes=2 cpn=2 mem=512 dist="10,17;17,10" ;;
  4x1) nodes=4 cpn=1 mem=256
       dist="10,12,20,22;12,10,22,20;20,22,10,12;22,20,12,10" ;;
  *) die "unknown shape '$shape'; use 2x2 or 4x1" ;;
esac
for f in "$@"; do
  case $f in *[[:space:]:]*) die "checker flag '$f' must not hold spaces or ':'" ;; esac
done
flags=$(IFS=:; echo "$*")

find_kernel() {
  if [ -n "${VM_KERNEL:-}" ]; then echo "$VM_KERNEL"; return; fi
  # The newest generic kernel; cloud and rt flavours only if there is nothing else.
  local all
  all=$(find /boot -maxdepth 1 -name 'vmlinuz-*-amd64' 2>/dev/null | sort -V)
  { echo "$all" | grep -v -e '-cloud-amd64$' -e '-rt-amd64$' || echo "$all"; } | tail -n 1
}
kernel=$(find_kernel)
[ -n "$kernel" ] || die "no /boot/vmlinuz-*-amd64; run scripts/setup.sh (installs linux-image-amd64) or set VM_KERNEL"
[ -r "$kernel" ] || die "cannot read $kernel; run as root or set VM_KERNEL to a readable kernel"
for c in qemu-system-x86_64 busybox cpio timeout ldd; do
  command -v "$c" >/dev/null || die "'$c' not found; run scripts/setup.sh as root"
done
for b in "$TDMAP_BIN" "$NUMA_CHECK_BIN" "$FAULT_CHECK_BIN" "$QUARTERS_BIN" "$PROCSHARE_BIN"; do
  [ -x "$b" ] || die "$b missing; build it: make vm-test (cargo build --bin tdmap -p tdmap-sys --example numa_check --example fault_check; gcc -pthread -o target/vm/quarters tests/vm/quarters.c; the same for tests/vm/procshare.c)"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/tdmap-vm.XXXXXX")
qpid=
cleanup() {
  if [ -n "$qpid" ] && kill -0 "$qpid" 2>/dev/null; then
    # timeout(1) leads its own process group: kill the group, qemu with it.
    kill -TERM -- "-$qpid" 2>/dev/null || kill -TERM "$qpid" 2>/dev/null || true
    sleep 1
    kill -KILL -- "-$qpid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "vm: interrupted; stopping qemu" >&2; exit 130' INT TERM
echo "vm: work dir $work"

# Copies an executable to $root/bin/NAME, with every library ldd lists (loader included)
# at its host path, and records their folders for LD_LIBRARY_PATH.
root=$work/root
add_exe() {
  local src=$1 name=$2 lib
  cp -L "$src" "$root/bin/$name"
  if command -v strip >/dev/null; then strip --strip-debug "$root/bin/$name" 2>/dev/null || true; fi
  for lib in $(ldd "$src" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
    dirname "$lib" >>"$work/libdirs"
  done
}
mkdir -p "$root/bin" "$root/etc" "$root/proc" "$root/sys" "$root/dev" "$root/tmp"
: >"$work/libdirs"
add_exe "$(command -v busybox)" busybox
add_exe "$TDMAP_BIN" tdmap
add_exe "$NUMA_CHECK_BIN" numa_check
add_exe "$FAULT_CHECK_BIN" fault_check
for t in test_policies test_auto stencil_mai; do
  if [ -x "$MAI_TEST_DIR/$t" ]; then add_exe "$MAI_TEST_DIR/$t" "$t"; fi
done
add_exe "$QUARTERS_BIN" quarters
# tdmap exec (exec-check.sh): the runtime beside tdmap, and the batches program.
if [ -x "$BATCHES_BIN" ] && [ -f "$RT_SO" ]; then
  add_exe "$RT_SO" libtdmap_rt.so
  add_exe "$BATCHES_BIN" batches
fi
add_exe "$PROCSHARE_BIN" procshare
# The workloads (gcc builds) for corr-check.sh.
for w in "$WORKLOAD_DIR"/*; do
  if [ -x "$w" ]; then add_exe "$w" "$(basename "$w")"; fi
done
sort -u "$work/libdirs" | paste -sd: >"$root/etc/ld-library-path"
cp "$here/init" "$root/init"
cp "$here/guest-test.sh" "$root/guest-test.sh"
cp "$here/run-check.sh" "$root/run-check.sh"
cp "$here/report-check.sh" "$root/report-check.sh"
cp "$here/corr-check.sh" "$root/corr-check.sh"
cp "$here/procs-check.sh" "$root/procs-check.sh"
cp "$here/numab.sh" "$root/numab.sh"
cp "$here/corr-specs" "$root/corr-specs"
cp "$here/exec-check.sh" "$root/exec-check.sh"
mkdir -p "$root/ref"
if [ -d "$REF_DIR" ]; then cp "$REF_DIR"/*.json "$root/ref/" 2>/dev/null || true; fi
chmod 755 "$root/init"
(cd "$root" && find . -print0 | cpio --null -o -H newc -R +0:+0 --quiet) >"$work/initramfs.cpio"

qemu=(qemu-system-x86_64 -accel tcg -nodefaults -display none -monitor none -no-reboot
  -m "$((nodes * mem))M" -smp "$((nodes * cpn)),sockets=$nodes,cores=$cpn,threads=1"
  -serial "file:$work/console.log" -kernel "$kernel" -initrd "$work/initramfs.cpio"
  -append "console=ttyS0 quiet panic=-1 vmtest.cpn=$cpn vmtest.dist=$dist vmtest.flags=$flags")
IFS=';' read -r -a rows <<<"$dist"
for ((n = 0; n < nodes; n++)); do
  qemu+=(-object "memory-backend-ram,id=m$n,size=${mem}M"
    -numa "node,nodeid=$n,cpus=$((n * cpn))-$((n * cpn + cpn - 1)),memdev=m$n")
done
for ((s = 0; s < nodes; s++)); do
  IFS=',' read -r -a vals <<<"${rows[$s]}"
  for ((d = 0; d < nodes; d++)); do
    [ "$s" -eq "$d" ] || qemu+=(-numa "dist,src=$s,dst=$d,val=${vals[$d]}")
  done
done

echo "vm: booting $shape ($nodes nodes x $cpn CPUs, distances $dist) with $(basename "$kernel"), timeout ${TIMEOUT}s"
start=$(date +%s.%N)
timeout -k 5 "$TIMEOUT" "${qemu[@]}" </dev/null >"$work/qemu.out" 2>&1 &
qpid=$!
rc=0
wait "$qpid" || rc=$?
qpid=
secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')

tr -d '\r' <"$work/console.log" >"$work/console.txt" 2>/dev/null || : >"$work/console.txt"
sed -n '/^TDMAP-VM-BEGIN/,/^TDMAP-VM-RESULT/p' "$work/console.txt" | sed '1d;$d;s/^/guest| /'
marker=$(grep -a -m1 '^TDMAP-VM-RESULT status=' "$work/console.txt" || true)
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  echo "vm: $shape: TIMEOUT: no result after ${TIMEOUT}s; qemu killed. Last console lines:"
  tail -n 20 "$work/console.txt" | sed 's/^/console| /'
  echo "vm-result shape=$shape status=timeout seconds=$secs"
  exit 124
fi
if [ -z "$marker" ]; then
  echo "vm: $shape: the guest ended without a result marker (qemu exit $rc). Last lines:"
  tail -n 30 "$work/console.txt" | sed 's/^/console| /'
  sed 's/^/qemu| /' "$work/qemu.out"
  echo "vm-result shape=$shape status=none seconds=$secs"
  exit 3
fi
status=$(echo "$marker" | sed -n 's/.*status=\([0-9]*\).*/\1/p')
uptime=$(echo "$marker" | sed -n 's/.*uptime=\([0-9.]*\).*/\1/p')
echo "vm: $shape: guest status $status, ${secs}s from qemu start to result (guest uptime ${uptime}s)"
echo "vm-result shape=$shape status=$status seconds=$secs guest_uptime=$uptime"
exit "$status"
