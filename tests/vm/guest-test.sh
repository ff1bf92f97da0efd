# The test script run inside the guest by /init (tests/vm). Its exit status is the
# guest's result. The shape comes from the kernel command line that tests/vm/vm.sh
# builds from the same table as QEMU's -numa options: vmtest.cpn (CPUs per node),
# vmtest.dist (the distance matrix) and vmtest.flags (extra checker flags, ':'-separated).
set -u
cpn= dist= flags=
for w in $(cat /proc/cmdline); do
  case $w in
    vmtest.cpn=*) cpn=${w#vmtest.cpn=} ;;
    vmtest.dist=*) dist=${w#vmtest.dist=} ;;
    vmtest.flags=*) flags=$(echo "${w#vmtest.flags=}" | tr ':' ' ') ;;
  esac
done
if [ -z "$cpn" ] || [ -z "$dist" ]; then
  echo "guest: vmtest.cpn or vmtest.dist missing from the kernel command line"
  exit 3
fi
echo "guest: kernel $(uname -r), nodes online $(cat /sys/devices/system/node/online), CPUs $(cat /sys/devices/system/cpu/online), numa_balancing $(cat /proc/sys/kernel/numa_balancing 2>/dev/null || echo n/a)"
echo "guest: tdmap topo"
/bin/tdmap topo || exit 1
# shellcheck disable=SC2086 # flags are words on purpose
/bin/numa_check --tdmap /bin/tdmap --cpus-per-node "$cpn" --distances "$dist" $flags
status=$?
# The kernel sampler: first touches, soft-dirty injection (Debian kernels have it) and
# NUMA-balancing hinting faults of a node-1 thread writing node-0 pages. Not in runs that
# test the harness with deliberately wrong expectations (flags given), to save time.
if [ -z "$flags" ]; then
  /bin/fault_check --cpus-per-node "$cpn" --require-soft-dirty || status=1
fi
# libmai's C tests (issue 9): each page where its policy's formula puts it. Skipped for
# the harness's own runs with checker flags (e.g. --wrong-expectation).
if [ -z "$flags" ] && [ -x /bin/test_policies ]; then
  # NUMA balancing would move pages behind the tests' backs.
  echo 0 >/proc/sys/kernel/numa_balancing 2>/dev/null
  for t in test_policies test_auto stencil_mai; do
    [ -x "/bin/$t" ] || { echo "guest: /bin/$t missing"; status=1; continue; }
    "/bin/$t" || status=1
  done
fi
case " $flags " in
  *" --wrong-expectation "*)
    # The libmai checks must be able to fail too: a wrong formula has to be reported.
    echo 0 >/proc/sys/kernel/numa_balancing 2>/dev/null
    [ -x /bin/test_policies ] && /bin/test_policies wrong_cyclic ;;
esac
# tdmap run moves a master-initialised program's pages to its threads' nodes (2 nodes x 2
# CPUs: four threads, two per node).
if [ -z "$flags" ] && [ "$cpn" = 2 ] && [ "$dist" = "10,17;17,10" ]; then
  # tdmap exec pins threads across both nodes; a foreign mapping is refused (issue 22).
  if [ -x /bin/batches ]; then sh /exec-check.sh || status=1; fi
  sh /run-check.sh 8 || status=1
  # The same with one transparent huge page per quarter, in 2 s: counted per huge page,
  # the samples move each quarter within a few periods of the first mapping; counted
  # per 4 KiB page, as before tdmap read the page size, they did not within 2 s.
  sh /run-check.sh 2 huge || status=1
  # tdmap report and the run heatmap on two nodes (issue 22 items 5-6).
  sh /report-check.sh || status=1
  # The matrix detected online against each workload's sharing (issue 7 must-show 1).
  sh /corr-check.sh || status=1
  # Programs of several processes (issue 19 must-shows 1 and 4).
  sh /procs-check.sh || status=1
fi
exit "$status"
