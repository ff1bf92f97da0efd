//! kMAF (kmaf-pact14.txt §3): the online mechanism of `tdmap run`, driven by the
//! simulated page faults. Every fault (the first touch of a page, and the extra faults
//! injected each period, §3.1.2) feeds the affinity table and sharing matrix of
//! `tdmap-sharing` (§3.2); the page then migrates by Eq. 6 with its NUMA vector halved
//! (§3.3), but only once threads were mapped for the first time; every period (100 ms,
//! §3.4) `tdmap-map` maps the threads from the matrix, which is then aged ×0.75 (§3.4.2),
//! and the present bit of every page is cleared so that the next access to each faults.

use super::basic::{pu_order, spread, ThreadOrder};
use super::remap::{worth_remapping, DataHome};
use super::{Actions, FaultEvent, FaultKind, Policy, PolicyCtx};
use tdmap_map::Algorithm;
use tdmap_sharing::{enough_sharing, migration_target, Metric, SharingModel, TableConfig};

/// kMAF's parameters.
#[derive(Debug, Clone, Copy)]
pub struct KmafParams {
    /// Seed of the OS's initial placement, which kMAF starts from.
    pub seed: u64,
    /// The thread mapping algorithm (kMAF used a fast graph partitioner; `greedy` is the
    /// online default of `tdmap-map`).
    pub algorithm: Algorithm,
    /// Remap only when the new mapping's cost is lower by this fraction: the matrix keeps
    /// changing a little, and a mapping that only permutes equivalent threads would
    /// migrate threads every period for nothing.
    pub remap_gain: f64,
    /// Remap only when sharing events are at least this share of the events in the
    /// (aged) matrix. Below it the threads work on private data (the private-only class
    /// of kMAF §2), every mapping is as good as another, and the few sharing events that
    /// page-fault sampling finds at block boundaries are noise: remapping on them would
    /// only move threads away from their pages.
    pub min_sharing: f64,
    /// The share of the threads' work that extra faults may cost (kMAF §5.4 measured
    /// under 4 % overhead in all). Each period clears the present bit of the next pages
    /// of a sweep over every page known, as many as this share of the work done since
    /// the last period pays for at one fault each. On the papers' long runs that is
    /// every page every period; on a short trace, whose pages are reused far less per
    /// period, it keeps the mechanism from costing more than the run itself, and it
    /// spreads the faults over the run instead of one burst on whichever thread runs.
    pub fault_budget: f64,
    /// The cost of one extra fault in cycles, for the budget ([`crate::Costs`]).
    pub fault_cycles: u64,
}

impl Default for KmafParams {
    fn default() -> Self {
        KmafParams {
            seed: 1,
            algorithm: Algorithm::Greedy,
            remap_gain: 0.1,
            min_sharing: 0.1,
            fault_budget: 0.02,
            fault_cycles: crate::Costs::default().injected_fault,
        }
    }
}

/// The kMAF policy.
pub struct Kmaf {
    params: KmafParams,
    model: Option<SharingModel>,
    mapped: bool,
    mappings: u64,
    /// Every page faulted in so far, in first-touch order: the sweep's address space.
    known: Vec<u64>,
    /// The next page of the sweep.
    cursor: usize,
    /// Extra faults the budget affords and the sweep has not spent yet.
    credit: f64,
    /// The threads' work ([`PolicyCtx::work`]) at the last period.
    work_at: u64,
    /// Faults of each thread on pages of each node, aged with the matrix: where each
    /// thread's data lives, for the cost of moving it.
    home: DataHome,
    /// Fault samples in the model at the last mapping.
    seen: u64,
}

impl Kmaf {
    /// kMAF with `params`.
    pub fn new(params: KmafParams) -> Kmaf {
        Kmaf {
            params,
            model: None,
            mapped: false,
            mappings: 0,
            known: Vec::new(),
            cursor: 0,
            credit: 0.0,
            work_at: 0,
            home: DataHome::default(),
            seen: 0,
        }
    }

    /// The sharing model as it stands (after the run starts).
    pub fn model(&self) -> Option<&SharingModel> {
        self.model.as_ref()
    }

    /// Thread mappings computed so far.
    pub fn mappings(&self) -> u64 {
        self.mappings
    }

    /// The new PU of each thread if the matrix says a better mapping exists.
    fn remap(&self, ctx: &PolicyCtx, m: &[f64]) -> Option<Vec<usize>> {
        let n = ctx.threads;
        let opts = tdmap_map::Options {
            seed: self.params.seed,
            oversubscribe: n > ctx.topo.num_pus(),
        };
        let new = tdmap_map::map_threads(self.params.algorithm, ctx.topo, m, n, &opts).ok()?;
        worth_remapping(ctx, m, &new, &self.home, self.params.remap_gain).then_some(new)
    }

    /// kMAF §3.1.2: clears the present bit of the next pages of a sweep over every page
    /// known, as many as the fault budget affords for the threads' work since the last
    /// period. The credit grows with the work done, so a serial phase, where one thread
    /// runs, earns one thread's share and not every idle thread's.
    fn sweep(&mut self, ctx: &PolicyCtx, out: &mut Actions) {
        let work = ctx.work.saturating_sub(self.work_at);
        self.work_at = ctx.work;
        let len = self.known.len();
        let per_fault = self.params.fault_cycles.max(1) as f64;
        // At most one full round banked: a long quiet stretch buys no burst later.
        self.credit =
            (self.credit + self.params.fault_budget * work as f64 / per_fault).min(len as f64);
        let n = self.credit as usize;
        if n == 0 {
            return;
        }
        self.credit -= n as f64;
        for _ in 0..n {
            out.inject_pages.push(self.known[self.cursor]);
            self.cursor = (self.cursor + 1) % len;
        }
    }
}

impl Policy for Kmaf {
    fn name(&self) -> String {
        "kmaf".into()
    }

    fn initial_mapping(&mut self, ctx: &PolicyCtx) -> Vec<usize> {
        let cfg = TableConfig::page_faults(ctx.machine.nodes());
        self.model = SharingModel::new(cfg, ctx.threads, &[]).ok();
        self.home = DataHome::new(ctx.threads, ctx.machine.nodes());
        spread(
            &pu_order(ctx.topo, ThreadOrder::Random(self.params.seed)),
            ctx.threads,
        )
    }

    fn on_fault(&mut self, _ctx: &PolicyCtx, ev: &FaultEvent, out: &mut Actions) {
        let Some(model) = self.model.as_mut() else {
            return;
        };
        if ev.kind == FaultKind::FirstTouch {
            self.known.push(ev.page);
        }
        self.home.add(ev.thread, ev.page_node, 1.0);
        // The simulator only reports threads and nodes of the run, which the model was
        // built for: this cannot fail.
        if model.fault(ev.thread, ev.addr, ev.node as u32).is_err() || !self.mapped {
            return; // kMAF §3.3: no page moves before the first thread mapping
        }
        let Some(nv) = model.table().nv(ev.addr) else {
            return;
        };
        // kMAF Eq. 6, then halve the NUMA vector after the migration (§3.3).
        if let Some(node) = migration_target(&nv, Some(ev.page_node as u32)) {
            out.page_moves.push((ev.page, node as usize));
            model.table_mut().halve_nv(ev.addr);
        }
    }

    fn on_tick(&mut self, ctx: &PolicyCtx, out: &mut Actions) {
        let Some(model) = self.model.as_ref() else {
            return;
        };
        if model.events() == self.seen {
            // No new samples: the mapping would not change, and aging a matrix that gets
            // nothing new would only leave its integer remainders (x - x/4 keeps 1..3).
            self.sweep(ctx, out);
            return;
        }
        self.seen = model.events();
        let sm = model.matrix(Metric::Accesses);
        let all: u64 = sm.as_slice().iter().sum();
        let off = sm.off_diagonal_sum() as f64; // each pair twice
        let shared =
            enough_sharing(off / 2.0, ctx.threads) && off >= self.params.min_sharing * all as f64;
        let m = sm.to_f64_rows();
        if let Some(new) = shared.then(|| self.remap(ctx, &m)).flatten() {
            for (t, (&pu, &old)) in new.iter().zip(ctx.thread_pu).enumerate() {
                if pu != old {
                    out.thread_moves.push((t as u32, pu));
                }
            }
        }
        self.mappings += 1;
        self.mapped = true;
        if let Some(model) = self.model.as_mut() {
            model.age(); // kMAF §3.4.2: ×0.75 after each mapping
        }
        self.home.age(0.75);
        self.sweep(ctx, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Machine, SimConfig};

    /// kMAF §3.3: Eq. 6 moves a page only after the first thread mapping, then halves
    /// its NUMA vector.
    #[test]
    fn pages_move_by_eq6_only_after_the_first_mapping() {
        let topo = tdmap_topo::preset("xeon-x7550-4s").unwrap();
        let machine = Machine::new(&topo, &SimConfig::default()).unwrap();
        let mut k = Kmaf::new(KmafParams::default());
        let pus = {
            let ctx = PolicyCtx {
                topo: &topo,
                machine: &machine,
                threads: 2,
                thread_pu: &[],
                now: 0,
                period: 1,
                work: 0,
            };
            k.initial_mapping(&ctx)
        };
        let ctx = PolicyCtx {
            topo: &topo,
            machine: &machine,
            threads: 2,
            thread_pu: &pus,
            now: 10_000_000,
            period: 1,
            work: 20_000_000,
        };
        let fault = |node: usize, kind| FaultEvent {
            thread: 1,
            node,
            addr: 0x5000,
            page: 5,
            page_node: 0,
            kind,
        };
        let mut out = Actions::default();
        k.on_fault(&ctx, &fault(2, FaultKind::FirstTouch), &mut out);
        for _ in 0..4 {
            k.on_fault(&ctx, &fault(2, FaultKind::Injected), &mut out);
        }
        assert!(out.page_moves.is_empty(), "moved before mapping: {out:?}");
        k.on_tick(&ctx, &mut out);
        assert_eq!(
            out.inject_pages,
            vec![5],
            "the sweep clears the one page known"
        );
        assert_eq!(k.mappings(), 1);
        out.clear();
        k.on_fault(&ctx, &fault(2, FaultKind::Injected), &mut out);
        assert_eq!(
            out.page_moves,
            vec![(5, 2)],
            "NV [0,0,6,0]: Eq. 6 says node 2"
        );
        let nv = k.model().unwrap().table().nv(0x5000).unwrap();
        assert_eq!(nv, vec![0, 0, 3, 0], "halved after the migration");
    }

    /// Threads 0-3, spread over the packages, each touch one page `rounds` times: a
    /// pointer array each reads once (one round: 6 sharing events for 8 threads) moves no
    /// thread, as in `tdmap run`; the same sharing seen four times brings them together.
    fn moved_after(rounds: usize) -> usize {
        let topo = tdmap_topo::preset("xeon-x7550-4s").unwrap();
        let machine = Machine::new(&topo, &SimConfig::default()).unwrap();
        let mut k = Kmaf::new(KmafParams::default());
        let mut ctx = PolicyCtx {
            topo: &topo,
            machine: &machine,
            threads: 8,
            thread_pu: &[],
            now: 0,
            period: 1,
            work: 0,
        };
        let pus = k.initial_mapping(&ctx);
        ctx.thread_pu = &pus;
        let mut out = Actions::default();
        for r in 0..rounds {
            for t in 0..4 {
                let ev = FaultEvent {
                    thread: t,
                    node: machine.node_of_pu[pus[t as usize]],
                    addr: 0x5000,
                    page: 5,
                    page_node: machine.node_of_pu[pus[0]],
                    kind: if r + t as usize == 0 {
                        FaultKind::FirstTouch
                    } else {
                        FaultKind::Injected
                    },
                };
                k.on_fault(&ctx, &ev, &mut out);
            }
        }
        k.on_tick(&ctx, &mut out);
        out.thread_moves.len()
    }

    #[test]
    fn fewer_sharing_events_than_threads_move_no_thread() {
        assert_eq!(moved_after(1), 0);
        assert!(moved_after(4) > 0);
    }
}
