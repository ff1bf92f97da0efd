# Issue 19 must-shows 1 and 4, run in the 2-node guest by guest-test.sh.
# 1. The kernel sampler (first touches, soft-dirty extra faults, NUMA-balancing hinting
#    faults) on forkshare 4 (20 repeats, 20 ms periods) (processes 2k and 2k+1 share region k: shared anonymous
#    memory, and a memfd mapped at a different address per process): the detected
#    matrix, summed per process (processes in pid order: creation order), correlates
#    >= 0.9 (Pearson over the pairs) with the construction.
# 2. procshare (tests/vm/procshare.c: process 0 first-touches two shared regions, then
#    processes 2k and 2k+1 write region k): under `tdmap run`, NUMA balancing off so
#    only tdmap moves pages, each process is pinned to one CPU, its pair partner is on
#    the same node, and >= 90% of its region is on that node (move_pages query inside
#    the program).
# Prints "procs_check: N of M checks failed" like the other checkers.
set -u
bad=0 n=0
check() { n=$((n + 1)); if [ "$1" = 1 ]; then echo "PASS $2"; else echo "FAIL $2"; bad=$((bad + 1)); fi; }

# NUMA balancing scans every process from its start (a new process waits 1 s by default,
# longer than the children live here, while process 0 is scanned: its hinting faults
# alone would weigh the pair (0,1)), as in corr-check.sh.
. /numab.sh
numab_fast
/bin/tdmap run --sampler kernel --period 20 --dry-run --json --report /tmp/fs.json -- /bin/forkshare 4 256 20 >/tmp/fs.out
rc=$?
numab_restore
check "$([ "$rc" = 0 ] && echo 1)" "tdmap run of forkshare 4 exits 0 (got $rc)"
j=$(tr -d ' \n' </tmp/fs.json)
cells=$(echo "$j" | sed 's/.*"matrix":{[^}]*"cells":\[\([^]]*\)\].*/\1/')
size=$(echo "$j" | sed 's/.*"matrix":{[^}]*"n":\([0-9]*\).*/\1/')
pids=$(echo "$j" | sed 's/.*"threads":\[\([^]]*\)\],"untracked".*/\1/' | grep -o '"pid":[0-9]*' | cut -d: -f2 | tr '\n' ' ')
echo "procs| matrix $size: $cells; thread pids: $pids"
s=$(awk -v n="$size" -v cells="$cells" -v pids="$pids" 'BEGIN {
  split(cells, c, ","); np = split(pids, tp, " ")
  # processes in pid order
  for (i = 1; i <= np; i++) if (!(tp[i] in seen)) { seen[tp[i]] = 1; u[++k] = tp[i] }
  for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (u[j] < u[i]) { t = u[i]; u[i] = u[j]; u[j] = t }
  for (i = 1; i <= k; i++) rank[u[i]] = i - 1
  for (i = 0; i < n; i++) for (j = 0; j < n; j++) m[rank[tp[i + 1]], rank[tp[j + 1]]] += c[i * n + j + 1]
  for (i = 0; i < 4; i++) for (j = i + 1; j < 4; j++) {
    d = m[i, j]; e = (i % 2 == 0 && j == i + 1) ? 1 : 0
    p++; sd += d; se += e; D[p] = d; E[p] = e
  }
  md = sd / p; me = se / p
  for (q = 1; q <= p; q++) { a += (D[q] - md) * (E[q] - me); b += (D[q] - md) * (D[q] - md); cc += (E[q] - me) * (E[q] - me) }
  # busybox awk has no sqrt: the signed square of the correlation.
  printf "%.3f", (b > 0 ? (a < 0 ? -1 : 1) * a * a / (b * cc) : 0)
}')
check "$(awk -v s="$s" 'BEGIN { print (s >= 0.81) ? 1 : 0 }')" "kernel sampler, forkshare 4: process matrix correlates with the pairs (0,1),(2,3): r^2 = $s, needs r >= 0.9 (r^2 >= 0.81)"

old=$(cat /proc/sys/kernel/numa_balancing 2>/dev/null || echo 0)
echo 0 >/proc/sys/kernel/numa_balancing
/bin/tdmap run --report /tmp/ps-report.txt -- /bin/procshare 6 >/tmp/ps.out
rc=$?
echo "$old" >/proc/sys/kernel/numa_balancing
sed 's/^/procs| /' /tmp/ps.out /tmp/ps-report.txt
check "$([ "$rc" = 0 ] && echo 1)" "tdmap run of procshare exits 0 (got $rc)"
for p in 0 1 2 3; do
  line=$(grep "^proc $p " /tmp/ps.out)
  check "$([ -n "$line" ] && echo 1)" "process $p reported"
  [ -n "$line" ] || continue
  set -- $line
  cpus=$8 node=${10} on=${12} of=${14} init=${16}
  mate=$(grep "^proc $((p ^ 1)) " /tmp/ps.out | awk '{ print $10 }')
  check "$(echo "$cpus" | grep -qx '[0-9]*' && echo 1)" "process $p pinned to one CPU: $cpus"
  check "$([ "$mate" = "$node" ] && echo 1)" "process $p on node $node with its partner (node $mate)"
  check "$([ $((on * 10)) -ge $((of * 9)) ] && echo 1)" "process $p: $on of $of pages of its region on its node $node (first touch: node $init)"
done
echo "procs_check: $bad of $n checks failed"
[ "$bad" = 0 ]
