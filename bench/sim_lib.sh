# Shared by the scripts that trace the workloads and replay them with `tdmap sim`
# (bench/sim_workloads.sh, scripts/sim-ordering.sh, scripts/calibrate-verdict.sh), sourced
# once THREADS and OUT are set: the release build (unless TDMAP names a binary), the
# workloads built by its `tdmap cc`, one trace per run, and the table of modelled times
# relative to os.
export OMP_WAIT_POLICY=passive
if [ -z "${TDMAP:-}" ]; then
  cargo build --release -q -p tdmap -p tdmap-rt
  TDMAP=target/release/tdmap
fi
mkdir -p "$OUT"
make -s -j2 -C workloads tdmap TDMAP="$(realpath "$TDMAP")" BUILD="$(realpath -m "$OUT")/build" >/dev/null

# workload_trace TRACE WORKLOAD ARGS...: traces one run of WORKLOAD at THREADS threads into
# TRACE, unless KEEP_TRACES=1 and TRACE is already there (each new trace interleaves the
# threads differently, which moves the online policies' figures).
workload_trace() {
  local trace=$1 w=$2
  shift 2
  if [ "${KEEP_TRACES:-0}" != 1 ] || [ ! -s "$trace" ]; then
    "$TDMAP" trace --force -o "$trace" -- "$OUT/build/tdmap/$w" "$THREADS" "$@" >/dev/null 2>&1
  fi
}

# relative_table SUMMARY WIDTH: the "workload policy time" lines of SUMMARY as a table, a
# row per workload and a geometric-mean row, columns WIDTH wide; with ORDER=1 it then
# checks the means against kMAF Fig. 7's ordering, best-static <= kmaf <= compact <=
# random, with os within 0.05 of random.
relative_table() {
  awk -v width="$2" -v order="${ORDER:-0}" '
    { if (!($2 in seen)) { seen[$2]=1; pol[++np]=$2 }
      if (!($1 in wseen)) { wseen[$1]=1; wl[++nw]=$1 }
      t[$1, $2]=$3 }
    END {
      printf "%-10s", "workload"; for (p=1; p<=np; p++) printf " %*.*s", width, width, pol[p]; printf "\n"
      for (i=1; i<=nw; i++) {
        printf "%-10s", wl[i]
        for (p=1; p<=np; p++) { v=t[wl[i], pol[p]]; printf " %*.3f", width, v; lg[p]+=log(v) }
        printf "\n"
      }
      printf "%-10s", "geomean"
      for (p=1; p<=np; p++) { g[pol[p]]=exp(lg[p]/nw); printf " %*.3f", width, g[pol[p]] }
      printf "\n"
      if (!order) exit
      printf "\nkMAF Fig. 7 ordering on the averages (SIMULATED):\n"
      split("best-static kmaf compact random", chain, " ")
      for (k=1; k<4; k++) {
        a=chain[k]; b=chain[k+1]
        printf "  %-11s <= %-8s %.3f <= %.3f  %s\n", a, b, g[a], g[b], (g[a] <= g[b] ? "holds" : "DEPARTS")
      }
      d = g["os"] - g["random"]; if (d < 0) d = -d
      printf "  os near random    |%.3f - %.3f| = %.3f  %s\n", g["os"], g["random"], d, (d <= 0.05 ? "holds" : "DEPARTS")
    }' "$1"
}
