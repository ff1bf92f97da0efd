//! SAMMU (sammu-tompecs21.txt §2.2-2.7): the page history table (access threshold AT,
//! sharers vector SV, NUMA counters NC), the sharing matrix SM, the OS notification of
//! page migrations, and the periodic thread mapping with aging.
//!
//! The hardware half (the access counter AC of each TLB entry) lives in the simulator's
//! TLB, which reports evictions and saturations here; the OS's list of pages to migrate
//! and its NUMA threshold are in `sammu_os.rs`. The thread mapping algorithm is Scotch's
//! dual recursive bipartitioning (`tdmap-map`'s `drb`, [`map_drb`]) as in §2.7.1, or
//! `tdmap-map`'s greedy grouping ([`map_greedy`], policy `sammu-greedy`), behind
//! [`MapFn`].

use super::grouping::{map_drb, map_greedy, MapFn};
use super::remap::{caches_used, fits_caches, worth_remapping};
use super::{Actions, OsPolicy, PagePlacement, Policy, PolicyCtx, TlbEvent, TlbEventKind};
use crate::hash::FastMap;
use os::PageMover;
use tdmap_monitor::DataHome;
use tdmap_sharing::enough_sharing;

/// An empty slot of the sharers vector.
pub const NO_THREAD: u32 = u32::MAX;

/// SAMMU's parameters; the defaults are Table 1's.
#[derive(Debug, Clone, Copy)]
pub struct SammuParams {
    /// V_add (§2.4): at least 2; Table 1 uses 2.
    pub v_add: u8,
    /// The NUMA threshold NT the OS starts from and never goes below (Table 1: 10); it
    /// raises it when migrations churn (`sammu_os.rs`).
    pub nt: u8,
    /// The largest NUMA counter value (Table 1: 4-bit counters, 15).
    pub nc_max: u8,
    /// Entries of the sharers vector (Table 1: 2; at most [`SV_MAX`]).
    pub sv_len: usize,
    /// Update AT by the hardware's shift form (Eq. 7) instead of Eq. 3.
    pub shift_form: bool,
    /// Remap only when the new mapping's cost is lower by this fraction; without it,
    /// equivalent mappings that only permute labels would migrate threads every period.
    pub remap_gain: f64,
    /// Remap only when sharing events (off the diagonal) are at least this share of the
    /// events in the (aged) matrix, as kMAF does ([`super::KmafParams::min_sharing`]):
    /// below it the threads work on private data, where any mapping is as good as
    /// another, and a remap on the few sharing events of a reduction or of block
    /// boundaries only moves threads away from their caches and pages.
    pub min_sharing: f64,
    /// Seed of the OS's initial placement, which SAMMU starts from.
    pub seed: u64,
    /// The thread mapping algorithm: Scotch's [`map_drb`] (§2.7.1) by default.
    pub map: MapFn,
}

impl Default for SammuParams {
    fn default() -> Self {
        SammuParams {
            v_add: 2,
            nt: 10,
            nc_max: 15,
            sv_len: 2,
            shift_form: true,
            remap_gain: 0.05,
            min_sharing: 0.1,
            seed: 1,
            map: map_drb,
        }
    }
}

impl SammuParams {
    /// SAMMU mapping threads with `tdmap-map`'s greedy grouping instead of Scotch.
    pub fn greedy(seed: u64) -> Self {
        SammuParams {
            seed,
            map: map_greedy,
            ..SammuParams::default()
        }
    }
}

/// The most sharers-vector entries kept per page.
pub const SV_MAX: usize = 4;
/// The most NUMA counters kept per page: pages on nodes beyond it are not tracked
/// (Table 1 has 4; the presets have at most 8 nodes).
pub const NC_MAX: usize = 16;

/// A page history table entry as stored: fixed arrays, no allocation per page.
#[derive(Debug, Clone, Copy)]
struct Entry {
    at: u32,
    sv: [u32; SV_MAX],
    nc: [u8; NC_MAX],
}

/// One page history table entry (§2.2-2.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageHist {
    /// Access threshold; starts at 0.
    pub at: u32,
    /// Sharers vector, most recent first.
    pub sv: Vec<u32>,
    /// NUMA counters, one per node.
    pub nc: Vec<u8>,
}

/// What one SAMMU event did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Case 1 (statistics updated) rather than case 2 (AT lowered only).
    pub updated: bool,
    /// The node the OS was told to move the page to.
    pub migrate_to: Option<usize>,
}

/// AT after an event (SAMMU Eq. 1, and Eq. 3 or its shift form Eq. 7).
pub fn next_at(at: u32, ac: u32, saturated: bool, shift_form: bool) -> u32 {
    if saturated || ac >= at {
        // SAMMU Eq. 1
        return ((at as u64 + ac as u64) / 2) as u32;
    }
    if ac == 0 {
        return at; // f(0) = 0 (§2.2, first property of f)
    }
    if shift_form {
        // SAMMU Eq. 7: H is the position of the highest set bit.
        let h = |x: u32| 31 - x.leading_zeros();
        at - ((at - ac) >> (h(at) - h(ac)))
    } else {
        // SAMMU Eq. 3: AT - (AT - AC) / (AT / AC), i.e. AT - (AT - AC) * AC / AT.
        at - ((at - ac) as u64 * ac as u64 / at as u64) as u32
    }
}

/// SAMMU's state and policy.
#[derive(Debug, Clone)]
pub struct Sammu {
    p: SammuParams,
    pht: FastMap<u64, Entry>,
    sm: Vec<f64>,
    /// Events per thread on pages no other thread used recently (every sharers-vector
    /// entry is the thread or empty), aged with the SM: each thread's own data.
    private: Vec<f64>,
    n: usize,
    nodes: usize,
    os: PageMover,
    name: &'static str,
    /// Where the OS placed the threads at the start: where they go back to when the data
    /// outgrows the caches they were gathered under.
    spread: Vec<usize>,
}

impl Sammu {
    /// SAMMU with its parameters, named `sammu`; sized by [`Policy::initial_mapping`].
    pub fn new(p: SammuParams) -> Self {
        Sammu::named("sammu", p)
    }

    /// SAMMU under another name (`sammu-greedy`).
    pub fn named(name: &'static str, p: SammuParams) -> Self {
        Sammu {
            p,
            pht: FastMap::default(),
            sm: Vec::new(),
            private: Vec::new(),
            n: 0,
            nodes: 0,
            os: PageMover::new(p.nt, p.nc_max),
            name,
            spread: Vec::new(),
        }
    }

    /// The NUMA threshold in force.
    pub fn nt(&self) -> u8 {
        self.os.nt
    }

    /// Sizes the tables for `threads` threads and `nodes` nodes.
    pub fn resize(&mut self, threads: usize, nodes: usize) {
        self.n = threads;
        self.nodes = nodes;
        self.sm = vec![0.0; threads * threads];
        self.private = vec![0.0; threads];
    }

    /// A sharing matrix cell.
    pub fn sm(&self, i: usize, j: usize) -> f64 {
        self.sm[i * self.n + j]
    }

    /// A page's history entry, if it has one.
    pub fn page(&self, page: u64) -> Option<PageHist> {
        self.pht.get(&page).map(|e| PageHist {
            at: e.at,
            sv: e.sv[..self.sv_len()].to_vec(),
            nc: e.nc[..self.nodes.min(NC_MAX)].to_vec(),
        })
    }

    fn sv_len(&self) -> usize {
        self.p.sv_len.clamp(1, SV_MAX)
    }

    /// Sets a page's history entry (to start from a given state).
    pub fn set_page(&mut self, page: u64, h: PageHist) {
        let mut e = Entry {
            at: h.at,
            sv: [NO_THREAD; SV_MAX],
            nc: [0; NC_MAX],
        };
        let (k, m) = (h.sv.len().min(SV_MAX), h.nc.len().min(NC_MAX));
        e.sv[..k].copy_from_slice(&h.sv[..k]);
        e.nc[..m].copy_from_slice(&h.nc[..m]);
        self.pht.insert(page, e);
    }

    /// One TLB eviction or AC saturation of `page` by `thread` on node `node`, the page
    /// living on `page_node` (Fig. 2-A to 2-G).
    pub fn event(
        &mut self,
        thread: u32,
        node: usize,
        page: u64,
        page_node: usize,
        ac: u32,
        saturated: bool,
    ) -> Outcome {
        let (p, n, sv_len, nt) = (self.p, self.n, self.sv_len(), self.os.nt);
        let nodes = self.nodes.min(NC_MAX);
        let h = self.pht.entry(page).or_insert(Entry {
            at: 0,
            sv: [NO_THREAD; SV_MAX],
            nc: [0; NC_MAX],
        });
        let case1 = saturated || ac >= h.at;
        h.at = next_at(h.at, ac, saturated, p.shift_form); // Fig. 2-B, C
        if !case1 {
            return Outcome {
                updated: false,
                migrate_to: None,
            };
        }
        let t = thread as usize;
        let sv = &h.sv[..sv_len];
        if sv.contains(&thread) && sv.iter().all(|&s| s == thread || s == NO_THREAD) {
            if let Some(c) = self.private.get_mut(t) {
                *c += 1.0;
            }
        }
        for &s in sv {
            if s != NO_THREAD && (s as usize) < n && t < n {
                self.sm[t * n + s as usize] += 1.0; // SAMMU Eq. 4, Fig. 2-D
            }
        }
        h.sv[..sv_len].rotate_right(1);
        h.sv[0] = thread;
        for (x, c) in h.nc[..nodes].iter_mut().enumerate() {
            // SAMMU Eq. 5 with saturating counters, Fig. 2-E
            *c = if x == node {
                c.saturating_add(p.v_add).min(p.nc_max)
            } else {
                c.saturating_sub(1)
            };
        }
        // SAMMU Eq. 6, Fig. 2-F, G
        let notify = page_node != node
            && node < nodes
            && page_node < nodes
            && h.nc[node] as i32 - h.nc[page_node] as i32 >= nt as i32;
        Outcome {
            updated: true,
            migrate_to: notify.then_some(node),
        }
    }

    /// Whether the off-diagonal `a` holds at least `min_sharing` of the matrix's events
    /// (the diagonal counts a thread's events on pages only it used recently), and more
    /// than counting noise: sampled events are Poisson counts, so k of them only show
    /// sharing when k exceeds twice its standard deviation √k (k > 4). A private-only
    /// program (ep) otherwise remaps on the one or two events of its runtime's shared
    /// lines whenever its matrix is nearly empty. And [`enough_sharing`], as `tdmap run`
    /// asks: with two sharers kept per page, the threads that read a pointer array once
    /// each look like a chain of pairs.
    fn shared_enough(&self, a: &[f64]) -> bool {
        let off: f64 = a.iter().sum::<f64>() / 2.0;
        let diag: f64 = (0..self.n).map(|i| self.sm[i * self.n + i]).sum();
        enough_sharing(off, self.n, 1.0)
            && off > 2.0 * off.sqrt()
            && off >= self.p.min_sharing * (off + diag)
    }

    /// Each thread's private events, taken to be on the node it runs on: first touch put
    /// them there, and Eq. 6 moves them after the thread. Not the nodes the pages had at
    /// each event: after a remap those say where the data was, and a policy weighing
    /// them chases its own moves (pairs sharing 4 MiB of `make bench-sim`: 1.36 of os).
    fn private_data(&self, ctx: &PolicyCtx) -> DataHome {
        let mut home = DataHome::new(self.n, self.nodes);
        for t in 0..self.n.min(ctx.thread_pu.len()) {
            home.add(t as u32, ctx.node_of_thread(t as u32), self.private[t]);
        }
        home
    }

    /// The symmetric sharing matrix the mapping algorithm sees.
    fn affinity(&self) -> Vec<f64> {
        let n = self.n;
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                if i != j {
                    a[i * n + j] = self.sm[i * n + j] + self.sm[j * n + i];
                }
            }
        }
        a
    }
}

impl Policy for Sammu {
    fn name(&self) -> String {
        self.name.into()
    }

    /// SAMMU runs under Linux: its threads start where `os` places them.
    fn initial_mapping(&mut self, ctx: &PolicyCtx) -> Vec<usize> {
        self.resize(ctx.threads, ctx.machine.nodes());
        let mut os = OsPolicy::new("os", self.p.seed, PagePlacement::FirstTouch);
        self.spread = os.initial_mapping(ctx);
        self.spread.clone()
    }

    fn wants_tlb_events(&self) -> bool {
        true
    }

    fn on_tlb_event(&mut self, _ctx: &PolicyCtx, ev: &TlbEvent, _out: &mut Actions) {
        let sat = ev.kind == TlbEventKind::Saturated;
        let o = self.event(ev.thread, ev.node, ev.page, ev.page_node, ev.ac, sat);
        if let Some(node) = o.migrate_to {
            self.os.notify(ev.page, ev.page_node, node);
        }
    }

    fn on_tick(&mut self, ctx: &PolicyCtx, out: &mut Actions) {
        self.os.drain(&mut out.page_moves);
        // §2.7.1: map every 100 ms, then age the matrix by 0.75.
        let a = self.affinity();
        let now = caches_used(ctx, ctx.thread_pu);
        if now < caches_used(ctx, &self.spread) && !fits_caches(ctx, now) {
            // Gathered while the data was small, and it has since outgrown the caches:
            // back where the OS spread them (`remap::fits_caches`).
            move_to(ctx, &self.spread, out);
        } else if self.shared_enough(&a) {
            let new = (self.p.map)(&a, self.n, ctx.topo);
            if worth_remapping(ctx, &a, &new, &self.private_data(ctx), self.p.remap_gain) {
                move_to(ctx, &new, out);
            }
        }
        // SAMMU §2.7.1 ages by kMAF's ×0.75 (§3.4.2): the one aging rule.
        tdmap_sharing::age_weights(&mut self.sm);
        tdmap_sharing::age_weights(&mut self.private);
    }
}

/// Moves every thread not on its PU of `mapping` there.
fn move_to(ctx: &PolicyCtx, mapping: &[usize], out: &mut Actions) {
    for (t, &pu) in mapping.iter().enumerate() {
        if ctx.thread_pu.get(t).is_some_and(|&p| p != pu) {
            out.thread_moves.push((t as u32, pu));
        }
    }
}

#[path = "sammu_os.rs"]
mod os;

#[cfg(test)]
#[path = "sammu_tests.rs"]
mod tests;
