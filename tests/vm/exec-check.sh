# Issue 22, run in the 2-node guest (2 x 2 CPUs) by guest-test.sh: `tdmap exec` pins
# each thread of /bin/batches (tests/exec/batches.c) on the CPU its mapping gives,
# across both nodes, as the program reads it from /proc; a mapping made for
# xeon-x7550-4s is refused (exit 2, the program does not run); `--format numactl` and
# the JSON's membind name both nodes for a mapping that spans them. Prints
# "exec_check: N of M checks failed" like the others.
set -u
n=0 bad=0
check() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "exec| PASS $2"; else echo "exec| FAIL $2"; bad=$((bad + 1)); fi; }
# Threads 0-3 share in pairs (0,3) and (1,2): the greedy mapping keeps each pair on one
# node, so the four threads use both nodes.
printf '0,1,1,9\n1,0,9,1\n1,9,0,1\n9,1,1,0\n' >/tmp/exec.csv
/bin/tdmap map --matrix /tmp/exec.csv --format json >/tmp/exec.json
check $? "tdmap map --format json"
want=$(sed -n 's/^ *"os": \([0-9]*\),*$/\1/p' /tmp/exec.json | tr '\n' ' ')
/bin/tdmap exec --mapping /tmp/exec.json -- /bin/batches 1 3 >/tmp/exec.out 2>/tmp/exec.err
rc=$?
sed 's/^/exec| /' /tmp/exec.out /tmp/exec.err
got=$(sed 's/^thread [0-9]*: //' /tmp/exec.out | tr '\n' ' ')
[ "$rc" = 0 ] && [ -n "$want" ] && [ "$got" = "$want" ]
check $? "threads pinned as the mapping says (want $want, got $got)"
membind=$(tr -d ' \n' </tmp/exec.json | sed -n 's/.*"membind":\[\([0-9,]*\)\].*/\1/p')
[ "$membind" = "0,1" ]
check $? "membind of a mapping over both nodes is 0,1 (got $membind)"
/bin/tdmap map --matrix /tmp/exec.csv --format numactl | grep -q -- '--physcpubind=0-3 --membind=0-1 '
check $? "numactl line binds CPUs 0-3 and nodes 0-1"
/bin/tdmap map --matrix /tmp/exec.csv --machine xeon-x7550-4s --format json >/tmp/exec-xeon.json
/bin/tdmap exec --mapping /tmp/exec-xeon.json -- /bin/batches 1 1 >/tmp/exec-xeon.out 2>/tmp/exec-xeon.err
rc=$?
[ "$rc" = 2 ] && [ ! -s /tmp/exec-xeon.out ] && [ "$(wc -l </tmp/exec-xeon.err)" = 1 ] &&
  grep -q 'made for xeon-x7550-4s' /tmp/exec-xeon.err
check $? "a mapping for xeon-x7550-4s is refused with one line, exit 2 (got $rc: $(cat /tmp/exec-xeon.err))"
echo "exec_check: $bad of $n checks failed"
[ "$bad" = 0 ]
