//! The baseline policies: the OS scheduler model (`os`), the static thread orders
//! (`compact`, `scatter`, `random`), interleaved pages (`interleave`), and a fixed
//! mapping given from outside (the seam for the oracle and for `crates/map`).

use super::{Actions, Policy, PolicyCtx};
use crate::hash::FastMap;
use crate::rng::SplitMix64;
use tdmap_topo::Topology;

/// How a static policy orders PUs before giving them to threads 0, 1, 2, ...
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadOrder {
    /// Logical PU order: fill a core, then a package, then the next package.
    Compact,
    /// One PU per package in turn, then per core: spread over the whole machine.
    Scatter,
    /// A seeded random permutation.
    Random(u64),
}

/// Where pages go on their first touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PagePlacement {
    /// On the node of the touching thread (Linux's default).
    FirstTouch,
    /// Round-robin over the nodes by page number (`numactl --interleave=all`).
    Interleave,
    /// A seeded random node per page (kMAF §4.2's random mapping: "random mappings of
    /// threads to cores and memory pages to NUMA nodes").
    Random(u64),
}

impl PagePlacement {
    fn place(self, page: u64, node: usize, nodes: usize) -> usize {
        match self {
            PagePlacement::FirstTouch => node,
            PagePlacement::Interleave => (page % nodes.max(1) as u64) as usize,
            PagePlacement::Random(seed) => {
                // One draw per page, the same whichever thread touches it first.
                let mut rng = SplitMix64::new(seed ^ page.wrapping_mul(0x9e37_79b9_7f4a_7c15));
                rng.below(nodes.max(1))
            }
        }
    }
}

/// The PUs in an order; thread `i` gets `order[i % len]`.
pub fn pu_order(topo: &Topology, order: ThreadOrder) -> Vec<usize> {
    let mut pus: Vec<usize> = (0..topo.num_pus()).collect();
    match order {
        ThreadOrder::Compact => {}
        ThreadOrder::Scatter => {
            let keys = tree_ranks(topo);
            // Deepest rank first: PU 0 of every core of every package before any sibling.
            pus.sort_by_key(|&p| {
                let mut k = keys[p].clone();
                k.reverse();
                k
            });
        }
        ThreadOrder::Random(seed) => SplitMix64::new(seed).shuffle(&mut pus),
    }
    pus
}

/// For each PU, its rank among its siblings at every level below the machine.
fn tree_ranks(topo: &Topology) -> Vec<Vec<usize>> {
    let mut ranks = vec![Vec::new(); topo.num_pus()];
    for l in 1..topo.levels.len() {
        let (up, down) = (&topo.levels[l - 1], &topo.levels[l]);
        let mut seen: FastMap<usize, usize> = FastMap::default();
        let mut children: FastMap<usize, usize> = FastMap::default();
        for (p, r) in ranks.iter_mut().enumerate() {
            let g = down.group_of_pu[p];
            let rank = *seen.entry(g).or_insert_with(|| {
                let c = children.entry(up.group_of_pu[p]).or_insert(0);
                *c += 1;
                *c - 1
            });
            r.push(rank);
        }
    }
    ranks
}

pub(crate) fn spread(order: &[usize], threads: usize) -> Vec<usize> {
    if order.is_empty() {
        return Vec::new(); // the simulator reports the missing mapping
    }
    (0..threads).map(|t| order[t % order.len()]).collect()
}

/// A static thread order with a page placement: `compact`, `scatter` (first touch),
/// `random` (random threads and random page homes).
#[derive(Debug, Clone)]
pub struct StaticPolicy {
    name: String,
    order: ThreadOrder,
    pages: PagePlacement,
}

impl StaticPolicy {
    /// A static policy.
    pub fn new(name: &str, order: ThreadOrder, pages: PagePlacement) -> Self {
        StaticPolicy {
            name: name.to_string(),
            order,
            pages,
        }
    }
}

impl Policy for StaticPolicy {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn initial_mapping(&mut self, ctx: &PolicyCtx) -> Vec<usize> {
        spread(&pu_order(ctx.topo, self.order), ctx.threads)
    }

    fn first_touch_mapping(&self, ctx: &PolicyCtx) -> Option<Vec<usize>> {
        matches!(self.pages, PagePlacement::FirstTouch)
            .then(|| spread(&pu_order(ctx.topo, self.order), ctx.threads))
    }

    fn static_mapping(&self, ctx: &PolicyCtx) -> Option<Vec<usize>> {
        Some(spread(&pu_order(ctx.topo, self.order), ctx.threads))
    }

    fn place_page(&mut self, ctx: &PolicyCtx, _t: u32, page: u64, node: usize) -> usize {
        self.pages.place(page, node, ctx.machine.nodes())
    }
}

/// Linux without affinity, as modelled here (sources in `crates/sim/README.md`): new
/// threads go to the idlest package and to idle cores before SMT siblings, so they are
/// spread and balanced over the packages (the PUs `scatter` would use), but nothing ties
/// which thread gets which of those PUs: a seeded shuffle decides. Occasional migrations,
/// `migrations_per_sec` per thread and simulated second on average, decided at each tick:
/// a thread moves to a random PU, swapping with the thread there if any; a move to an
/// idle PU of another package happens only if it leaves the packages no less balanced.
/// The rate is in simulated time, so a policy period shortened for a short trace does
/// not make the OS migrate more. Pages follow `pages` (first touch for `os`, round-robin
/// for `interleave`).
#[derive(Debug, Clone)]
pub struct OsPolicy {
    name: String,
    rng: SplitMix64,
    seed: u64,
    /// Expected load-balancer migrations per thread and simulated second.
    pub migrations_per_sec: f64,
    pages: PagePlacement,
}

impl OsPolicy {
    /// The default rate: a 5 % chance per thread and 100 ms.
    pub const MIGRATIONS_PER_SEC: f64 = 0.5;

    /// The OS model with a seed and a page placement.
    pub fn new(name: &str, seed: u64, pages: PagePlacement) -> Self {
        OsPolicy {
            name: name.to_string(),
            rng: SplitMix64::new(seed ^ 0x05),
            seed,
            migrations_per_sec: Self::MIGRATIONS_PER_SEC,
            pages,
        }
    }
}

impl Policy for OsPolicy {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn initial_mapping(&mut self, ctx: &PolicyCtx) -> Vec<usize> {
        let mut pus = spread(&pu_order(ctx.topo, ThreadOrder::Scatter), ctx.threads);
        SplitMix64::new(self.seed).shuffle(&mut pus);
        pus
    }

    /// It acts only at ticks, from its random numbers and the threads' PUs.
    fn quiet_mapping(&self, ctx: &PolicyCtx) -> Option<Vec<usize>> {
        Some(self.clone().initial_mapping(ctx))
    }

    fn place_page(&mut self, ctx: &PolicyCtx, _t: u32, page: u64, node: usize) -> usize {
        self.pages.place(page, node, ctx.machine.nodes())
    }

    fn on_tick(&mut self, ctx: &PolicyCtx, out: &mut Actions) {
        let mut pus = ctx.thread_pu.to_vec();
        let p = (self.migrations_per_sec * ctx.period_secs()).min(1.0);
        let pkg = |pu: usize| ctx.topo.pus[pu].package;
        for t in 0..ctx.threads {
            if self.rng.unit() >= p {
                continue;
            }
            let dest = self.rng.below(ctx.machine.pus());
            if dest == pus[t] {
                continue;
            }
            if let Some(other) = pus.iter().position(|&p| p == dest) {
                pus[other] = pus[t];
                out.thread_moves.push((other as u32, pus[t]));
            } else if pkg(dest) != pkg(pus[t]) {
                let on = |k: usize| pus.iter().filter(|&&q| pkg(q) == k).count();
                if on(pkg(dest)) + 1 > on(pkg(pus[t])) {
                    continue; // the balancer would only pull it back
                }
            }
            pus[t] = dest;
            out.thread_moves.push((t as u32, dest));
        }
    }
}

/// A mapping decided outside the simulator: a PU per thread, and optionally a node per
/// page (pages not listed are placed by first touch). The oracle, and any mapping from
/// `crates/map`, enter the simulator through this.
#[derive(Debug, Clone)]
pub struct Fixed {
    name: String,
    mapping: Vec<usize>,
    pages: FastMap<u64, usize>,
}

impl Fixed {
    /// A fixed thread mapping, pages by first touch.
    pub fn new(name: &str, mapping: Vec<usize>) -> Self {
        Fixed {
            name: name.to_string(),
            mapping,
            pages: FastMap::default(),
        }
    }

    /// Adds page homes (page number, node).
    pub fn with_pages(mut self, pages: impl IntoIterator<Item = (u64, usize)>) -> Self {
        self.pages.extend(pages);
        self
    }
}

impl Policy for Fixed {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn initial_mapping(&mut self, ctx: &PolicyCtx) -> Vec<usize> {
        spread(&self.mapping, ctx.threads)
    }

    /// Page homes are first touch too when every thread runs on one node and every home
    /// is that node: the touching thread's node is then always the listed one.
    fn first_touch_mapping(&self, ctx: &PolicyCtx) -> Option<Vec<usize>> {
        let mapping = spread(&self.mapping, ctx.threads);
        let node = |pu: usize| ctx.machine.node_of_pu.get(pu).copied();
        let first = node(*mapping.first()?)?;
        let one_node = mapping.iter().all(|&pu| node(pu) == Some(first));
        let homes_agree = self.pages.values().all(|&n| n == first);
        (self.pages.is_empty() || one_node && homes_agree).then_some(mapping)
    }

    fn static_mapping(&self, ctx: &PolicyCtx) -> Option<Vec<usize>> {
        Some(spread(&self.mapping, ctx.threads))
    }

    fn place_page(&mut self, _ctx: &PolicyCtx, _t: u32, page: u64, node: usize) -> usize {
        self.pages.get(&page).copied().unwrap_or(node)
    }
}

/// The policies that need nothing but a seed, by the names the command line uses.
pub struct ByName;

impl ByName {
    /// Names [`ByName::build`] knows.
    pub const NAMES: &'static [&'static str] = &[
        "os",
        "compact",
        "scatter",
        "random",
        "interleave",
        "sammu",
        "sammu-greedy",
        "numa-balancing",
        "kmaf",
        "kmaf-paper",
        "kmaf-threads",
        "kmaf-data",
    ];

    /// Builds a policy by name, or `None` for an unknown name.
    pub fn build(name: &str, seed: u64) -> Option<Box<dyn Policy>> {
        let ft = PagePlacement::FirstTouch;
        Some(match name {
            "os" => Box::new(OsPolicy::new("os", seed, ft)),
            "interleave" => Box::new(OsPolicy::new("interleave", seed, PagePlacement::Interleave)),
            "compact" => Box::new(StaticPolicy::new(name, ThreadOrder::Compact, ft)),
            "scatter" => Box::new(StaticPolicy::new(name, ThreadOrder::Scatter, ft)),
            "random" => Box::new(StaticPolicy::new(
                name,
                ThreadOrder::Random(seed),
                PagePlacement::Random(seed),
            )),
            "sammu" => Box::new(super::Sammu::new(super::SammuParams {
                seed,
                ..Default::default()
            })),
            "sammu-greedy" => Box::new(super::Sammu::named(
                "sammu-greedy",
                super::SammuParams::greedy(seed),
            )),
            "numa-balancing" => Box::new(super::NumaBalancing::new(seed)),
            "kmaf" | "kmaf-paper" | "kmaf-threads" | "kmaf-data" => {
                let run = tdmap_monitor::Config::default();
                let config = match name {
                    "kmaf-paper" => tdmap_monitor::Config::kmaf_paper(),
                    "kmaf-threads" => run.threads_only(),
                    "kmaf-data" => run.data_only(),
                    _ => run,
                };
                let params = super::KmafParams {
                    seed,
                    config,
                    ..Default::default()
                };
                Box::new(super::Kmaf::named(name, params))
            }
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_fills_cores_scatter_spreads_over_packages() {
        let t = tdmap_topo::preset("xeon-x7550-4s").unwrap();
        let c = pu_order(&t, ThreadOrder::Compact);
        assert_eq!(t.pus[c[0]].core, t.pus[c[1]].core, "SMT siblings first");
        let s = pu_order(&t, ThreadOrder::Scatter);
        let pkgs: Vec<usize> = s[..4].iter().map(|&p| t.pus[p].package).collect();
        assert_eq!(pkgs, vec![0, 1, 2, 3]);
        let cores: std::collections::HashSet<usize> =
            s[..32].iter().map(|&p| t.pus[p].core).collect();
        assert_eq!(
            cores.len(),
            32,
            "no SMT sibling before every core has one thread"
        );
        let mut r = pu_order(&t, ThreadOrder::Random(7));
        assert_ne!(r, c);
        r.sort();
        assert_eq!(r, c, "a permutation");
    }

    #[test]
    fn interleave_places_pages_round_robin() {
        assert_eq!(PagePlacement::Interleave.place(6, 3, 4), 2);
        assert_eq!(PagePlacement::FirstTouch.place(6, 3, 4), 3);
    }
}
