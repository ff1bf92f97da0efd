//! best-static's plan (`tdmap sim`'s one pass): its candidates set beside the other
//! policies of the run, each distinct replay run once, and the winner picked from the
//! reports.

use super::best_static::{BestStatic, Candidate, Knowledge};
use super::{Policy, PolicyCtx};
use crate::{SimConfig, SimReport};
use tdmap_topo::Topology;

/// best-static's candidates set beside other policies, to be replayed in the same pass
/// (one decoding of the trace, the policies on parallel threads): a static candidate
/// that the list already holds is replayed once, for both.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Every candidate, with the index of its policy in the list.
    candidates: Vec<(Candidate, usize)>,
}

impl Plan {
    /// Appends to `policies` the candidates it does not hold yet. A policy of the list
    /// named like a static candidate (`os`, `compact`, ...) stands for it, so it must be
    /// that policy of [`super::ByName`] with `cfg`'s seed, as `tdmap sim` builds it. A
    /// candidate that is only a thread mapping with first-touch pages, the same as a
    /// policy already in the list ([`Policy::first_touch_mapping`]), shares that policy's
    /// replay: the `compact` and `scatter` algorithms give the named policies' mappings,
    /// and `+homes` on threads of one node is first touch (on four workload traces at 8
    /// threads, 6 or 7 of 14 mapping candidates were such duplicates).
    pub fn new(
        knowledge: &Knowledge,
        topo: &Topology,
        cfg: &SimConfig,
        policies: &mut Vec<Box<dyn Policy>>,
    ) -> Plan {
        let machine = crate::Machine::new(topo, cfg).ok();
        let threads = knowledge.profile.threads;
        let key = |p: &dyn Policy| {
            let m = machine.as_ref()?;
            let ctx = PolicyCtx::before_run(topo, m, threads);
            p.first_touch_mapping(&ctx)
        };
        let mut keys: Vec<Option<Vec<usize>>> = policies.iter().map(|p| key(p.as_ref())).collect();
        let candidates = knowledge
            .candidates(topo, cfg.seed)
            .into_iter()
            .map(|c| {
                let named = match &c {
                    Candidate::Named(n) => policies.iter().position(|p| p.name() == *n),
                    Candidate::Mapping { .. } => None,
                };
                let at = named.unwrap_or_else(|| {
                    let p = knowledge.policy(topo, cfg, &c);
                    let k = key(p.as_ref());
                    let same = k
                        .as_ref()
                        .and_then(|k| keys.iter().position(|x| x.as_ref() == Some(k)));
                    same.unwrap_or_else(|| {
                        policies.push(p);
                        keys.push(k);
                        policies.len() - 1
                    })
                });
                (c, at)
            })
            .collect();
        Plan { candidates }
    }

    /// The fastest candidate (the first of equals), from the replays of the whole list.
    pub fn pick(self, knowledge: Knowledge, reports: &[SimReport]) -> BestStatic {
        let tried: Vec<(Candidate, SimReport)> = self
            .candidates
            .into_iter()
            .map(|(c, at)| {
                let mut r = reports[at].clone();
                r.policy = c.label();
                (c, r)
            })
            .collect();
        let best = (0..tried.len())
            .min_by_key(|&i| (tried[i].1.cycles_max, i))
            .expect("the static policies are always candidates");
        BestStatic {
            knowledge,
            tried,
            best,
        }
    }
}
