//! The policy seam: what the simulator asks a mapping policy, and what a policy can ask
//! the simulated OS to do (move threads, move pages, inject extra page faults).
//!
//! A policy sees the events its paper's mechanism sees: page faults (kMAF §3.1), TLB
//! evictions and access-counter saturations (SAMMU §2.2), every access if it asks (the
//! online oracle of SAMMU §3.1), and a periodic tick (100 ms in both papers). Static policies only answer the initial mapping and page placement.

mod basic;
pub mod best_static;
pub mod grouping;
pub mod kmaf;
mod numa_balancing;
mod plan;
pub mod remap;
pub mod sammu;

pub use basic::{pu_order, ByName, Fixed, OsPolicy, PagePlacement, StaticPolicy, ThreadOrder};
pub use best_static::BestStatic;
pub use kmaf::{Kmaf, KmafParams};
pub use numa_balancing::NumaBalancing;
pub use sammu::{Sammu, SammuParams};

use crate::machine::Machine;
use tdmap_topo::Topology;

/// What a policy may look at when it is called.
#[derive(Debug, Clone, Copy)]
pub struct PolicyCtx<'a> {
    /// The machine.
    pub topo: &'a Topology,
    /// The simulator's view of it (cores, packages, caches).
    pub machine: &'a Machine,
    /// Number of threads of the run.
    pub threads: usize,
    /// The PU each thread runs on now (empty before the initial mapping).
    pub thread_pu: &'a [usize],
    /// Simulated time: the clock of the thread furthest ahead, in cycles.
    pub now: u64,
    /// The policy period in cycles (the time between two ticks).
    pub period: u64,
    /// The cycles every thread has run so far, added up: the work done, which grows only
    /// with the threads that run (a serial phase adds one thread's time, not all).
    pub work: u64,
    /// Where the pages are.
    pub pages: PageView<'a>,
}

impl<'a> PolicyCtx<'a> {
    /// The context before the run starts: no thread placed, time 0, no pages; what a
    /// policy's initial or static mapping is asked with.
    pub fn before_run(topo: &'a Topology, machine: &'a Machine, threads: usize) -> Self {
        PolicyCtx {
            topo,
            machine,
            threads,
            thread_pu: &[],
            now: 0,
            period: 1,
            work: 0,
            pages: PageView::default(),
        }
    }
}

/// A read-only view of the simulated page table: where each page lives.
#[derive(Debug, Clone, Copy, Default)]
pub struct PageView<'a> {
    table: Option<&'a crate::hash::FastMap<u64, crate::sim::Pte>>,
    shift: u32,
    data: Option<u64>,
}

impl<'a> PageView<'a> {
    pub(crate) fn new(
        table: &'a crate::hash::FastMap<u64, crate::sim::Pte>,
        shift: u32,
        data: Option<u64>,
    ) -> Self {
        PageView {
            table: Some(table),
            shift,
            data,
        }
    }

    /// The node of the page holding address `addr`, None if it was never touched.
    pub fn node_of_addr(&self, addr: u64) -> Option<usize> {
        let t = self.table?;
        t.get(&(addr >> self.shift)).map(|p| p.node as usize)
    }

    /// The page number of address `addr`.
    pub fn page_of(&self, addr: u64) -> u64 {
        addr >> self.shift
    }

    /// The bytes of the pages touched so far: the program's resident set, which the OS
    /// knows.
    pub fn resident_bytes(&self) -> u64 {
        self.table.map_or(0, |t| t.len() as u64) << self.shift
    }

    /// The bytes of data the program works on: what it allocated (`SimConfig::data_bytes`),
    /// or the resident set when that is larger or unknown.
    pub fn data_bytes(&self) -> u64 {
        self.resident_bytes().max(self.data.unwrap_or(0))
    }
}

impl PolicyCtx<'_> {
    /// The policy period in simulated seconds.
    pub fn period_secs(&self) -> f64 {
        self.period as f64 / self.machine.hz
    }
}

impl PolicyCtx<'_> {
    /// The node a thread runs on now.
    pub fn node_of_thread(&self, thread: u32) -> usize {
        self.machine.node_of_pu[self.thread_pu[thread as usize]]
    }
}

/// Why a page fault happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// The page was never touched: the OS places it now.
    FirstTouch,
    /// The page was present, but a policy cleared its present bit (kMAF §3.1.2).
    Injected,
}

/// A page fault, after the page is placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultEvent {
    /// The faulting thread.
    pub thread: u32,
    /// The node it runs on.
    pub node: usize,
    /// The faulting address.
    pub addr: u64,
    /// Its page.
    pub page: u64,
    /// The node the page lives on.
    pub page_node: usize,
    /// Why.
    pub kind: FaultKind,
}

/// Why a TLB entry's counter is reported (SAMMU §2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlbEventKind {
    /// The entry left the TLB (eviction or shootdown, SAMMU §2.6.3).
    Evicted,
    /// The access counter reached its maximum.
    Saturated,
}

/// A TLB entry's access counter, reported to the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlbEvent {
    /// The thread whose accesses were counted.
    pub thread: u32,
    /// The node of the core whose TLB held the entry.
    pub node: usize,
    /// The page.
    pub page: u64,
    /// The node the page lives on.
    pub page_node: usize,
    /// The access counter.
    pub ac: u32,
    /// Eviction or saturation.
    pub kind: TlbEventKind,
}

/// What a policy asks the simulated OS to do; the simulator applies and charges it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Actions {
    /// Move thread to PU.
    pub thread_moves: Vec<(u32, usize)>,
    /// Move page to node.
    pub page_moves: Vec<(u64, usize)>,
    /// Clear the present bit of every page, so that the next access to each faults.
    pub inject_faults: bool,
    /// Clear the present bit of these pages only (a scan over part of the address
    /// space, as kMAF's and Linux's page-table walks do).
    pub inject_pages: Vec<u64>,
}

impl Actions {
    /// Whether there is nothing to do.
    pub fn is_empty(&self) -> bool {
        self.thread_moves.is_empty()
            && self.page_moves.is_empty()
            && !self.inject_faults
            && self.inject_pages.is_empty()
    }

    /// Forgets everything, keeping the buffers.
    pub fn clear(&mut self) {
        self.thread_moves.clear();
        self.page_moves.clear();
        self.inject_faults = false;
        self.inject_pages.clear();
    }
}

/// A thread and data mapping policy, driven by the simulator. `Send`, so that
/// [`crate::simulate_many`] can replay policies on threads of their own.
pub trait Policy: Send {
    /// The name reports use.
    fn name(&self) -> String;

    /// The PU of each thread at the start (one entry per thread).
    fn initial_mapping(&mut self, ctx: &PolicyCtx) -> Vec<usize>;

    /// For a policy that is nothing but a thread mapping with first-touch pages (no
    /// event hooks, no moves, the same mapping on every call): that mapping. Two such
    /// policies with the same mapping replay identically, so best-static's plan replays
    /// them once. None (the default) when the policy does anything else.
    fn first_touch_mapping(&self, _ctx: &PolicyCtx) -> Option<Vec<usize>> {
        None
    }

    /// For a static policy, one that only answers [`Policy::initial_mapping`] and
    /// [`Policy::place_page`] (no other hook does anything, nothing moves, and both give
    /// the same answers whatever the context's time, work and page table): its thread
    /// mapping. Static policies with the same mapping share one replay of the caches
    /// (`crate::simulate_many`). None (the default) for any other policy.
    fn static_mapping(&self, _ctx: &PolicyCtx) -> Option<Vec<usize>> {
        None
    }

    /// For a quiet policy, one that acts only at ticks (no other hook does anything) and
    /// decides there from its own state, the threads' PUs, the period and the machine
    /// alone (not the time, the work or the page table), and whose page placement is as a
    /// static policy's: its thread mapping. Until its first tick that asks for anything it
    /// replays as a static policy, so it shares a replay with the static policies of the
    /// same mapping until then (`os` and `interleave`, whose load balancer seldom moves a
    /// thread in a short trace). None (the default) for any other policy.
    fn quiet_mapping(&self, _ctx: &PolicyCtx) -> Option<Vec<usize>> {
        None
    }

    /// The node of a page on its first touch by `thread`, which runs on `node`.
    /// The default is Linux's first-touch rule.
    fn place_page(&mut self, _ctx: &PolicyCtx, _thread: u32, _page: u64, node: usize) -> usize {
        node
    }

    /// Every page fault, first touch or injected.
    fn on_fault(&mut self, _ctx: &PolicyCtx, _ev: &FaultEvent, _out: &mut Actions) {}

    /// Whether the simulator should report every access (an online oracle's view, as in
    /// SAMMU §3.1); off by default, since it costs a call per access.
    fn wants_accesses(&self) -> bool {
        false
    }

    /// One access, after it was served; `page_node` is the node of its page.
    fn on_access(
        &mut self,
        _ctx: &PolicyCtx,
        _access: &crate::SimAccess,
        _page_node: usize,
        _out: &mut Actions,
    ) {
    }

    /// Whether the simulator should report TLB evictions and AC saturations.
    fn wants_tlb_events(&self) -> bool {
        false
    }

    /// A TLB eviction or AC saturation.
    fn on_tlb_event(&mut self, _ctx: &PolicyCtx, _ev: &TlbEvent, _out: &mut Actions) {}

    /// The periodic call (every 100 ms of simulated time by default).
    fn on_tick(&mut self, _ctx: &PolicyCtx, _out: &mut Actions) {}
}

/// A page table of its own, to call a policy outside the simulator (tests, tools): pages
/// set by hand, seen by the policy through [`PolicyCtx::pages`].
#[derive(Debug, Clone, Default)]
pub struct TestPages {
    table: crate::hash::FastMap<u64, crate::sim::Pte>,
    /// The program's allocated bytes, as `SimConfig::data_bytes`.
    pub data_bytes: Option<u64>,
}

impl TestPages {
    /// Puts page number `page` on `node`.
    pub fn set(&mut self, page: u64, node: usize) {
        let pte = crate::sim::Pte {
            node: node as u16,
            present: true,
            home: node as u32,
        };
        self.table.insert(page, pte);
    }

    /// A context on `topo` with these 4 KiB pages, `threads` threads on `thread_pu`.
    pub fn ctx<'a>(
        &'a self,
        topo: &'a Topology,
        machine: &'a Machine,
        threads: usize,
        thread_pu: &'a [usize],
    ) -> PolicyCtx<'a> {
        PolicyCtx {
            topo,
            machine,
            threads,
            thread_pu,
            now: 0,
            period: 1,
            work: 0,
            pages: PageView::new(&self.table, 12, self.data_bytes),
        }
    }
}
