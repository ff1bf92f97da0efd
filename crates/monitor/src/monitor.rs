//! The monitor's state and its per-period decisions (kMAF §3.2–3.4): the sharing model,
//! the threads seen, the mapping in force. It decides; [`crate::Engine`] applies.

use crate::config::{Config, Eq6When};
use crate::datahome::DataHome;
use crate::error::MonitorError;
use crate::threads::ThreadIndex;
use std::collections::BTreeSet;
use std::sync::Arc;
use tdmap_map::{cost::PuDistance, map_threads, Distance, Options};
use tdmap_sharing::TableConfig;
use tdmap_sharing::{
    enough_sharing, migration_target, should_migrate, Metric, SharingMatrix, SharingModel,
};
use tdmap_topo::Topology;

/// One sampled page fault, as the monitor needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    /// The faulting thread's tid.
    pub tid: u32,
    /// The faulting virtual address.
    pub addr: u64,
    /// The OS index of the CPU the thread ran on.
    pub cpu: u32,
    /// Bytes of the page that mapped `addr` at the fault (2 MiB on a transparent huge
    /// page), or 0 when unknown, as for a first touch.
    pub page_size: u64,
    /// The logical node the page lived on at the fault, when the source knows it (the
    /// simulator does, perf samples do not): what [`Config::data_cost`] weighs.
    pub page_node: Option<u32>,
}

impl Fault {
    /// A fault whose page size and page node are unknown.
    pub fn new(tid: u32, addr: u64, cpu: u32) -> Fault {
        Fault {
            tid,
            addr,
            cpu,
            page_size: 0,
            page_node: None,
        }
    }
}

/// A thread mapping to apply: `mapping[k]` is the logical PU of thread k.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadPlan {
    /// The whole mapping, one PU per thread seen.
    pub mapping: Vec<usize>,
    /// The threads whose PU changes (new threads included).
    pub changed: Vec<usize>,
    /// Cost of the mapping in force before (with new threads placed as planned).
    pub old_cost: f64,
    /// Cost of the planned mapping.
    pub new_cost: f64,
}

/// kMAF's state for one program: the affinity table and sharing matrix, the threads
/// seen, the mapping in force and the pages touched this period.
pub struct Monitor {
    topo: Arc<Topology>,
    cfg: Config,
    model: SharingModel,
    threads: ThreadIndex,
    touched: BTreeSet<u64>,
    mapping: Option<Vec<usize>>,
    /// Sharing never aged (for the report), per metric.
    totals: [Totals; 2],
    ignored: u64,
    periods: u64,
    home: DataHome,
    /// tids of threads that exited: dropped from later mappings.
    exited: std::collections::HashSet<u32>,
}

impl Monitor {
    /// A monitor for a program running on `topo`, with kMAF's page-fault table (§3.5.1:
    /// 1 KiB sub-blocks, 2 sharers) and one NUMA-vector counter per node.
    pub fn new(topo: &Topology, cfg: Config) -> Result<Monitor, MonitorError> {
        let table = TableConfig {
            sub_block: u64::from(cfg.sub_block),
            ..TableConfig::page_faults(topo.num_nodes().max(1))
        }
        .keeping(cfg.sharers);
        let cap = cfg.max_threads;
        PuDistance::new(topo, Distance::Hops)?;
        Ok(Monitor {
            topo: Arc::new(topo.clone()),
            cfg,
            model: SharingModel::new(table, cap, &[])?,
            threads: ThreadIndex::new(cap),
            touched: BTreeSet::new(),
            mapping: None,
            totals: [Totals::new(cap), Totals::new(cap)],
            ignored: 0,
            periods: 0,
            home: DataHome::new(cap, topo.num_nodes().max(1)),
            exited: Default::default(),
        })
    }

    /// The rules in force.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The machine.
    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// True if `f` fell on a transparent huge page (its NUMA vector is the huge page's).
    pub fn on_huge_page(&self, f: &Fault) -> bool {
        self.model.table().config().huge_page(f.page_size).is_some()
    }

    /// True if some fault comes from a thread without an index yet.
    pub fn has_new_threads(&self, faults: &[Fault]) -> bool {
        faults.iter().any(|f| !self.threads.contains(f.tid))
    }

    /// Gives indexes to the program's live threads `tids` (ascending: creation order)
    /// that have none. Called when a new thread faults: a thread created earlier but
    /// not seen faulting yet must not get a later index than it, or the matrix's thread
    /// numbers would stop following creation order (the order of `tdmap trace`).
    pub fn register_threads(&mut self, tids: &[u32]) {
        for &tid in tids {
            self.threads.index(tid);
        }
    }

    /// Feeds drained samples: each one's thread gets its stable index, and its NUMA vector
    /// entry is the node of the CPU it faulted on (kMAF §3.2). Returns the samples used.
    pub fn ingest(&mut self, faults: &[Fault]) -> Result<u64, MonitorError> {
        let mut used = 0;
        // Threads new in this batch get their indexes in tid order: the kernel hands out
        // tids in creation order, and per-CPU rings scramble the order of first faults.
        let mut new: Vec<u32> = faults.iter().map(|f| f.tid).collect();
        new.sort_unstable();
        new.dedup();
        for tid in new {
            self.threads.index(tid);
        }
        let (mut addrs, mut nodes, mut sizes) = (Vec::new(), Vec::new(), Vec::new());
        let cfg = *self.model.table().config();
        // Runs of one thread go to the model at once: it settles a thread's row of
        // sharing once per call, not once per sample.
        for run in faults.chunk_by(|a, b| a.tid == b.tid) {
            let Some(t) = self.threads.index(run[0].tid) else {
                self.ignored += run.len() as u64;
                continue;
            };
            addrs.clear();
            nodes.clear();
            sizes.clear();
            for f in run {
                addrs.push(f.addr);
                nodes.push(self.node_of_cpu(f.cpu) as u32);
                sizes.push(f.page_size);
                if let (true, Some(n)) = (self.cfg.data_cost, f.page_node) {
                    self.home.add(u32::from(t), n as usize, 1.0);
                }
                // A huge page's NUMA vector is its first page's (the model's rule), and
                // Eq. 6 is checked there: moving that page moves the whole huge page.
                let unit = cfg.huge_page(f.page_size).unwrap_or(cfg.page_size);
                self.touched
                    .insert((f.addr & !(unit - 1)) >> self.page_shift());
            }
            self.model
                .faults_sized(u32::from(t), &addrs, &nodes, &sizes)?;
            used += run.len() as u64;
        }
        Ok(used)
    }

    fn page_shift(&self) -> u32 {
        self.model.table().config().page_size.trailing_zeros()
    }

    /// The logical node of OS CPU `cpu` (node 0 for a CPU the topology does not know).
    pub fn node_of_cpu(&self, cpu: u32) -> usize {
        self.topo
            .pu_by_os(cpu as usize)
            .map_or(0, |pu| self.topo.node_of_pu(pu))
    }

    /// The thread index table (tids in order of first appearance).
    pub fn threads(&self) -> &ThreadIndex {
        &self.threads
    }

    /// The mapping in force, if one was planned.
    pub fn mapping(&self) -> Option<&[usize]> {
        self.mapping.as_deref()
    }

    /// Samples of threads beyond `max_threads`.
    pub fn ignored(&self) -> u64 {
        self.ignored
    }

    /// The current (aged) matrix of `metric` over the threads seen, row-major.
    fn current(&self, metric: Metric) -> Vec<u64> {
        let (n, cap) = (self.threads.len(), self.cfg.max_threads);
        let m = self.model.matrix(metric);
        (0..n * n)
            .map(|k| m.as_slice()[k / n * cap + k % n])
            .collect()
    }

    /// All sharing of `metric` seen during the run, without aging, over the threads seen.
    pub fn total_matrix(&self, metric: Metric) -> SharingMatrix {
        let (n, cap) = (self.threads.len(), self.cfg.max_threads);
        let (cur, t) = (self.current(metric), &self.totals[metric_slot(metric)]);
        let cells = (0..n * n)
            .map(|k| {
                let at = k / n * cap + k % n;
                t.sum[at] + cur[k] - t.last[at]
            })
            .collect();
        SharingMatrix::from_rows(n, cells).expect("sharing matrices are symmetric")
    }

    /// kMAF §3.4.1: maps the threads seen onto the machine. Returns the mapping to apply
    /// when there is none yet (once some sharing is seen, or after
    /// [`Config::first_mapping_wait`] periods), when the new mapping costs less than
    /// `(1 - margin)` × the one in force and passes the sharing gates, or when new threads
    /// need a PU (then only they move). None otherwise, and always with `--data-only`.
    pub fn plan_threads(&mut self) -> Result<Option<ThreadPlan>, MonitorError> {
        let n = self.threads.len();
        if !self.cfg.threads || n == 0 {
            return Ok(None);
        }
        let m: Vec<f64> = self
            .current(Metric::Accesses)
            .iter()
            .map(|&c| c as f64)
            .collect();
        let events = (0..n * n)
            .filter(|&k| k / n < k % n)
            .map(|k| m[k])
            .sum::<f64>();
        let shared = events > 0.0;
        // The first mapping waits for sharing to show, but not for ever: threads that
        // share nothing still get placed (spread over the machine), so that their pages
        // can follow them (pages move only once threads are mapped).
        let waiting = n < 2 || self.periods < self.cfg.first_mapping_wait;
        if self.mapping.is_none() && !shared && waiting {
            return Ok(None);
        }
        let opts = Options {
            seed: self.cfg.seed,
            oversubscribe: true,
        };
        let old = self.mapping.clone().unwrap_or_default();
        let tids = self.threads.tids();
        let live: Vec<usize> = (0..n)
            .filter(|&k| !self.exited.contains(&tids[k]))
            .collect();
        let new = if live.len() == n {
            map_threads(self.cfg.algorithm, &self.topo, &m, n, &opts)?
        } else {
            // Tasks that exited are dropped: the live ones are mapped among themselves,
            // and an exited one keeps its PU (nothing is pinned for it any more).
            let sub: Vec<f64> = live
                .iter()
                .flat_map(|&i| live.iter().map(|&j| (i, j)).collect::<Vec<_>>())
                .map(|(i, j)| m[i * n + j])
                .collect();
            let placed = if live.is_empty() {
                Vec::new()
            } else {
                map_threads(self.cfg.algorithm, &self.topo, &sub, live.len(), &opts)?
            };
            let mut full: Vec<usize> = (0..n).map(|k| old.get(k).copied().unwrap_or(0)).collect();
            for (p, &k) in live.iter().enumerate() {
                full[k] = placed[p];
            }
            full
        };
        // The mapping in force, with any new thread placed where the new mapping says.
        let cur: Vec<usize> = old.iter().chain(&new[old.len()..]).copied().collect();
        let [old_cost, new_cost] = self.costs(&m, [&cur, &new])?;
        let better = new_cost < old_cost * (1.0 - self.cfg.margin) && self.gates_pass(&m, events);
        let chosen = if old.is_empty() || better {
            new
        } else if cur.len() > old.len() {
            cur
        } else {
            return Ok(None);
        };
        let changed: Vec<usize> = (0..n)
            .filter(|&k| old.get(k) != Some(&chosen[k]) && live.contains(&k))
            .collect();
        if self.mapping.is_none() && self.cfg.data && self.cfg.reset_nvs_at_first_mapping {
            // Until now threads ran wherever the scheduler put them, so the NUMA vectors
            // say where they happened to be, not where they will run: a page could pass
            // Eq. 6 towards a node its thread is about to leave, and need many periods to
            // come back. Pages move only after this first mapping (kMAF §3.3); they
            // follow the counts taken from then on.
            self.model.table_mut().clear_nvs();
        }
        self.mapping = Some(chosen.clone());
        Ok(Some(ThreadPlan {
            mapping: chosen,
            changed,
            old_cost,
            new_cost,
        }))
    }

    /// The sharing gates of a remap ([`Config::min_events_per_thread`],
    /// [`Config::min_sharing_share`]); `events` counts each pair once.
    fn gates_pass(&self, m: &[f64], events: f64) -> bool {
        let n = self.threads.len();
        let all: f64 = m.iter().sum();
        enough_sharing(events, n, self.cfg.min_events_per_thread)
            && 2.0 * events >= self.cfg.min_sharing_share * all
    }

    /// The cost of each of `maps` for the sharing `m` (hops between the threads' PUs),
    /// plus the data it leaves behind when [`Config::data_cost`] is on; the distances are
    /// prepared once for all.
    fn costs<const N: usize>(
        &self,
        m: &[f64],
        maps: [&[usize]; N],
    ) -> Result<[f64; N], MonitorError> {
        let topo = &*self.topo;
        let dist = PuDistance::new(topo, Distance::Hops)?;
        // A node's accesses to another node's memory cost the hops between their PUs.
        let first_pu: Vec<usize> = if self.cfg.data_cost {
            (0..topo.num_nodes())
                .map(|n| {
                    (0..topo.num_pus())
                        .find(|&p| topo.node_of_pu(p) == n)
                        .unwrap_or(0)
                })
                .collect()
        } else {
            Vec::new()
        };
        Ok(maps.map(|map| {
            let sharing = tdmap_map::cost::cost_with(&dist, m, map.len(), map);
            if !self.cfg.data_cost {
                return sharing;
            }
            let data = self.home.cost(
                map,
                |pu| topo.node_of_pu(pu),
                |a, n| dist.get(first_pu[a], first_pu[n]),
            );
            sharing + data
        }))
    }

    /// Pages touched this period whose NUMA vector passes kMAF Eq. 6, as (page address,
    /// vector), in address order. None before the first thread mapping (kMAF §3.3), unless
    /// threads are not mapped at all (`--data-only`); the vectors restart at that mapping.
    pub fn page_candidates(&self) -> Vec<(u64, Vec<u32>)> {
        if self.cfg.eq6 != Eq6When::PerPeriod {
            return Vec::new();
        }
        let shift = self.page_shift();
        self.candidates(self.touched.iter().map(|&p| p << shift))
    }

    /// With Eq. 6 per fault ([`Eq6When::PerFault`]): the pages of `faults` whose NUMA
    /// vector passes it now, once each, in fault order.
    pub fn fault_candidates(&self, faults: &[Fault]) -> Vec<(u64, Vec<u32>)> {
        if self.cfg.eq6 != Eq6When::PerFault {
            return Vec::new();
        }
        let cfg = self.model.table().config();
        let mut seen = BTreeSet::new();
        let pages = faults.iter().filter_map(|f| {
            let unit = cfg.huge_page(f.page_size).unwrap_or(cfg.page_size);
            let page = f.addr & !(unit - 1);
            seen.insert(page).then_some(page)
        });
        self.candidates(pages)
    }

    /// The pages among `pages` (addresses of page starts) whose NUMA vector passes kMAF
    /// Eq. 6; none before the first thread mapping (§3.3) unless threads are not mapped.
    fn candidates(&self, pages: impl Iterator<Item = u64>) -> Vec<(u64, Vec<u32>)> {
        if !self.cfg.data || (self.cfg.threads && self.mapping.is_none()) {
            return Vec::new();
        }
        let table = self.model.table();
        pages
            .filter_map(|a| table.nv(a).map(|nv| (a, nv)))
            .filter(|(_, nv)| should_migrate(nv))
            .collect()
    }

    /// The moves to make among `candidates`, given each one's current logical node (None
    /// for a page not present or unknown, which is left alone): (page address, node).
    pub fn plan_pages(
        &self,
        candidates: &[(u64, Vec<u32>)],
        current: &[Option<usize>],
    ) -> Vec<(u64, usize)> {
        candidates
            .iter()
            .zip(current)
            .filter_map(|((a, nv), cur)| {
                let cur = (*cur)? as u32;
                migration_target(nv, Some(cur)).map(|n| (*a, n as usize))
            })
            .collect()
    }

    /// Thread `tid` exited: later mappings leave it out.
    pub fn retire(&mut self, tid: u32) {
        if self.threads.contains(tid) {
            self.exited.insert(tid);
        }
    }

    /// kMAF §3.3: a page was moved, so its NUMA vector is halved.
    pub fn moved(&mut self, addr: u64) {
        self.model.table_mut().halve_nv(addr);
    }

    /// Ends a period: forgets the touched pages and ages the matrix ×0.75 (kMAF §3.4.2),
    /// keeping the un-aged total for the report.
    pub fn end_period(&mut self) {
        let (cap, n) = (self.cfg.max_threads, self.threads.len());
        for metric in [Metric::Accesses, Metric::Amount] {
            let m = self.model.matrix(metric).as_slice();
            self.totals[metric_slot(metric)].add_since_last(m, n, cap);
        }
        self.model.age();
        self.home.age();
        for metric in [Metric::Accesses, Metric::Amount] {
            let m = self.model.matrix(metric).as_slice();
            self.totals[metric_slot(metric)].mark(m, n, cap);
        }
        self.touched.clear();
        self.periods += 1;
    }

    /// The affinity table, for the report's data metrics.
    pub fn table(&self) -> &tdmap_sharing::AffinityTable {
        self.model.table()
    }
}

/// One metric's un-aged total: before each aging, what the aged matrix gained since it
/// was last marked is added to `sum`.
struct Totals {
    sum: Vec<u64>,
    last: Vec<u64>,
}

impl Totals {
    fn new(cap: usize) -> Totals {
        Totals {
            sum: vec![0; cap * cap],
            last: vec![0; cap * cap],
        }
    }

    fn add_since_last(&mut self, m: &[u64], n: usize, cap: usize) {
        for i in 0..n {
            let row = i * cap..i * cap + n;
            let (sum, last) = (&mut self.sum[row.clone()], &self.last[row.clone()]);
            for ((s, &now), &was) in sum.iter_mut().zip(&m[row]).zip(last) {
                *s += now - was;
            }
        }
    }

    fn mark(&mut self, m: &[u64], n: usize, cap: usize) {
        for i in 0..n {
            self.last[i * cap..i * cap + n].copy_from_slice(&m[i * cap..i * cap + n]);
        }
    }
}

fn metric_slot(metric: Metric) -> usize {
    match metric {
        Metric::Accesses => 0,
        Metric::Amount => 1,
    }
}

#[cfg(test)]
mod tests;
