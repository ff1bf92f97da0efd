//! kMAF (kmaf-pact14.txt §3) in the simulator: `tdmap run`'s own loop (tdmap-monitor's
//! [`Engine`]) driven by simulated page faults and ticks, acting on the simulated machine
//! through [`SimActuator`]. Every fault (first touches, and the extra faults this policy
//! injects, §3.1.2) goes to [`Engine::ingest`]; every period (100 ms, §3.4) to
//! [`Engine::period`]. The rules are the engine's [`Config`]: `tdmap run`'s by default
//! (`kmaf`), the paper's (`kmaf-paper`), and kMAF Fig. 11's thread-only and data-only
//! variants (`kmaf-threads`, `kmaf-data`).
//!
//! What is the simulator's own is the extra-fault source: each period clears the present
//! bit of the next pages of a sweep over every page known, within a fault budget.

use super::basic::{pu_order, spread, ThreadOrder};
use super::{Actions, FaultEvent, FaultKind, Policy, PolicyCtx};
use tdmap_monitor::{ActError, Actuator, Config, Engine, Fault};

/// kMAF's parameters in the simulator.
#[derive(Debug, Clone, Copy)]
pub struct KmafParams {
    /// Seed of the OS's initial placement, which kMAF starts from.
    pub seed: u64,
    /// The loop's rules (`tdmap run`'s by default).
    pub config: Config,
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
            config: Config::default(),
            fault_budget: 0.02,
            fault_cycles: crate::Costs::default().injected_fault,
        }
    }
}

/// The kMAF policy.
pub struct Kmaf {
    name: String,
    params: KmafParams,
    engine: Option<Engine>,
    /// Every page faulted in so far, in first-touch order: the sweep's address space.
    known: Vec<u64>,
    /// The next page of the sweep.
    cursor: usize,
    /// Extra faults the budget affords and the sweep has not spent yet.
    credit: f64,
    /// The threads' work ([`PolicyCtx::work`]) at the last period.
    work_at: u64,
}

/// The simulated machine as the loop's actuator: pins and moves become the policy's
/// [`Actions`], which the simulator applies (and charges) after the call.
pub struct SimActuator<'c, 'a> {
    ctx: &'c PolicyCtx<'a>,
    out: &'c mut Actions,
}

impl<'c, 'a> SimActuator<'c, 'a> {
    /// Acts on the machine `ctx` describes, into `out`.
    pub fn new(ctx: &'c PolicyCtx<'a>, out: &'c mut Actions) -> Self {
        SimActuator { ctx, out }
    }
}

impl Actuator for SimActuator<'_, '_> {
    fn pin(&mut self, thread: usize, _tid: u32, pu: usize) -> Result<(), ActError> {
        self.out.thread_moves.push((thread as u32, pu));
        Ok(())
    }

    fn locate(&mut self, pages: &[u64]) -> Result<Vec<Option<usize>>, ActError> {
        Ok(pages
            .iter()
            .map(|&a| self.ctx.pages.node_of_addr(a))
            .collect())
    }

    fn move_pages(&mut self, moves: &[(u64, usize)]) -> Result<Vec<Result<(), i32>>, ActError> {
        for &(addr, node) in moves {
            self.out
                .page_moves
                .push((self.ctx.pages.page_of(addr), node));
        }
        Ok(vec![Ok(()); moves.len()])
    }
}

impl Kmaf {
    /// kMAF with `params`, reported as `kmaf`.
    pub fn new(params: KmafParams) -> Kmaf {
        Kmaf::named("kmaf", params)
    }

    /// kMAF with `params`, reported as `name`.
    pub fn named(name: &str, params: KmafParams) -> Kmaf {
        Kmaf {
            name: name.into(),
            params,
            engine: None,
            known: Vec::new(),
            cursor: 0,
            credit: 0.0,
            work_at: 0,
        }
    }

    /// The loop, once the run has started.
    pub fn engine(&self) -> Option<&Engine> {
        self.engine.as_ref()
    }

    /// Thread mappings decided so far.
    pub fn mappings(&self) -> u64 {
        self.engine.as_ref().map_or(0, |e| e.counts().mappings)
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
        self.name.clone()
    }

    fn initial_mapping(&mut self, ctx: &PolicyCtx) -> Vec<usize> {
        let cfg = Config {
            max_threads: ctx.threads,
            seed: self.params.seed,
            ..self.params.config
        };
        // The simulator numbers threads itself: thread t is index t from the start.
        self.engine = Engine::new(ctx.topo, cfg, false).ok().map(|mut e| {
            e.register_threads(&(0..ctx.threads as u32).collect::<Vec<_>>());
            e
        });
        spread(
            &pu_order(ctx.topo, ThreadOrder::Random(self.params.seed)),
            ctx.threads,
        )
    }

    fn on_fault(&mut self, ctx: &PolicyCtx, ev: &FaultEvent, out: &mut Actions) {
        let Some(engine) = self.engine.as_mut() else {
            return;
        };
        if ev.kind == FaultKind::FirstTouch {
            self.known.push(ev.page);
        }
        let pu = ctx.thread_pu[ev.thread as usize];
        let fault = Fault {
            tid: ev.thread,
            addr: ev.addr,
            cpu: ctx.topo.pus[pu].os as u32,
            page_size: 0,
            page_node: Some(ev.page_node as u32),
        };
        // The simulator reports only threads and nodes of the run, which the engine was
        // built for: this cannot fail.
        let _ = engine.ingest(&[fault], &mut SimActuator::new(ctx, out));
    }

    fn on_tick(&mut self, ctx: &PolicyCtx, out: &mut Actions) {
        let Some(engine) = self.engine.as_mut() else {
            return;
        };
        let _ = engine.period(&mut SimActuator::new(ctx, out));
        self.sweep(ctx, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::FastMap;
    use crate::policy::PageView;
    use crate::sim::Pte;
    use crate::{Machine, SimConfig};

    fn paper_greedy() -> KmafParams {
        KmafParams {
            config: Config {
                algorithm: tdmap_map::Algorithm::Greedy,
                ..Config::kmaf_paper()
            },
            ..KmafParams::default()
        }
    }

    /// kMAF §3.3 with the paper's rules: Eq. 6 at the fault moves a page only after the
    /// first thread mapping, then halves its NUMA vector.
    #[test]
    fn pages_move_by_eq6_only_after_the_first_mapping() {
        let topo = tdmap_topo::preset("xeon-x7550-4s").unwrap();
        let machine = Machine::new(&topo, &SimConfig::default()).unwrap();
        let mut table = FastMap::default();
        table.insert(
            5,
            Pte {
                node: 0,
                present: true,
                home: 0,
            },
        );
        let mut k = Kmaf::new(paper_greedy());
        let ctx0 = PolicyCtx {
            topo: &topo,
            machine: &machine,
            threads: 2,
            thread_pu: &[],
            now: 0,
            period: 1,
            work: 0,
            pages: PageView::new(&table, 12, None),
        };
        let pus = k.initial_mapping(&ctx0);
        // Thread 1 runs on a PU of node 2.
        let pus = vec![
            pus[0],
            (0..topo.num_pus())
                .find(|&p| topo.node_of_pu(p) == 2)
                .unwrap(),
        ];
        let ctx = PolicyCtx {
            thread_pu: &pus,
            work: 20_000_000,
            ..ctx0
        };
        let fault = |kind| FaultEvent {
            thread: 1,
            node: 2,
            addr: 0x5000,
            page: 5,
            page_node: 0,
            kind,
        };
        let mut out = Actions::default();
        k.on_fault(&ctx, &fault(FaultKind::FirstTouch), &mut out);
        for _ in 0..4 {
            k.on_fault(&ctx, &fault(FaultKind::Injected), &mut out);
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
        k.on_fault(&ctx, &fault(FaultKind::Injected), &mut out);
        assert_eq!(
            out.page_moves,
            vec![(5, 2)],
            "NV [0,0,6,0]: Eq. 6 says node 2"
        );
        let nv = k.engine().unwrap().monitor().table().nv(0x5000).unwrap();
        assert_eq!(nv, vec![0, 0, 3, 0], "halved after the migration");
    }
}
