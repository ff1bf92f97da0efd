#!/usr/bin/env bash
# The VM test set (`make vm-test`): boots the 2-node and the 4-node guests, which must
# pass every check (numa_check, and fault_check for the kernel sampler); then proves the
# harness reports failures (a guest with a deliberately wrong expectation must fail, with
# that mismatch named) and times out cleanly (qemu killed, nothing left running, work dir
# removed). Prints the time from qemu start to result for each guest. Expects tdmap,
# numa_check and fault_check built (see vm.sh).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
failed=0
summary=()
# The guests' own failure lines, repeated at the end: CI shows a log's tail, and a
# guest's FAIL line is a hundred lines above it.
guest_fails=()

# Runs vm.sh with the given arguments, keeping its output in $out and status in $rc.
run_vm() {
  out=$(bash "$here/vm.sh" "$@" 2>&1)
  rc=$?
  echo "$out"
  summary+=("$(echo "$out" | grep '^vm-result' | sed "s/\$/ args=$*/")")
}

pass() { echo "vm-test: PASS $1"; }
fail() { echo "vm-test: FAIL $1"; failed=$((failed + 1)); }

for shape in 2x2 4x1; do
  run_vm "$shape"
  while IFS= read -r l; do
    [ -n "$l" ] && guest_fails+=("$shape: $l")
  done < <(echo "$out" | grep -E '^guest\| (FAIL|RETRY)|^guest\| [a-z_]+: [1-9][0-9]* of [0-9]+ (checks )?failed')
  # The 2x2 guest also runs tdmap run's checks (issue 7 must-shows 2 and 1).
  run_ok=1
  [ "$shape" = 2x2 ] && { echo "$out" | grep -q '^guest| run_check: 0 of' || run_ok=0; }
  [ "$shape" = 2x2 ] && { echo "$out" | grep -q '^guest| run_check_huge: 0 of' || run_ok=0; }
  [ "$shape" = 2x2 ] && { echo "$out" | grep -q '^guest| corr_check: 0 of' || run_ok=0; }
  [ "$shape" = 2x2 ] && { echo "$out" | grep -q '^guest| report_check: 0 of' || run_ok=0; }
  [ "$shape" = 2x2 ] && { echo "$out" | grep -q '^guest| exec_check: 0 of' || run_ok=0; }
  [ "$shape" = 2x2 ] && { echo "$out" | grep -q '^guest| procs_check: 0 of' || run_ok=0; }
  if [ "$rc" -eq 0 ] && [ "$run_ok" -eq 1 ] && echo "$out" | grep -q '^guest| numa_check: 0 of' &&
    echo "$out" | grep -q '^guest| fault_check: 0 of'; then
    pass "$shape guest: all checks passed"
  else
    fail "$shape guest: status $rc"
  fi
  # libmai (issue 9): every policy's pages on the formula's nodes, automatic mode, and
  # the bind_block stencil.
  if echo "$out" | grep -q '^guest| test_policies: 0 of 11 failed' &&
    echo "$out" | grep -q '^guest| test_auto: 0 of 2 failed' &&
    echo "$out" | grep -q '^guest| stencil_mai: .*matches serial, bind_block placement verified'; then
    pass "$shape guest: libmai placement, automatic mode and stencil"
  else
    fail "$shape guest: libmai C tests (build them with make c-test)"
  fi
  # Issue 22 must-show 3: the 64 MiB static array of test_auto, placed by libmai's
  # constructor before main, has every page on the node of MApp's choice for this shape
  # (cyclic on 2 nodes, NUMA factor 1.7; bind_block on 4, factor 2.2): move_pages.
  want=$([ "$shape" = 2x2 ] && echo cyclic || echo bind_block)
  if echo "$out" | grep -q "^guest| test_auto: static grid(67108864): 1638[34] pages placed $want\$" &&
    echo "$out" | grep -q "^guest| log| mai-auto: static grid(67108864) = 0x[0-9a-f]*: $want\$"; then
    pass "$shape guest: the 64 MiB static array is placed $want, page by page"
  else
    fail "$shape guest: the 64 MiB static array was not placed $want (test_auto static)"
  fi
done

# A wrong expectation in the guest must come back as a failure, and the right one.
run_vm 2x2 --wrong-expectation
want='FAIL move_pages: query after move to node 1: page 0 of 256 is on node 1, expected node 0'
if [ "$rc" -eq 1 ] && echo "$out" | grep -qF "$want"; then
  pass "wrong expectation in the guest is reported (status 1, mismatch named)"
else
  fail "wrong expectation: expected status 1 and '$want', got status $rc"
fi
want='page 0 of 61 is on node 0, formula says 1 (libmai planned 0)'
if echo "$out" | grep -qF "$want" && echo "$out" | grep -q '^guest| test_policies: 1 of 1 failed'; then
  pass "a wrong placement formula in the libmai C test is reported ('$want')"
else
  fail "libmai wrong formula: expected '$want' and 'test_policies: 1 of 1 failed'"
fi

# A guest that cannot finish in time: timeout reported, qemu gone, work dir removed.
out=$(VM_TIMEOUT=3 bash "$here/vm.sh" 2x2 2>&1)
rc=$?
echo "$out"
work=$(echo "$out" | sed -n 's/^vm: work dir //p')
if [ "$rc" -eq 124 ] && echo "$out" | grep -q 'TIMEOUT' && [ -n "$work" ] &&
  [ ! -e "$work" ] && ! pgrep -f "$work" >/dev/null; then
  pass "timeout is reported (status 124), qemu killed, $work removed"
else
  fail "timeout: status $rc, work dir '$work' $([ -e "$work" ] && echo left) $(pgrep -af "$work")"
fi

# Bad input and a guest that never reports: named errors, never a pass.
out=$(bash "$here/vm.sh" 3x3 2>&1); rc=$?
if [ "$rc" -eq 2 ] && echo "$out" | grep -q "unknown shape '3x3'"; then
  pass "unknown shape is refused (status 2)"
else
  fail "unknown shape: status $rc: $out"
fi
out=$(VM_KERNEL=/bin/true bash "$here/vm.sh" 2x2 2>&1); rc=$?
if [ "$rc" -eq 3 ] && echo "$out" | grep -q 'without a result marker'; then
  pass "a guest that never reports a result fails (status 3)"
else
  fail "no-result guest: status $rc: $out"
fi

echo "vm-test: time from qemu start to result, per guest:"
printf '  %s\n' "${summary[@]}"
if [ "${#guest_fails[@]}" -ne 0 ]; then
  echo "vm-test: failure and retry lines of the 2x2 and 4x1 guests:"
  printf '  %s\n' "${guest_fails[@]}"
fi
if [ "$failed" -ne 0 ]; then
  echo "vm-test: $failed failed"
  exit 1
fi
echo "vm-test: all passed"
