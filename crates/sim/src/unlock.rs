//! A lane that leaves its lockstep group (`lockstep`): one of its quiet policies asked
//! for something at a tick, so from that access on it replays as a simulator of its own
//! (a shared one if the lane holds several policies, which then splits as `fork` does).

use super::{Overhead, Pte, Simulator, ThreadAt};
use crate::config::SimConfig;
use crate::hash::FastMap;
use crate::machine::Machine;
use crate::memsys::MemSys;
use crate::policy::Actions;
use crate::shared::Follower;
use crate::tlb::Tlb;
use tdmap_topo::Topology;

/// What a lane's replay holds when it leaves its group, banks already on cores.
pub(crate) struct LaneState<'t> {
    pub(crate) topo: &'t Topology,
    pub(crate) machine: Machine,
    pub(crate) cfg: SimConfig,
    pub(crate) period: u64,
    pub(crate) mem: MemSys,
    pub(crate) tlbs: Tlb,
    /// Each touched page's row in the lane's homes.
    pub(crate) rows: Vec<(u64, u32)>,
    pub(crate) thread_pu: Vec<usize>,
    pub(crate) started: Vec<bool>,
    pub(crate) accesses: u64,
    pub(crate) tlb_misses: u64,
    pub(crate) faults: u64,
    /// The lead policy first.
    pub(crate) policies: Vec<Follower>,
}

impl<'t> Simulator<'t> {
    /// The lane's replay, at the end of the access under way (charged to thread
    /// `charge`), as a simulator of its own that has done what its policies asked for;
    /// the followers that split from it are in [`Simulator::take_forks`].
    pub(crate) fn from_lane(lane: LaneState<'t>, charge: usize) -> Simulator<'t> {
        let mut policies = lane.policies.into_iter();
        let lead = policies.next().expect("a lane has a policy");
        let homes = lane.mem.outer.homes.as_ref().expect("a lane has homes");
        let pages: FastMap<u64, Pte> = lane
            .rows
            .iter()
            .map(|&(page, row)| {
                let node = homes.node(row as usize, 0) as u16;
                let pte = Pte {
                    node,
                    present: true,
                    home: row,
                };
                (page, pte)
            })
            .collect();
        let (policy, time, acted) = lead.into_parts();
        let mut s = Simulator {
            topo: lane.topo,
            tlb_events: policy.wants_tlb_events(),
            access_events: policy.wants_accesses(),
            policy,
            mem: lane.mem,
            tlbs: lane.tlbs,
            pages,
            node_of_core: super::node_of_core(&lane.machine),
            at: vec![ThreadAt::default(); lane.thread_pu.len()],
            thread_pu: lane.thread_pu,
            clocks: time.clocks,
            start_sum: time.start_sum,
            now: time.now,
            period: lane.period,
            next_tick: time.next_tick,
            page_shift: lane.cfg.page_size.trailing_zeros(),
            data_bytes: lane.cfg.data_bytes,
            line_shift: lane.machine.line.trailing_zeros(),
            actions: Actions::default(),
            accesses: lane.accesses,
            tlb_misses: lane.tlb_misses,
            faults: lane.faults,
            overhead: Overhead {
                fault_cycles: lane.faults * lane.cfg.costs.fault,
                ..Overhead::default()
            },
            thread_migrations: 0,
            page_migrations: 0,
            ticks: time.ticks,
            followers: policies.collect(),
            forks: Vec::new(),
            machine: lane.machine,
            cfg: lane.cfg,
        };
        for (t, &started) in lane.started.iter().enumerate() {
            s.place_thread(t, s.thread_pu[t]);
            s.at[t].started = started;
        }
        // The followers go on alone, each having done what it asked for; this one too,
        // its page homes now nodes.
        s.split(charge);
        if let Some(out) = acted {
            s.act(out, charge);
        }
        s
    }
}
