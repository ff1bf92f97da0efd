//! The one kMAF: the monitor's decisions applied through an [`Actuator`]. `tdmap run`
//! drives it from perf samples in real time ([`crate::online`]), `tdmap sim`'s kmaf
//! policies from simulated faults and ticks; both go through [`Engine::ingest`] and
//! [`Engine::period`], so the simulated gain is the gain of the code that runs.
//!
//! Per period: plan threads (kMAF §3.4.1) → pin → Eq. 6 candidates (§3.3) → where are
//! they → move → halve the moved pages' NUMA vectors → age the matrix ×0.75 (§3.4.2).
//! With Eq. 6 per fault, the page part runs after each batch of faults instead.

use crate::actuator::{Actuator, Counts};
use crate::config::Config;
use crate::error::MonitorError;
use crate::monitor::{Fault, Monitor};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use tdmap_topo::Topology;

/// Pages per move_pages call: large enough to amortise the syscall, whose fixed cost is
/// high (it drains every CPU's LRU caches first: 1024-page batches ran at 0.6x the
/// throughput of one call on this VM), small enough to keep one period's work short
/// (a few ms).
pub const BATCH: usize = 16384;

/// The fixed PU of a thread the static mapping does not name: it is not pinned.
const UNNAMED: usize = usize::MAX;

/// Time spent in each part of the loop.
#[derive(Debug, Default, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub struct Times {
    /// Draining the rings and injecting extra faults.
    pub sampling: Duration,
    /// Feeding the sharing model.
    pub model: Duration,
    /// Computing thread mappings.
    pub mapping: Duration,
    /// Pinning threads, querying and moving pages.
    pub migration: Duration,
}

impl Times {
    /// All parts together.
    pub fn total(&self) -> Duration {
        self.sampling + self.model + self.mapping + self.migration
    }
}

/// kMAF's loop body: the monitor, what it applied, and whether it may apply anything.
pub struct Engine {
    mon: Monitor,
    dry_run: bool,
    /// A static mapping (`--mapping`): logical PU of thread k ([`UNNAMED`]: none).
    fixed: Option<Vec<usize>>,
    /// A static mapping by task: (process rank or index, thread in it) → logical PU.
    fixed_tasks: Option<HashMap<(u32, u32), usize>>,
    counts: Counts,
    times: Times,
}

impl Engine {
    /// The loop for a program on `topo`. With `dry_run` it decides and counts but calls no
    /// actuator method that changes anything.
    pub fn new(topo: &Topology, cfg: Config, dry_run: bool) -> Result<Engine, MonitorError> {
        Ok(Engine {
            mon: Monitor::new(topo, cfg)?,
            dry_run,
            fixed: None,
            fixed_tasks: None,
            counts: Counts::default(),
            times: Times::default(),
        })
    }

    /// Pins thread k to logical PU `pus[k]` as threads appear, instead of mapping them
    /// (`tdmap run --mapping`); pages still follow Eq. 6 unless data moves are off.
    pub fn with_fixed_mapping(mut self, pus: Vec<usize>) -> Engine {
        self.fixed = Some(pus);
        self
    }

    /// Pins each task named in `tasks` ((process rank or index, thread in it) → logical
    /// PU) to its PU as it appears (`tdmap run --mapping` with task names); the loop
    /// names the threads ([`Engine::name_tasks`]).
    pub fn with_fixed_tasks(mut self, tasks: HashMap<(u32, u32), usize>) -> Engine {
        self.fixed = Some(Vec::new());
        self.fixed_tasks = Some(tasks);
        self
    }

    /// Whether the static mapping names tasks, so that the loop must name the threads.
    pub fn wants_task_names(&self) -> bool {
        self.fixed_tasks.is_some()
    }

    /// The task name of each thread index: their fixed PUs follow.
    pub fn name_tasks(&mut self, names: &[(u32, u32)]) {
        if let Some(t) = &self.fixed_tasks {
            self.fixed = Some(
                names
                    .iter()
                    .map(|n| t.get(n).copied().unwrap_or(UNNAMED))
                    .collect(),
            );
        }
    }

    /// The monitor (model, threads, mapping).
    pub fn monitor(&self) -> &Monitor {
        &self.mon
    }

    /// Gives indexes to live threads in creation order (see [`Monitor::register_threads`]).
    pub fn register_threads(&mut self, tids: &[u32]) {
        self.mon.register_threads(tids);
    }

    /// Thread `tid` exited: later mappings leave it out (see [`Monitor::retire`]).
    pub fn retire(&mut self, tid: u32) {
        self.mon.retire(tid);
    }

    /// What was decided and applied so far.
    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    /// Time per part; the caller adds sampling and model time it measures itself.
    pub fn times_mut(&mut self) -> &mut Times {
        &mut self.times
    }

    /// Whether nothing is applied.
    pub fn dry_run(&self) -> bool {
        self.dry_run
    }

    /// Feeds a batch of faults (kMAF §3.2); with Eq. 6 per fault, moves the pages of the
    /// batch that pass it. Returns the samples used.
    pub fn ingest(
        &mut self,
        faults: &[Fault],
        act: &mut impl Actuator,
    ) -> Result<u64, MonitorError> {
        let t = Instant::now();
        let used = self.mon.ingest(faults)?;
        self.times.model += t.elapsed();
        let cands = self.mon.fault_candidates(faults);
        if !cands.is_empty() {
            let t = Instant::now();
            self.move_candidates(&cands, act);
            self.times.migration += t.elapsed();
        }
        Ok(used)
    }

    /// `--mapping`: pins each thread not yet pinned to its fixed PU.
    pub fn pin_fixed(&mut self, act: &mut impl Actuator) {
        let Some(fixed) = &self.fixed else {
            return;
        };
        let n = self.mon.threads().len().min(fixed.len());
        let todo: Vec<(usize, usize)> = (0..n)
            .filter(|&k| self.counts.planned.get(k).copied().flatten().is_none())
            .map(|k| (k, fixed[k]))
            .filter(|&(_, pu)| pu != UNNAMED)
            .collect();
        if todo.is_empty() || !self.may_act(act) {
            return;
        }
        let t = Instant::now();
        for (k, pu) in todo {
            self.pin(act, k, pu);
        }
        self.times.migration += t.elapsed();
    }

    /// One period: a thread mapping (kMAF §3.4.1), then page moves by Eq. 6 (§3.3) when
    /// it is tested per period, then aging (§3.4.2).
    pub fn period(&mut self, act: &mut impl Actuator) -> Result<(), MonitorError> {
        let t = Instant::now();
        let plan = self.mon.plan_threads()?;
        self.times.mapping += t.elapsed();
        let t = Instant::now();
        if let Some(plan) = plan {
            self.counts.mappings += 1;
            if self.may_act(act) {
                for k in plan.changed {
                    self.pin(act, k, plan.mapping[k]);
                }
            }
        }
        let cands = self.mon.page_candidates();
        self.move_candidates(&cands, act);
        self.times.migration += t.elapsed();
        self.mon.end_period();
        Ok(())
    }

    fn may_act(&mut self, act: &mut impl Actuator) -> bool {
        if self.dry_run || act.permitted() {
            return true;
        }
        self.counts.foreign_skips += 1;
        false
    }

    /// Pins thread `k` to logical PU `pu` (or, with --dry-run, plans it only).
    fn pin(&mut self, act: &mut impl Actuator, k: usize, pu: usize) {
        let n = self.mon.threads().len();
        let c = &mut self.counts;
        c.pinned.resize(n, None);
        c.planned.resize(n, None);
        c.pin_errno.resize(n, None);
        c.pins_planned += 1;
        c.planned[k] = Some(pu);
        if self.dry_run {
            return;
        }
        let tid = self.mon.threads().tids()[k];
        match act.pin(k, tid, pu) {
            Ok(()) => {
                c.threads_pinned += 1;
                c.pinned[k] = Some(pu);
                c.pin_errno[k] = None;
            }
            Err(e) => {
                c.pin_failures.add(e.errno, 1);
                c.pin_errno[k] = Some(e.errno.unwrap_or(0));
            }
        }
    }

    /// Moves the Eq. 6 candidates that are not on their target node yet, in batches.
    fn move_candidates(&mut self, cands: &[(u64, Vec<u32>)], act: &mut impl Actuator) {
        self.counts.page_candidates += cands.len() as u64;
        if cands.is_empty() || !self.may_act(act) {
            return;
        }
        for chunk in cands.chunks(BATCH) {
            let pages: Vec<u64> = chunk.iter().map(|c| c.0).collect();
            // The program may have ended or unmapped the pages: nothing to move then.
            let Ok(now) = act.locate(&pages) else {
                continue;
            };
            let moves = self.mon.plan_pages(chunk, &now);
            self.counts.moves_planned += moves.len() as u64;
            if moves.is_empty() || self.dry_run {
                continue;
            }
            self.move_batch(&moves, act);
        }
    }

    fn move_batch(&mut self, moves: &[(u64, usize)], act: &mut impl Actuator) {
        let st = match act.move_pages(moves) {
            Ok(st) => st,
            Err(e) => {
                self.counts.move_failures.add(e.errno, moves.len() as u64);
                return;
            }
        };
        self.counts.move_batches += 1;
        for ((addr, _), r) in moves.iter().zip(st) {
            match r {
                Ok(()) => {
                    self.counts.pages_moved += 1;
                    // kMAF §3.3: halve the NUMA vector after each move that happened.
                    self.mon.moved(*addr);
                }
                Err(errno) => self.counts.move_failures.add(Some(errno), 1),
            }
        }
    }
}
