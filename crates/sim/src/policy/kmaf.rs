//! kMAF (kmaf-pact14.txt §3): the online mechanism of `tdmap run`, driven by the
//! simulated page faults. Every fault (the first touch of a page, and the extra faults
//! injected each period, §3.1.2) feeds the affinity table and sharing matrix of
//! `tdmap-sharing` (§3.2); the page then migrates by Eq. 6 with its NUMA vector halved
//! (§3.3), but only once threads were mapped for the first time; every period (100 ms,
//! §3.4) `tdmap-map` maps the threads from the matrix, which is then aged ×0.75 (§3.4.2),
//! and the present bit of every page is cleared so that the next access to each faults.

use super::basic::{pu_order, spread, ThreadOrder};
use super::{Actions, FaultEvent, Policy, PolicyCtx};
use tdmap_map::{Algorithm, Distance};
use tdmap_sharing::{migration_target, Metric, SharingModel, TableConfig};

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
}

impl Default for KmafParams {
    fn default() -> Self {
        KmafParams {
            seed: 1,
            algorithm: Algorithm::Greedy,
            remap_gain: 0.05,
        }
    }
}

/// The kMAF policy.
pub struct Kmaf {
    params: KmafParams,
    model: Option<SharingModel>,
    mapped: bool,
    mappings: u64,
}

impl Kmaf {
    /// kMAF with `params`.
    pub fn new(params: KmafParams) -> Kmaf {
        Kmaf {
            params,
            model: None,
            mapped: false,
            mappings: 0,
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
        let kind = if ctx.topo.latencies.is_some() {
            Distance::Latency
        } else {
            Distance::Hops
        };
        let old_cost = tdmap_map::cost(ctx.topo, m, n, ctx.thread_pu, kind).ok()?;
        let new_cost = tdmap_map::cost(ctx.topo, m, n, &new, kind).ok()?;
        (new_cost < old_cost * (1.0 - self.params.remap_gain)).then_some(new)
    }
}

impl Policy for Kmaf {
    fn name(&self) -> String {
        "kmaf".into()
    }

    fn initial_mapping(&mut self, ctx: &PolicyCtx) -> Vec<usize> {
        let cfg = TableConfig::page_faults(ctx.machine.nodes());
        self.model = SharingModel::new(cfg, ctx.threads, &[]).ok();
        spread(
            &pu_order(ctx.topo, ThreadOrder::Random(self.params.seed)),
            ctx.threads,
        )
    }

    fn on_fault(&mut self, _ctx: &PolicyCtx, ev: &FaultEvent, out: &mut Actions) {
        let Some(model) = self.model.as_mut() else {
            return;
        };
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
        let m = model.matrix(Metric::Accesses).to_f64_rows();
        if let Some(new) = self.remap(ctx, &m) {
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
        out.inject_faults = true; // kMAF §3.1.2: extra faults on every page
    }
}
