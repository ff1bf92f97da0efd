#!/usr/bin/env bash
# Issue 20 must-show 5: the Slurm output of `tdmap map` works inside an allocation of half
# the node's CPUs, on a real single-node Slurm (Debian's slurm-wlm 22.05) with munge.
#
# Starts munged, slurmctld and slurmd with no systemd and no cgroups (proctrack/linuxproc,
# task/affinity, select/cons_tres with CR_Core; ports 16817-16818; configuration, state,
# spool, logs and the munge key in a scratch folder), and stops them on exit, failure
# included. Then:
#  1. a holding job takes the node's first half of CPUs, so that the checked allocation
#     gets the other half: a mapping that ignored the allocation would use CPU 0;
#  2. in an allocation of half the CPUs (salloc -n HALF), tdmap runs as one task of the
#     allocation (so that its CPU binding is the job's CPUs on the node) and prints
#     `--format slurm` for a ring of HALF ranks, with the node's name from the job's
#     nodelist;
#  3. the printed script runs in that allocation, COMMAND being a rank that prints its
#     Cpus_allowed_list from /proc/self/status; each rank's list must be its CPU in
#     tdmap.cpus, and every CPU must be one of the job's (scontrol's CPU_IDs);
#  4. the map_cpu line tdmap prints as a comment is run too, to show that it is refused
#     in a partial allocation (as tdmap's comment says), not checked as a requirement.
# TDMAP=path/to/tdmap (default target/debug/tdmap). Exit 0 when every rank is where tdmap
# put it, 1 otherwise.
set -euo pipefail
TDMAP=$(realpath "${TDMAP:-target/debug/tdmap}")
[ -x "$TDMAP" ] || { echo "slurm-check: no tdmap at $TDMAP; build it first" >&2; exit 2; }
for bin in munged mungekey slurmctld slurmd srun salloc scontrol sinfo; do
  command -v "$bin" >/dev/null || {
    echo "slurm-check: $bin not found; run scripts/setup-slurm.sh as root" >&2; exit 2; }
done

D=$(mktemp -d /tmp/tdmap-slurm.XXXXXX)
export SLURM_CONF=$D/slurm.conf
pids=()
stop() {
  local rc=$?
  scancel --full --quiet --user=root 2>/dev/null || true
  # slurmd, then slurmctld, then munged, which the other two need to say goodbye.
  local i p
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    p=${pids[i]}
    kill "$p" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
  done
  if [ "$rc" -ne 0 ]; then
    echo "slurm-check: FAILED; daemon logs:" >&2
    tail -n 20 "$D"/*.log >&2 2>/dev/null || true
  fi
  rm -rf "$D"
  exit "$rc"
}
trap stop EXIT
trap 'exit 1' INT TERM

host=$(hostname -s)
# The node as slurmd sees it: CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ...
node=$(slurmd -C | head -1)
cpus=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$node")
half=$(( cpus / 2 ))
[ "$half" -ge 1 ] || { echo "slurm-check: needs 2 CPUs or more (this node has $cpus)" >&2; exit 2; }

mkdir -p "$D/state" "$D/spool" "$D/munge"
chmod 700 "$D/munge"
mungekey --create --keyfile="$D/munge/munge.key" >/dev/null 2>&1
munged --foreground --force --socket="$D/munge/munge.sock" --key-file="$D/munge/munge.key" \
  --pid-file="$D/munge/munged.pid" --log-file="$D/munged.log" \
  --seed-file="$D/munge/munged.seed" 2>>"$D/munged.log" &
pids+=($!)

cat > "$SLURM_CONF" <<EOF
ClusterName=tdmapcheck
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
SlurmctldPort=16817
SlurmdPort=16818
AuthType=auth/munge
AuthInfo=socket=$D/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/slurmctld.log
SlurmdLogFile=$D/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
$(sed "s/^NodeName=[^ ]*/NodeName=$host/; s/ RealMemory=[0-9]*/ RealMemory=1000/" <<<"$node") State=UNKNOWN
PartitionName=check Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF

for _ in $(seq 50); do [ -S "$D/munge/munge.sock" ] && break; sleep 0.1; done
slurmctld -D -c -f "$SLURM_CONF" 2>>"$D/slurmctld.log" &
pids+=($!)
slurmd -D -f "$SLURM_CONF" 2>>"$D/slurmd.log" &
pids+=($!)
up=
for _ in $(seq 60); do
  if [ "$(sinfo -h -n "$host" -o %t 2>/dev/null)" = idle ]; then up=1; break; fi
  sleep 1
done
[ -n "$up" ] || { echo "slurm-check: node $host never became idle" >&2; exit 1; }
echo "slurm-check: slurmctld + slurmd + munged up on $host ($cpus CPUs), scratch $D"

# 1. The holding job takes the first half of the CPUs (CR_Core hands out cores in order).
salloc --no-shell --ntasks="$half" --job-name=hold >"$D/hold.out" 2>&1
hold=$(sed -n 's/.*Granted job allocation \([0-9]*\).*/\1/p' "$D/hold.out")
[ -n "$hold" ] || { cat "$D/hold.out" >&2; echo "slurm-check: the holding job was not granted" >&2; exit 1; }

# A rank: its rank and the CPU list of its own process (the shell's builtin read, so
# /proc/$$ is the process srun or taskset bound).
cat > "$D/rank.sh" <<'RANK'
#!/bin/sh
while read -r k v; do [ "$k" = Cpus_allowed_list: ] && echo "rank $SLURM_PROCID cpus $v"; done < /proc/$$/status
exit 0
RANK
chmod +x "$D/rank.sh"
# A ring of HALF ranks, dense CSV.
awk -v n="$half" 'BEGIN { for (i = 0; i < n; i++) { row = ""
  for (j = 0; j < n; j++) row = row (j ? "," : "") ((j == (i + 1) % n || i == (j + 1) % n) && i != j ? 100 : 0)
  print row } }' > "$D/ring.csv"

# 2.-4. Inside an allocation of half the CPUs, twice: under salloc, with tdmap run as a
# step (salloc's own shell is not bound to the job's CPUs), and in an sbatch script,
# whose batch step is. Each run works in its own folder, $D/step and $D/batch.
cat > "$D/inside.sh" <<INSIDE
#!/bin/bash
set -euo pipefail
mkdir -p "$D/\$1" && cd "$D/\$1"
scontrol show hostnames "\$SLURM_JOB_NODELIST" > hosts
# The job's CPUs on the node, from Slurm (abstract IDs, the OS's on a one-socket node).
scontrol show job -d "\$SLURM_JOB_ID" | sed -n 's/.* CPU_IDs=\([^ ]*\).*/\1/p' > job.cpus
if [ "\$1" = step ]; then in_step="srun --ntasks=1"; else in_step=; fi
\$in_step "$TDMAP" map --matrix ../ring.csv --hosts hosts -f slurm > job.sh 2> map.err
sed -i "s#COMMAND#$D/rank.sh#" job.sh
bash job.sh > ranks.out
# The commented alternative (taskset, or map_cpu when taskset is the command).
grep '^# SLURM_HOSTFILE=' job.sh | sed 's/^# //' > alt.sh || true
if [ -s alt.sh ]; then bash alt.sh > alt.out; fi
INSIDE
salloc --ntasks="$half" --job-name=check bash "$D/inside.sh" step >"$D/step.out" 2>&1 || {
  cat "$D/step.out" >&2; echo "slurm-check: the run inside the salloc allocation failed" >&2; exit 1; }
sbatch --wait --ntasks="$half" --job-name=check --output="$D/batch.out" "$D/inside.sh" batch >/dev/null || {
  cat "$D/batch.out" >&2; echo "slurm-check: the sbatch job failed" >&2; exit 1; }

# Expands a CPU list such as 0-2,5 into one number per line.
expand() { tr ',' '\n' <<<"$1" | awk -F- '{ for (c = $1; c <= ($2 == "" ? $1 : $2); c++) print c }'; }
fail=0
verify() { # folder, label, output file of the ranks
  local dir=$1 label=$2 out=$1/$3
  echo "== $label:"
  cat "$out"
  [ "$(wc -l < "$out")" -eq "$half" ] || { echo "slurm-check: $label: $(wc -l < "$out") ranks reported, $half expected"; fail=1; }
  for r in $(seq 0 $((half - 1))); do
    want=$(sed -n "$((r + 1))p" "$dir/tdmap.cpus")
    got=$(sed -n "s/^rank $r cpus //p" "$out")
    if [ "$got" != "$want" ]; then
      echo "slurm-check: $label: rank $r runs on CPUs '$got', tdmap.cpus says $want"; fail=1
    fi
    if ! grep -qx "$want" <<<"$(expand "$(cat "$dir/job.cpus")")"; then
      echo "slurm-check: $label: rank $r's CPU $want is not one of the job's ($(cat "$dir/job.cpus"))"; fail=1
    fi
  done
}
holdcpus=$(scontrol show job -d "$hold" | sed -n 's/.* CPU_IDs=\([^ ]*\).*/\1/p')
for mode in step batch; do
  case $mode in
    step) how="under salloc, tdmap run as a step (srun --ntasks=1)" ;;
    batch) how="in an sbatch script" ;;
  esac
  echo "== $how; holding job $hold has CPUs $holdcpus, this job $(cat "$D/$mode/job.cpus"); tdmap map -f slurm printed:"
  cat "$D/$mode/map.err" "$D/$mode/job.sh"
  verify "$D/$mode" "$mode: the srun line tdmap prints" ranks.out
  if [ -s "$D/$mode/alt.out" ]; then verify "$D/$mode" "$mode: its commented alternative" alt.out; fi
done
if [ "$fail" -ne 0 ]; then exit 1; fi
echo "slurm-check: ok: every rank runs on the CPU tdmap gave it, inside an allocation of $half of $cpus CPUs (salloc and sbatch)"
