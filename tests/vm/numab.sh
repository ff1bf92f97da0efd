# Sourced by the guest checks that read NUMA-balancing hinting faults (corr-check.sh,
# procs-check.sh). `numab_fast` turns NUMA balancing on with its scanner marking 4 MB
# every 20 ms (debugfs) and keeps the previous setting in `numab_old`; `numab_restore`
# puts it back. The default waits 1 s and then scans every 1-60 s, too slow for runs of
# seconds; and marking the whole address space at one instant (scan_size_mb 1024)
# aliases with an iterative program: every page's next toucher then comes from the
# same step of its loop. Returns 1 if the debugfs knobs are missing (default periods).
numab_fast() {
  local d=/sys/kernel/debug/sched/numa_balancing
  mount -t debugfs none /sys/kernel/debug 2>/dev/null
  numab_old=$(cat /proc/sys/kernel/numa_balancing 2>/dev/null || echo 0)
  echo 1 >/proc/sys/kernel/numa_balancing
  [ -d "$d" ] || return 1
  echo 0 >"$d/scan_delay_ms"
  echo 20 >"$d/scan_period_min_ms"
  echo 20 >"$d/scan_period_max_ms"
  echo 4 >"$d/scan_size_mb"
}

numab_restore() {
  echo "$numab_old" >/proc/sys/kernel/numa_balancing
}
