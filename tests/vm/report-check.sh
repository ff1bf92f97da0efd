# Issue 22 items 5-6 in the 2-node guest, run by guest-test.sh: `tdmap run` on quarters
# for 3 s (four threads, two per node once mapped) writes a run report and an SVG heatmap; then
# `tdmap report` makes its page. Passes when the heatmap is titled as page-fault samples
# and draws the boundary between the two nodes' threads, the report's timeline holds the
# periods in which threads were pinned, and the page places threads in PUs of both nodes,
# with the node boundary in its heatmap. Prints "report_check: 0 of N checks failed".
set -u
old=$(cat /proc/sys/kernel/numa_balancing 2>/dev/null || echo 0)
echo 0 >/proc/sys/kernel/numa_balancing
/bin/tdmap run --json --report /tmp/rr.json --heatmap /tmp/rh.svg -- /bin/quarters 3 >/dev/null
rc=$?
echo "$old" >/proc/sys/kernel/numa_balancing
/bin/tdmap report /tmp/rr.json -o /tmp/report.html --json >/tmp/report.out
rrc=$?
sed 's/^/report| /' /tmp/report.out
n=0 bad=0
check() {
  n=$((n + 1))
  if [ "$1" -eq 0 ]; then echo "PASS $2"; else echo "FAIL $2"; bad=$((bad + 1)); fi
}
check "$rc" "tdmap run exits 0 (got $rc)"
check "$rrc" "tdmap report exits 0 (got $rrc)"
grep -q 'page-fault samples on shared sub-blocks' /tmp/rh.svg
check $? "the run heatmap is titled as page-fault samples"
# Each guest node is a package of its own: the boundary is drawn as the package one.
grep -Eq 'class="edge-(node|package)"' /tmp/rh.svg
check $? "the run heatmap draws the boundary between the nodes' threads"
grep -Eq '"pins": [1-9]' /tmp/rr.json
check $? "the run report's timeline has a period in which threads were pinned"
grep -q 'id="timeline-chart"' /tmp/report.html
check $? "the page has the run's timeline"
grep -q 'class="edge-node"' /tmp/report.html
check $? "the page's heatmap draws the node boundary"
for node in 0 1; do
  # The node's box runs from its data-node mark to the next one.
  sed -n "s/.*data-node=\"$node\"//p" /tmp/report.html | sed 's/data-node=.*//' | grep -q 'pu busy'
  check $? "the page places a thread in a PU of node $node"
done
echo "report_check: $bad of $n checks failed"
[ "$bad" -eq 0 ]
