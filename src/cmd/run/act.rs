//! Applying the monitor's decisions to the live program through tdmap-sys: pin threads
//! (sched_setaffinity on their tids) and move pages (move_pages in batches), only on a
//! process owned by the user running tdmap, and nothing at all with `--dry-run`.

use super::looper::Times;
use anyhow::{Context, Result};
use std::time::Instant;
use tdmap_monitor::Monitor;
use tdmap_sys::{FsRoot, LinuxSys, Sys};
use tdmap_topo::Topology;

/// Pages per move_pages call: large enough to amortise the syscall, whose fixed cost is
/// high (it drains every CPU's LRU caches first: 1024-page batches ran at 0.6x the
/// throughput of one call on this VM), small enough to keep one period's work short
/// (a few ms).
pub const BATCH: usize = 16384;

/// Counts of what the monitor decided and applied.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct Counts {
    /// Thread mappings decided (the first one included).
    pub mappings: u64,
    /// Thread pinnings done (or, with --dry-run, decided).
    pub thread_moves: u64,
    /// Pinnings refused (the thread had exited).
    pub thread_move_failures: u64,
    /// Pages whose NUMA vector passed Eq. 6.
    pub page_candidates: u64,
    /// Pages moved (or, with --dry-run, to move).
    pub page_moves: u64,
    /// Pages move_pages could not move.
    pub page_move_failures: u64,
    /// move_pages calls that moved pages.
    pub move_batches: u64,
    /// Rounds skipped because the process was not the user's.
    pub foreign_skips: u64,
    /// OS CPU each thread index was last pinned to (shown per thread in the report).
    #[serde(skip)]
    pub pinned: Vec<Option<usize>>,
}

/// The actuator: where threads and pages go, and the counts.
pub struct Actions<'t> {
    topo: &'t Topology,
    pid: i32,
    dry_run: bool,
    sys: LinuxSys,
    counts: Counts,
}

impl<'t> Actions<'t> {
    /// An actuator for process `pid`.
    pub fn new(topo: &'t Topology, pid: i32, dry_run: bool) -> Actions<'t> {
        Actions {
            topo,
            pid,
            dry_run,
            sys: LinuxSys,
            counts: Counts::default(),
        }
    }

    /// The counts, at the end.
    pub fn into_counts(self) -> Counts {
        self.counts
    }

    fn ours(&mut self) -> bool {
        let ok = tdmap_sys::owned_by_caller(&FsRoot::default(), self.pid).unwrap_or(false);
        if !ok {
            self.counts.foreign_skips += 1;
        }
        ok
    }

    /// Pins thread `k` to OS CPU `cpu`.
    fn pin(&mut self, mon: &Monitor<'_>, k: usize, cpu: usize) {
        let tid = mon.threads().tids()[k] as i32;
        let c = &mut self.counts;
        c.pinned.resize(mon.threads().len(), None);
        if self.dry_run || self.sys.set_affinity(tid, &[cpu]).is_ok() {
            c.thread_moves += 1;
            c.pinned[k] = Some(cpu);
        } else {
            c.thread_move_failures += 1;
        }
    }

    /// `--mapping FILE`: pins each thread not yet pinned to its static CPU.
    pub fn pin_static(&mut self, mon: &Monitor<'_>, map: &[usize]) {
        let n = mon.threads().len().min(map.len());
        let todo: Vec<usize> = (0..n)
            .filter(|&k| self.counts.pinned.get(k).copied().flatten().is_none())
            .collect();
        if todo.is_empty() || !self.ours() {
            return;
        }
        for k in todo {
            self.pin(mon, k, map[k]);
        }
    }

    /// One period's decisions: a thread mapping (kMAF §3.4.1) then page moves (§3.3).
    pub fn period(&mut self, mon: &mut Monitor<'_>, times: &mut Times) -> Result<()> {
        let t = Instant::now();
        let plan = mon.plan_threads()?;
        times.mapping += t.elapsed();
        let t = Instant::now();
        if let Some(plan) = plan {
            self.counts.mappings += 1;
            if self.dry_run || self.ours() {
                for k in plan.changed {
                    self.pin(mon, k, self.topo.pus[plan.mapping[k]].os);
                }
            }
        }
        self.pages(mon)?;
        times.migration += t.elapsed();
        Ok(())
    }

    fn pages(&mut self, mon: &mut Monitor<'_>) -> Result<()> {
        let cands = mon.page_candidates();
        self.counts.page_candidates += cands.len() as u64;
        if cands.is_empty() || !self.ours() {
            return Ok(());
        }
        for chunk in cands.chunks(BATCH) {
            let addrs: Vec<usize> = chunk.iter().map(|c| c.0 as usize).collect();
            let now = self.sys.move_pages(self.pid, &addrs, None);
            // The program may have ended or unmapped the pages: nothing to move then.
            let Ok(now) = now else { continue };
            let current: Vec<Option<usize>> = now.iter().map(|&n| self.logical(n)).collect();
            let moves = mon.plan_pages(chunk, &current);
            if moves.is_empty() {
                continue;
            }
            if self.dry_run {
                self.counts.page_moves += moves.len() as u64;
                continue;
            }
            self.move_batch(mon, &moves);
        }
        Ok(())
    }

    fn move_batch(&mut self, mon: &mut Monitor<'_>, moves: &[(u64, usize)]) {
        let addrs: Vec<usize> = moves.iter().map(|m| m.0 as usize).collect();
        let nodes: Vec<i32> = moves
            .iter()
            .map(|m| self.topo.node_os_index(m.1) as i32)
            .collect();
        let Ok(st) = self.sys.move_pages(self.pid, &addrs, Some(&nodes)) else {
            self.counts.page_move_failures += moves.len() as u64;
            return;
        };
        self.counts.move_batches += 1;
        for ((addr, _), (&got, &want)) in moves.iter().zip(st.iter().zip(&nodes)) {
            if got == want {
                self.counts.page_moves += 1;
                // kMAF §3.3: halve the NUMA vector after each move.
                mon.moved(*addr);
            } else {
                self.counts.page_move_failures += 1;
            }
        }
    }

    /// The logical node of OS node `os`, None for a move_pages error status.
    fn logical(&self, os: i32) -> Option<usize> {
        let os = usize::try_from(os).ok()?;
        (0..self.topo.num_nodes()).find(|&n| self.topo.node_os_index(n) == os)
    }
}

/// Reads a `tdmap map --format json` file: the OS CPU of each thread, in thread order.
pub fn read_mapping(path: &std::path::Path) -> Result<Vec<usize>> {
    let bad = |why: String| crate::exit::input(format!("--mapping {}: {why}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        bad(format!(
            "not JSON ({e}); write it with tdmap map --format json"
        ))
    })?;
    let entries = v["mapping"]
        .as_array()
        .ok_or_else(|| bad("no \"mapping\" array; write it with tdmap map --format json".into()))?;
    let mut cpus = vec![None; entries.len()];
    for e in entries {
        let (Some(t), Some(os)) = (e["thread"].as_u64(), e["os"].as_u64()) else {
            return Err(bad("each entry needs \"thread\" and \"os\"".into()));
        };
        let slot = cpus
            .get_mut(t as usize)
            .ok_or_else(|| bad(format!("thread {t} out of range")))?;
        *slot = Some(os as usize);
    }
    cpus.into_iter()
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| bad("thread numbers must be 0..n without gaps".into()))
        .context("static mapping")
}
