#!/usr/bin/env bash
# Does this build's `tdmap trace` say what another build's says? `BASE=/path/to/tdmap
# bench/trace_same.sh` (docs/bench-trace.md, "Same trace"), for a change to the
# conversion that must not change what traces say.
#   replay  each workload's raw stream is recorded once (the instrumented program run
#           with the runtime's variables, no tdmap), then fed to both builds by a script
#           that writes it where the runtime would: the traces' events, thread by thread
#           (crates/trace/examples/digest.rs: address, size, write, time, collapsed reads,
#           faults), and the --model-only files (less their run time) must be identical.
#   live    each workload run on one thread under `setarch -R` (the same accesses every
#           run) by both builds, each with the programs its own runtime is linked into
#           when libtdmap_rt.a sits beside $BASE (common.sh's base_programs): the events
#           less times and fault CPUs, and the --model-only files, must be identical
#           (when the two runtimes' sizes put the program's data at other addresses,
#           only the counts, matrices and event counts are compared);
#           so too for SAME_LIVE (`name:arg:arg...`), run live only: forkshare's processes
#           (page keys shared between processes, a trace of several processes).
#   SAME_RECORD=base records the replayed streams with $BASE's programs instead of this
#           build's: for a runtime whose wire version $BASE cannot read (both builds
#           then read the older stream; the live check compares the runtimes).
# Prints one line per check and exits 1 if any differs.
source "$(dirname "$0")/common.sh"
: "${BASE:?set BASE to the tdmap binary of the other build}"
SAME_LIVE=${SAME_LIVE:-"forkshare:2:2048:1"}
SAME_SIZES=${SAME_SIZES:-"ep:300000 stencil1d:420 stencil3d:20 pairs:98304 alltoall:640 pipeline:9216 cginit:96000 phase:49152 cg:40 mg:64 fft:64"}
cargo build --release -q -p tdmap-trace --example digest
DIGEST=target/release/examples/digest
S=$OUT/same
mkdir -p "$S"
BASE_PROGS=$(base_programs)
# The replayer: writes a recorded control file and data file where the runtime would.
cat >"$S/replay.sh" <<'EOS'
#!/bin/sh
cat "$2" >"$TDMAP_RT_CTL" && cat "$1" >"$TDMAP_RT_DATA"
EOS
chmod +x "$S/replay.sh"
bad=0
same() { # label file-a file-b
  if cmp -s "$2" "$3"; then echo "same      $1"; else echo "DIFFERENT $1"; diff "$2" "$3" | head -5 | cut -c1-300 || true; bad=1; fi
}
# The model file is one line of JSON: its run time and thread ids differ from run to run.
model_of() { sed 's/"run_seconds":[0-9.eE+-]*//; s/"os_tid":[0-9]*//g' "$1"; }
# Where a program's segments load: a runtime whose code grows past a page boundary moves
# the program's data (the runtime is linked in), and with it every address of a run.
layout() { readelf -lW "$1" | awk '/LOAD/{print $3}'; }
# What a live run gives when the two programs' layouts differ: the counts of each
# thread's events, and the model's matrices and event count (no addresses).
counts_of() { sed 's/, digest .*//' "$1"; }
model_counts_of() { grep -o '"matrix_[a-z]*":[][0-9.,eE+-]*\|"events":[0-9]*' "$1"; }
for spec in $SAME_SIZES; do
  IFS=: read -r w n rep <<<"$spec"
  prog="$OUT/build/tdmap/$w"
  rec=$prog
  [ "${SAME_RECORD:-new}" = base ] && rec="$BASE_PROGS/$w"
  rm -f "$S/raw" "$S/ctl"
  TDMAP_RT_DATA="$S/raw" TDMAP_RT_CTL="$S/ctl" "$rec" "$THREADS" "$n" "${rep:-1}" >/dev/null
  for b in base new; do
    # Both builds run from one path: the program's environment (which names tdmap) must
    # not differ, or its string functions make different accesses.
    t=$S/tdmap p=$S/prog
    rm -f "$t" "$p"
    if [ $b = base ]; then cp "$BASE" "$t"; cp "$BASE_PROGS/$w" "$p"; else cp "$TDMAP" "$t"; cp "$prog" "$p"; fi
    "$t" trace --force -o "$S/$b.trace" -- "$S/replay.sh" "$S/raw" "$S/ctl" >/dev/null 2>&1
    "$DIGEST" "$S/$b.trace" >"$S/$b.digest"
    "$t" trace --model-only --force -o "$S/$b.json" -- "$S/replay.sh" "$S/raw" "$S/ctl" >/dev/null 2>&1
    model_of "$S/$b.json" >"$S/$b.model"
    # One output name too: the runtime's scratch paths are in the environment.
    # (phase needs an even thread count: its live check is skipped.)
    rm -f "$S/$b.live" "$S/$b.livemodel"
    if setarch -R "$t" trace --force -o "$S/live.trace" -- "$p" 1 "$n" "${rep:-1}" >/dev/null 2>&1; then
      "$DIGEST" "$S/live.trace" --no-time >"$S/$b.live"
      setarch -R "$t" trace --model-only --force -o "$S/live.json" -- "$p" 1 "$n" "${rep:-1}" >/dev/null 2>&1
      model_of "$S/live.json" >"$S/$b.livemodel"
    fi
  done
  acc=$(awk '/^thread/{s+=$3} END{print s}' "$S/new.digest")
  same "$w replay, $THREADS threads, $acc accesses: trace events" "$S/base.digest" "$S/new.digest"
  same "$w replay: --model-only file" "$S/base.model" "$S/new.model"
  if [ -e "$S/base.live" ] || [ -e "$S/new.live" ]; then
    if [ "$(layout "$BASE_PROGS/$w")" = "$(layout "$prog")" ]; then
      same "$w live, 1 thread, setarch -R: trace events less times" "$S/base.live" "$S/new.live"
      same "$w live, 1 thread, setarch -R: --model-only file" "$S/base.livemodel" "$S/new.livemodel"
    else
      for b in base new; do
        counts_of "$S/$b.live" >"$S/$b.livecounts"
        model_counts_of "$S/$b.livemodel" >"$S/$b.livemc"
      done
      same "$w live, 1 thread (data moved: counts only): trace events" "$S/base.livecounts" "$S/new.livecounts"
      same "$w live, 1 thread (data moved: counts only): --model-only matrices" "$S/base.livemc" "$S/new.livemc"
    fi
  else
    echo "skipped   $w live: the program does not run on 1 thread"
  fi
done
for spec in $SAME_LIVE; do
  IFS=: read -r -a parts <<<"$spec"
  w=${parts[0]} args=("${parts[@]:1}")
  for b in base new; do
    t=$S/tdmap p=$S/prog
    rm -f "$t" "$p"
    if [ $b = base ]; then cp "$BASE" "$t"; cp "$BASE_PROGS/$w" "$p"; else cp "$TDMAP" "$t"; cp "$OUT/build/tdmap/$w" "$p"; fi
    setarch -R "$t" trace --force -o "$S/live.trace" -- "$p" "${args[@]}" >/dev/null 2>&1
    "$DIGEST" "$S/live.trace" --no-time >"$S/$b.live"
  done
  if [ "$(layout "$BASE_PROGS/$w")" = "$(layout "$OUT/build/tdmap/$w")" ]; then
    same "$w ${args[*]} live, setarch -R: trace events less times" "$S/base.live" "$S/new.live"
  else
    for b in base new; do counts_of "$S/$b.live" >"$S/$b.livecounts"; done
    same "$w ${args[*]} live (data moved: counts only): trace events" "$S/base.livecounts" "$S/new.livecounts"
  fi
done
rm -rf "$S"
exit $bad
