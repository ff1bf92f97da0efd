# Must-show 2 of issue 7, run in the 2-node guest by guest-test.sh: `tdmap run` on
# quarters (tests/vm/quarters.c: the main thread first-touches everything, then threads
# 0..3 write their own quarter). NUMA balancing is off during the run, so only tdmap can
# move pages. Passes when every thread is pinned to one CPU, the one tdmap's report
# gives for its tid; >= 90% of each quarter is on the node of its thread's CPU
# (move_pages query inside the program); and at least one quarter left its first-touch
# node (so tdmap moved it). Prints "run_check: 0 of N checks failed" like the others.
# With a second argument `huge`, each quarter is one transparent huge page: the program
# must report all its data in huge pages, the report samples on huge pages, and the
# checks are the same (a huge page's samples count for the whole of it, so a quarter
# moves although no 4 KiB page of it is sampled often enough alone); prints
# "run_check_huge: ...".
set -u
mode=${2:-}
old=$(cat /proc/sys/kernel/numa_balancing 2>/dev/null || echo 0)
echo 0 >/proc/sys/kernel/numa_balancing
/bin/tdmap run --report /tmp/run-report.txt -- /bin/quarters "${1:-8}" $mode >/tmp/quarters.out
rc=$?
echo "$old" >/proc/sys/kernel/numa_balancing
sed 's/^/run| /' /tmp/quarters.out /tmp/run-report.txt
awk -v rc="$rc" -v mode="$mode" '
  FNR == NR { if ($1 == "quarter") { q[$2] = $0; tid[$2] = $4; cpus[$2] = $6; node[$2] = $8;
              on[$2] = $10; of[$2] = $12; init[$2] = $14 }
              if ($1 == "huge_kb") { hkb = $2; hof = $4 } next }
  /^  thread [0-9]+ tid / && /pinned to CPU/ { pin[$4] = $10 }
  /soft-dirty extra faults/ { sd = 1 }
  /^samples: / { for (i = 1; i < NF; i++) if ($(i + 1) == "on" && $(i + 2) == "huge") hs = $i }
  /^pages passing Eq. 6/ { moved = $7 }
  function check(ok, what) { n++; if (ok) print "PASS " what; else { print "FAIL " what; bad++ } }
  END {
    check(rc == 0, "tdmap run exits with the program code 0 (got " rc ")")
    check(sd, "soft-dirty extra faults were injected")
    if (mode == "huge") {
      check(hkb > 0 && hkb == hof, "all data in transparent huge pages: " hkb " of " hof " kB")
      check(hs > 0, hs + 0 " samples on huge pages")
    }
    left = 0
    for (k = 0; k < 4; k++) {
      check(k in q, "quarter " k " reported by the program")
      if (!(k in q)) continue
      check(cpus[k] ~ /^[0-9]+$/, "thread of quarter " k " (tid " tid[k] ") pinned to one CPU: " cpus[k])
      check(pin[tid[k]] == cpus[k], "tid " tid[k] " is where the report pinned it (report: CPU " pin[tid[k]] ", affinity: " cpus[k] ")")
      check(on[k] * 10 >= of[k] * 9, "quarter " k ": " on[k] " of " of[k] " pages on node " node[k] " of its thread")
      if (node[k] != init[k]) left++
    }
    check(left >= 1, left " quarters left their first-touch node; tdmap moved " moved " pages")
    printf "run_check%s: %d of %d checks failed\n", (mode == "huge" ? "_huge" : ""), bad, n
    exit bad > 0
  }' /tmp/quarters.out /tmp/run-report.txt
