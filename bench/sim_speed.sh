#!/usr/bin/env bash
# Replay speed of `tdmap sim` (`make bench-sim-speed`): simulated accesses x policies per
# CPU second of the sim process (user + system, from /usr/bin/time), the figure of issue
# 18 item 7. BASE=path/to/an/older/tdmap runs that binary too, interleaved with this one
# on the same traces, and prints both side by side with their ratio, so that a change is
# measured in one run under the same machine load. STAT=median takes each binary's median
# CPU time over the ROUNDS runs instead of its best (e.g. ROUNDS=5 STAT=median on a busy
# machine, where the best run is the luckiest).
# Usage: bench/sim_speed.sh TRACE... (default: the traces `make bench-sim-workloads` left).
set -euo pipefail
cd "$(dirname "$0")/.."
TDMAP=${TDMAP:-target/release/tdmap}
MACHINE=${MACHINE:-xeon-x7550-4s}
POLICIES=${POLICIES:-os,compact,scatter,random,interleave,numa-balancing,sammu,kmaf,oracle}
ROUNDS=${ROUNDS:-3}
STAT=${STAT:-best}
case $STAT in best | median) ;; *)
  echo "tdmap: STAT=$STAT: use STAT=best or STAT=median" >&2
  exit 2
  ;;
esac
# shellcheck source=bench/lib.sh
. bench/lib.sh
bench_traces "$@"
bins=("$TDMAP")
[ -z "${BASE:-}" ] || bins=("$BASE" "$TDMAP")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One run: prints "ACCESSES POLICIES CPU_SECONDS"; the output must match across binaries.
run() {
  local bin=$1 trace=$2 out=$3
  /usr/bin/time -f "%U %S" -o "$tmp/time" "$bin" sim "$trace" --machine "$MACHINE" \
    --policies "$POLICIES" >"$out"
  local acc npol
  acc=$(head -1 "$out" | sed 's/.* \([0-9]*\) accesses.*/\1/')
  npol=$(awk 'NR>2 && NF==8' "$out" | wc -l)
  echo "$acc $npol $(awk '{print $1 + $2}' "$tmp/time")"
}

printf '%-28s %-8s %14s %14s\n' trace binary "M acc*pol/CPUs" "CPU s ($STAT)"
declare -A sum_work=() sum_cpu=()
for trace in "${traces[@]}"; do
  declare -A best=() times=()
  for _ in $(seq "$ROUNDS"); do
    for i in "${!bins[@]}"; do
      read -r acc npol cpu < <(run "${bins[$i]}" "$trace" "$tmp/out$i")
      times[$i]="${times[$i]:-} $cpu"
    done
    if [ ${#bins[@]} -gt 1 ] && ! cmp -s "$tmp/out0" "$tmp/out1"; then
      echo "tdmap: $trace: the two binaries print different results" >&2
      exit 1
    fi
  done
  for i in "${!bins[@]}"; do
    # The best (least) or the median (the lower middle one) of the rounds' CPU times.
    pick=1
    [ "$STAT" = best ] || pick=$(((ROUNDS + 1) / 2))
    best[$i]=$(echo "${times[$i]}" | tr ' ' '\n' | sed '/^$/d' | sort -g | sed -n "${pick}p")
    sum_work[$i]=$(awk -v s="${sum_work[$i]:-0}" -v a="$acc" -v p="$npol" 'BEGIN{print s + a*p}')
    sum_cpu[$i]=$(awk -v s="${sum_cpu[$i]:-0}" -v c="${best[$i]}" 'BEGIN{print s + c}')
    name=new; [ ${#bins[@]} -gt 1 ] && [ "$i" = 0 ] && name=base
    awk -v t="$(basename "$trace")" -v n="$name" -v a="$acc" -v p="$npol" -v c="${best[$i]}" \
      'BEGIN{printf "%-28s %-8s %14.1f %14.2f\n", t, n, a*p/c/1e6, c}'
  done
  if [ ${#bins[@]} -gt 1 ]; then
    awk -v a="${best[0]}" -v b="${best[1]}" 'BEGIN{printf "%-28s %-8s %14.3f  (base CPU s / new CPU s)\n", "", "speedup", a/b}'
  fi
  unset best times
done
# Every trace together: all accesses x policies over all the best CPU seconds.
for i in "${!bins[@]}"; do
  name=new; [ ${#bins[@]} -gt 1 ] && [ "$i" = 0 ] && name=base
  awk -v n="$name" -v w="${sum_work[$i]}" -v c="${sum_cpu[$i]}" \
    'BEGIN{printf "%-28s %-8s %14.1f %14.2f\n", "all traces", n, w/c/1e6, c}'
done
echo "policies: $POLICIES ($(echo "$POLICIES" | tr , '\n' | wc -l)); best-static's candidate replays are inside its CPU time but counted as one policy"
echo "load: $(uptime | sed 's/.*load/load/')"
