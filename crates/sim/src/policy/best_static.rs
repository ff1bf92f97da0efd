//! `best-static` (alias `oracle`): the best static mapping this simulator can find for a
//! trace, chosen by simulating every candidate, not by a cost model.
//!
//! A first pass over the trace gives the sharing matrix (exact 64-byte lines,
//! `tdmap-sharing`) and each page's accesses per thread. From those come the candidates:
//!
//! - the static policies by name (`os`, `compact`, `scatter`, `random`, `interleave`),
//!   built exactly as `tdmap sim` builds them, with the same seed;
//! - the mapping of every `tdmap-map` algorithm (greedy, matching, drb, exhaustive where
//!   it runs, compact, scatter, random, identity) and the `worst` mapping, each with
//!   first-touch pages and with its best page homes (each page on the node whose threads
//!   access it most);
//! - on small machines, every thread placement up to the machine's symmetries (swapping
//!   PUs of a core, cores of a node, and nodes when the SLIT is uniform), with first-touch
//!   pages and with its best homes.
//!
//! Each candidate is replayed on the whole trace and the fastest (`cycles_max`) wins, so
//! best-static ≤ every policy in the set by construction. It is not a true optimum: it
//! does not search page homes beyond those rules nor placements on larger machines, and
//! a dynamic policy (kMAF remapping when a program changes phase) can beat it.
//!
//! The old oracle took the lower-cost mapping of matching and greedy by the hop or
//! latency cost of the sharing matrix and never simulated it. That cost ignores what the
//! simulator charges: SMT siblings sharing a core's L1, L2 and TLB, cache capacity, when
//! each thread starts and which thread touches a page first; so it lost to plain
//! `compact` on traces where two threads per core thrash their shared caches (e.g. 1.213
//! of os on `stencil1d 8 32 4`).

use super::basic::Fixed;
pub use super::plan::Plan;
use super::{Actions, ByName, FaultEvent, Policy, PolicyCtx, TlbEvent};
use crate::hash::FastMap;
use crate::input::{first_pass, Profile, RunError};
use crate::{simulate_chunks, SimAccess, SimConfig, SimError, SimReport, TraceInput, CHUNK};
use std::path::Path;
use tdmap_map::Algorithm;
use tdmap_sharing::{Metric, SharingModel, TableConfig};
use tdmap_topo::Topology;

/// The policy names best-static answers to.
pub const NAMES: [&str; 2] = ["best-static", "oracle"];

/// The name of the minimum-weight mapping, which also needs the first pass.
pub const WORST: &str = "worst";

/// The static policies by name that are always candidates.
pub const STATIC_NAMES: [&str; 5] = ["os", "compact", "scatter", "random", "interleave"];

/// Placements of all threads tried one by one when the machine is small: at most this
/// many after symmetries.
pub const MAX_PLACEMENTS: usize = 64;

/// Injective thread placements enumerated at most to find those classes.
const MAX_ENUMERATED: f64 = 1e6;

/// One candidate static policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Candidate {
    /// A policy of [`ByName`] (`os`, `compact`, ...), built with the run's seed.
    Named(String),
    /// A thread mapping with first-touch pages (`homes` false) or the best page homes.
    Mapping {
        /// What gave it: an algorithm's name or `placement`.
        source: String,
        /// The PU of each thread.
        mapping: Vec<usize>,
        /// Each page on the node of the threads that access it most.
        homes: bool,
    },
}

impl Candidate {
    /// A short description: `compact`, `greedy+homes`, `placement [0, 3, 1]`.
    pub fn label(&self) -> String {
        match self {
            Candidate::Named(n) => n.clone(),
            Candidate::Mapping {
                source,
                mapping,
                homes,
            } => {
                let pages = if *homes { "+homes" } else { "" };
                if source == "placement" {
                    format!("placement {mapping:?}{pages}")
                } else {
                    format!("{source}{pages}")
                }
            }
        }
    }
}

/// What the first pass gives: the profile, the sharing matrix and the pages' accesses.
pub struct Knowledge {
    /// Threads and accesses per thread.
    pub profile: Profile,
    /// The sharing matrix (accesses to shared lines), n × n.
    pub matrix: Vec<f64>,
    /// Each page (4 KiB page number) with its accesses per thread.
    pub pages: Vec<(u64, Vec<u32>)>,
}

impl Knowledge {
    /// Reads the trace at `path` once.
    pub fn from_trace(path: &Path) -> Result<Knowledge, RunError> {
        Self::from_trace_with(path, |_| {})
    }

    /// The same, telling `progress` how many accesses each chunk read (for a progress
    /// bar: on a long trace this pass takes seconds before any replay starts).
    pub fn from_trace_with(
        path: &Path,
        mut progress: impl FnMut(u64),
    ) -> Result<Knowledge, RunError> {
        let threads = tdmap_trace::Reader::open(path)?.header().threads as usize;
        let mut model = model(threads)?;
        let profile = first_pass(path, |c| {
            model.accesses(c.thread, &c.addrs).map_err(too_many)?;
            progress(c.addrs.len() as u64);
            Ok(())
        })?;
        Ok(Knowledge::of(model, profile))
    }

    /// The same from accesses in memory.
    pub fn from_accesses(threads: usize, accesses: &[SimAccess]) -> Result<Knowledge, RunError> {
        let mut model = model(threads)?;
        let mut per = vec![0u64; threads];
        for a in accesses {
            let Some(n) = per.get_mut(a.thread as usize) else {
                return Err(SimError::ThreadOutOfRange {
                    thread: a.thread,
                    threads,
                }
                .into());
            };
            *n += 1;
            model.accesses(a.thread, &[a.addr]).map_err(too_many)?;
        }
        let profile = Profile {
            threads,
            accesses: per,
            // A stream, not a trace file: no end marker to judge.
            ending: None,
            data_bytes: 0,
        };
        Ok(Knowledge::of(model, profile))
    }

    fn of(model: SharingModel, profile: Profile) -> Knowledge {
        let matrix = model.matrix(Metric::Accesses).to_f64_rows();
        let pages = model
            .table()
            .pages()
            .map(|(page, per_thread)| (page, per_thread.to_vec()))
            .collect();
        Knowledge {
            profile,
            matrix,
            pages,
        }
    }

    /// Every candidate for `topo` (duplicates removed), `seed` for the random ones.
    pub fn candidates(&self, topo: &Topology, seed: u64) -> Vec<Candidate> {
        let n = self.profile.threads;
        let mut out: Vec<Candidate> = STATIC_NAMES
            .iter()
            .map(|s| Candidate::Named(s.to_string()))
            .collect();
        let mut mappings: Vec<(String, Vec<usize>)> = Vec::new();
        let opts = tdmap_map::Options {
            seed,
            oversubscribe: n > topo.num_pus(),
        };
        for algo in Algorithm::ALL {
            // Exhaustive refuses large instances; drb may fail on odd machines: the
            // other candidates stand.
            if let Ok(m) = tdmap_map::map_threads(algo, topo, &self.matrix, n, &opts) {
                mappings.push((algo.name().to_string(), m));
            }
        }
        if let Ok(m) = tdmap_map::worst::map(topo, &self.matrix, n, opts.oversubscribe) {
            mappings.push((WORST.to_string(), m));
        }
        for m in placements(topo, n) {
            mappings.push(("placement".into(), m));
        }
        let mut seen: Vec<&Vec<usize>> = Vec::new();
        for (source, mapping) in &mappings {
            if seen.contains(&mapping) {
                continue;
            }
            seen.push(mapping);
            for homes in [false, true] {
                out.push(Candidate::Mapping {
                    source: source.clone(),
                    mapping: mapping.clone(),
                    homes,
                });
            }
        }
        out
    }

    /// Each page's home for `mapping`: the node whose threads access it most, at pages
    /// of `page_size` bytes (the counts of its 4 KiB pages added up).
    pub fn homes(&self, topo: &Topology, mapping: &[usize], page_size: u64) -> Vec<(u64, usize)> {
        let nodes = topo.num_nodes().max(1);
        let node_of: Vec<usize> = mapping.iter().map(|&pu| topo.pus[pu].node).collect();
        let shift = page_size.trailing_zeros() as i32 - 12;
        let mut nv: FastMap<u64, Vec<u32>> = FastMap::default();
        for (page, per_thread) in &self.pages {
            let p = if shift >= 0 {
                page >> shift
            } else {
                page << -shift
            };
            let v = nv.entry(p).or_insert_with(|| vec![0; nodes]);
            for (t, c) in per_thread.iter().enumerate() {
                if let Some(&node) = node_of.get(t) {
                    v[node] = v[node].saturating_add(*c);
                }
            }
        }
        let mut out: Vec<(u64, usize)> = nv
            .into_iter()
            .filter_map(|(p, v)| tdmap_map::data::majority(&v).map(|n| (p, n)))
            .collect();
        out.sort_unstable();
        out
    }

    /// `worst`: the minimum-weight mapping of the trace-based paper
    /// (`tdmap_map::worst`), pages by first touch (Linux's default, as in its runs).
    pub fn worst(&self, topo: &Topology) -> Result<Box<dyn Policy>, RunError> {
        let n = self.profile.threads;
        let m = tdmap_map::worst::map(topo, &self.matrix, n, n > topo.num_pus()).map_err(|e| {
            SimError::BadConfig {
                why: format!("worst mapping: {e}"),
            }
        })?;
        Ok(Box::new(Fixed::new(WORST, m)))
    }

    /// The policy a candidate stands for, named `name`.
    pub fn policy(&self, topo: &Topology, cfg: &SimConfig, c: &Candidate) -> Box<dyn Policy> {
        match c {
            Candidate::Named(n) => ByName::build(n, cfg.seed).expect("a known static name"),
            Candidate::Mapping { mapping, homes, .. } => {
                let f = Fixed::new(&c.label(), mapping.clone());
                if *homes {
                    Box::new(f.with_pages(self.homes(topo, mapping, cfg.page_size)))
                } else {
                    Box::new(f)
                }
            }
        }
    }
}

/// The winner and what it beat.
pub struct BestStatic {
    /// What the first pass found.
    pub knowledge: Knowledge,
    /// Every candidate with its replay.
    pub tried: Vec<(Candidate, SimReport)>,
    /// The index of the fastest in `tried` (the first of equals).
    pub best: usize,
}

impl BestStatic {
    /// Reads the trace at `path`, then replays every candidate on it with `cfg` (whose
    /// seed and period must be the run's) and keeps the fastest.
    pub fn from_trace(path: &Path, topo: &Topology, cfg: &SimConfig) -> Result<Self, RunError> {
        Self::from_knowledge(Knowledge::from_trace(path)?, path, topo, cfg)
    }

    /// [`BestStatic::from_trace`] after the first pass (whose profile sets the period).
    pub fn from_knowledge(
        knowledge: Knowledge,
        path: &Path,
        topo: &Topology,
        cfg: &SimConfig,
    ) -> Result<Self, RunError> {
        let mut stream = TraceInput::open(path)?;
        Self::choose(knowledge, topo, cfg, |buf| stream.fill(buf, CHUNK))
    }

    /// The same on accesses in memory.
    pub fn from_accesses(
        topo: &Topology,
        cfg: &SimConfig,
        threads: usize,
        accesses: &[SimAccess],
    ) -> Result<Self, RunError> {
        let knowledge = Knowledge::from_accesses(threads, accesses)?;
        let mut chunks = accesses.chunks(CHUNK);
        let next = |buf: &mut Vec<SimAccess>| {
            buf.extend_from_slice(chunks.next().unwrap_or_default());
            Ok(())
        };
        Self::choose(knowledge, topo, cfg, next)
    }

    fn choose(
        knowledge: Knowledge,
        topo: &Topology,
        cfg: &SimConfig,
        next: impl FnMut(&mut Vec<SimAccess>) -> Result<(), RunError>,
    ) -> Result<Self, RunError> {
        let mut policies = Vec::new();
        let plan = Plan::new(&knowledge, topo, cfg, &mut policies);
        let threads = knowledge.profile.threads;
        let reports = simulate_chunks(topo, cfg, policies, threads, next)?;
        Ok(plan.pick(knowledge, &reports))
    }

    /// The winning candidate.
    pub fn winner(&self) -> &Candidate {
        &self.tried[self.best].0
    }

    /// Whether every placement (up to symmetry) was among the candidates.
    pub fn placements(&self) -> bool {
        self.tried
            .iter()
            .any(|(c, _)| matches!(c, Candidate::Mapping { source, .. } if source == "placement"))
    }

    /// The winner's replay, named `best-static`.
    pub fn report(&self) -> SimReport {
        let mut r = self.tried[self.best].1.clone();
        r.policy = NAMES[0].into();
        r
    }

    /// The winner as a policy named `best-static`, to replay again.
    pub fn policy(&self, topo: &Topology, cfg: &SimConfig) -> Box<dyn Policy> {
        let inner = self.knowledge.policy(topo, cfg, self.winner());
        Box::new(Renamed {
            name: NAMES[0].into(),
            inner,
        })
    }
}

/// Every placement of `n` threads on `topo`, one per class of placements the machine's
/// symmetries make equivalent, if there are at most [`MAX_PLACEMENTS`] classes; none
/// otherwise (or when the machine is not symmetric enough to tell).
pub fn placements(topo: &Topology, n: usize) -> Vec<Vec<usize>> {
    let p = topo.num_pus();
    let count: f64 = (0..n).map(|i| p.saturating_sub(i) as f64).product();
    if n == 0 || n > p || count > MAX_ENUMERATED {
        return Vec::new();
    }
    let Some(sym) = Symmetry::of(topo) else {
        return Vec::new();
    };
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    let mut cur = Vec::with_capacity(n);
    let mut used = vec![false; p];
    let ok = enumerate(&mut cur, &mut used, n, &mut |m: &[usize]| {
        if seen.insert(sym.canonical(m)) {
            out.push(m.to_vec());
        }
        out.len() <= MAX_PLACEMENTS
    });
    if ok {
        out
    } else {
        Vec::new()
    }
}

/// Depth-first over injective placements; stops when `each` returns false.
fn enumerate(
    cur: &mut Vec<usize>,
    used: &mut [bool],
    n: usize,
    each: &mut impl FnMut(&[usize]) -> bool,
) -> bool {
    if cur.len() == n {
        return each(cur);
    }
    for pu in 0..used.len() {
        if used[pu] {
            continue;
        }
        used[pu] = true;
        cur.push(pu);
        let go = enumerate(cur, used, n, each);
        cur.pop();
        used[pu] = false;
        if !go {
            return false;
        }
    }
    true
}

/// The relabelings of the machine tree that the simulator cannot tell apart.
struct Symmetry<'t> {
    topo: &'t Topology,
    /// Per level (below the machine): whether its groups may be relabelled within their
    /// parent group.
    free: Vec<bool>,
}

impl<'t> Symmetry<'t> {
    /// None if the tree is uneven (groups of one level of different sizes).
    fn of(topo: &'t Topology) -> Option<Symmetry<'t>> {
        let p = topo.num_pus();
        for l in &topo.levels {
            if l.groups == 0 || !p.is_multiple_of(l.groups) {
                return None;
            }
            let mut size = vec![0usize; l.groups];
            for &g in &l.group_of_pu {
                size[g] += 1;
            }
            if size.iter().any(|&s| s != p / l.groups) {
                return None;
            }
        }
        let dist = &topo.distances;
        let d = |i: usize, j: usize| dist.values[i * dist.n + j];
        let uniform = dist.n <= 1
            || (0..dist.n)
                .all(|i| (0..dist.n).all(|j| d(i, j) == if i == j { d(0, 0) } else { d(0, 1) }));
        // Siblings may swap if the simulator sees the same memory from both: always when
        // their parent lies within one node, else only with a uniform SLIT.
        let free = (1..topo.levels.len())
            .map(|l| {
                uniform || {
                    let up = &topo.levels[l - 1];
                    let mut node_of_group = vec![None; up.groups];
                    (0..p).all(|pu| {
                        let n = topo.pus[pu].node;
                        *node_of_group[up.group_of_pu[pu]].get_or_insert(n) == n
                    })
                }
            })
            .collect();
        Some(Symmetry { topo, free })
    }

    /// The placement with groups relabelled by first use, at the levels that allow it.
    fn canonical(&self, m: &[usize]) -> Vec<Vec<usize>> {
        let levels = &self.topo.levels;
        let mut labels: Vec<FastMap<usize, usize>> = vec![FastMap::default(); levels.len()];
        let mut children: Vec<FastMap<usize, usize>> = vec![FastMap::default(); levels.len()];
        m.iter()
            .map(|&pu| {
                (1..levels.len())
                    .map(|l| {
                        let g = levels[l].group_of_pu[pu];
                        if !self.free[l - 1] {
                            return g;
                        }
                        let parent = levels[l - 1].group_of_pu[pu];
                        let next = children[l].entry(parent).or_insert(0);
                        *labels[l].entry(g).or_insert_with(|| {
                            *next += 1;
                            *next - 1
                        })
                    })
                    .collect()
            })
            .collect()
    }
}

/// A policy under another name: the winner replayed as `best-static`.
struct Renamed {
    name: String,
    inner: Box<dyn Policy>,
}

impl Policy for Renamed {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn initial_mapping(&mut self, ctx: &PolicyCtx) -> Vec<usize> {
        self.inner.initial_mapping(ctx)
    }
    fn place_page(&mut self, ctx: &PolicyCtx, thread: u32, page: u64, node: usize) -> usize {
        self.inner.place_page(ctx, thread, page, node)
    }
    fn on_fault(&mut self, ctx: &PolicyCtx, ev: &FaultEvent, out: &mut Actions) {
        self.inner.on_fault(ctx, ev, out)
    }
    fn first_touch_mapping(&self, ctx: &PolicyCtx) -> Option<Vec<usize>> {
        self.inner.first_touch_mapping(ctx)
    }
    fn static_mapping(&self, ctx: &PolicyCtx) -> Option<Vec<usize>> {
        self.inner.static_mapping(ctx)
    }
    fn quiet_mapping(&self, ctx: &PolicyCtx) -> Option<Vec<usize>> {
        self.inner.quiet_mapping(ctx)
    }
    fn wants_accesses(&self) -> bool {
        self.inner.wants_accesses()
    }
    fn on_access(&mut self, ctx: &PolicyCtx, a: &SimAccess, node: usize, out: &mut Actions) {
        self.inner.on_access(ctx, a, node, out)
    }
    fn wants_tlb_events(&self) -> bool {
        self.inner.wants_tlb_events()
    }
    fn on_tlb_event(&mut self, ctx: &PolicyCtx, ev: &TlbEvent, out: &mut Actions) {
        self.inner.on_tlb_event(ctx, ev, out)
    }
    fn on_tick(&mut self, ctx: &PolicyCtx, out: &mut Actions) {
        self.inner.on_tick(ctx, out)
    }
}

fn model(threads: usize) -> Result<SharingModel, RunError> {
    // One NUMA-vector slot per thread: NV[t] counts thread t's accesses to the page.
    let ids: Vec<u32> = (0..threads as u32).collect();
    SharingModel::new(TableConfig::exact(threads.max(1)), threads, &ids).map_err(too_many)
}

fn too_many(e: tdmap_sharing::SharingError) -> RunError {
    SimError::BadConfig {
        why: format!("best-static: {e}"),
    }
    .into()
}
