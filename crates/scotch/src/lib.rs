//! The one foreign library that is not the kernel or hwloc: libscotch's graph mapping,
//! for the `drb` thread-mapping algorithm of tdmap-map (kMAF §3.4.1). It is a crate of
//! its own so that the mapper reaches Scotch without depending on the syscall layer
//! (tdmap-sys); it is one of the few crates that may use `unsafe`, and its interface is
//! plain slices, so tdmap-map stays pure and forbids `unsafe`. libscotch is opened at
//! the first mapping (`load`), so that processes that do not map with `drb` never load it.

#![deny(clippy::undocumented_unsafe_blocks)]

mod load;

pub use load::library_name;
use load::Api;
use scotch_sys as s;
use std::mem::MaybeUninit;

/// Why Scotch could not map a graph.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScotchError {
    /// The arrays passed in disagree with each other.
    #[error("invalid argument to scotch: {0}")]
    Invalid(&'static str),
    /// A libscotch call returned an error code.
    #[error("invalid argument to {call}: Scotch returned {rc}")]
    Call {
        /// The libscotch function.
        call: &'static str,
        /// Its return code.
        rc: i32,
    },
    /// libscotch could not be opened (it is loaded at the first mapping, not at start).
    #[error("cannot load {lib} for the drb algorithm ({reason}); install it (Debian: apt-get install libscotch-7.0) or choose another algorithm")]
    Missing {
        /// The library's file name.
        lib: String,
        /// dlopen's or dlsym's message.
        reason: String,
    },
}

/// A sharing graph in compressed sparse rows, as Scotch wants it (base 0).
#[derive(Debug, Clone, Default)]
pub struct CsrGraph {
    /// Start of each vertex's neighbours in `adjncy`, `n + 1` entries.
    pub xadj: Vec<i32>,
    /// Neighbour vertices; each edge appears in both directions.
    pub adjncy: Vec<i32>,
    /// Edge weights, one per `adjncy` entry, all positive.
    pub adjwgt: Vec<i32>,
}

/// Maps `graph` onto a tree-leaf architecture with `sizes[l]` children per level
/// (outermost first) and link cost `links[l]` at level `l`, by dual recursive
/// bipartitioning. With `balance`, the strategy asks for strict load balance (0 %).
/// Returns the target leaf (0-based, in tree order) of each vertex.
///
/// The same input and `seed` give the same mapping: the call runs in a Scotch context of
/// its own (Scotch 7's `SCOTCH_Context`) with a private pseudo-random generator seeded by
/// `seed`, the deterministic option on, and one thread. Without it, libscotch's global
/// generator (seeded from the clock unless built with a fixed seed) and its worker
/// threads gave a different mapping on each run of a dense 384-thread graph.
pub fn scotch_map_tleaf(
    graph: &CsrGraph,
    sizes: &[i32],
    links: &[i32],
    balance: bool,
    seed: u64,
) -> Result<Vec<i32>, ScotchError> {
    let n = graph.xadj.len().saturating_sub(1);
    if sizes.is_empty() || sizes.len() != links.len() || graph.adjncy.len() != graph.adjwgt.len() {
        return Err(ScotchError::Invalid(
            "tleaf levels or graph arrays disagree",
        ));
    }
    let parts: i64 = sizes.iter().map(|&x| i64::from(x)).product();
    let mut out = vec![0i32; n];
    if n == 0 {
        return Ok(out);
    }
    let api = load::api()?;
    let mut arch = Arch::tleaf(api, sizes, links)?;
    let graph_h = Graph::build(api, graph)?;
    let mut ctx = Context::seeded(api, seed)?;
    let mut bound = ctx.bind(&graph_h)?;
    let mut strat = Strat::map(api, parts, balance)?;
    // SAFETY: all four objects were initialised by Scotch and outlive the call (`bound`
    // is dropped before `ctx` and `graph_h`); `out` has one slot per graph vertex as
    // SCOTCH_graphMap requires.
    let rc =
        unsafe { (api.SCOTCH_graphMap)(&mut bound.0, &arch.0, &mut strat.0, out.as_mut_ptr()) };
    check(rc, "SCOTCH_graphMap")?;
    drop(bound);
    let _ = &mut arch;
    Ok(out)
}

/// A Scotch 7 execution context: a private random generator and thread pool.
struct Context(Box<s::SCOTCH_Context>, &'static Api);

impl Context {
    /// One thread, deterministic, its own generator seeded by `seed`.
    fn seeded(api: &'static Api, seed: u64) -> Result<Context, ScotchError> {
        let mut raw = Box::new(MaybeUninit::<s::SCOTCH_Context>::uninit());
        // SAFETY: SCOTCH_contextInit only writes the structure behind the pointer, which
        // `raw` owns; it is initialised when the call returns 0.
        let rc = unsafe { (api.SCOTCH_contextInit)(raw.as_mut_ptr()) };
        check(rc, "SCOTCH_contextInit")?;
        // SAFETY: initialised just above; MaybeUninit<T> has T's layout. The box keeps
        // the context at one address, which bound graphs point to.
        let mut ctx = Context(unsafe { Box::from_raw(Box::into_raw(raw).cast()) }, api);
        let det = s::SCOTCH_OPTIONNUMDETERMINISTIC as i32;
        // SAFETY: ctx is initialised; the option index is one Scotch defines.
        let rc = unsafe { (api.SCOTCH_contextOptionSetNum)(&mut *ctx.0, det, 1) };
        check(rc, "SCOTCH_contextOptionSetNum")?;
        // SAFETY: ctx is initialised; this gives it a generator of its own, so that
        // seeding it does not touch (and is not touched by) other callers.
        let rc = unsafe { (api.SCOTCH_contextRandomClone)(&mut *ctx.0) };
        check(rc, "SCOTCH_contextRandomClone")?;
        // Scotch's seed is a 32-bit SCOTCH_Num: fold the 64 bits into it.
        let folded = ((seed ^ (seed >> 32)) & 0x7fff_ffff) as s::SCOTCH_Num;
        // SAFETY: ctx is initialised and owns its generator since the clone.
        unsafe { (api.SCOTCH_contextRandomSeed)(&mut *ctx.0, folded) };
        // SAFETY: ctx is initialised; one thread, no core list.
        let rc = unsafe { (api.SCOTCH_contextThreadSpawn)(&mut *ctx.0, 1, std::ptr::null()) };
        check(rc, "SCOTCH_contextThreadSpawn")?;
        Ok(ctx)
    }

    /// `graph` seen through this context.
    fn bind(&mut self, graph: &Graph) -> Result<Graph, ScotchError> {
        let api = self.1;
        let mut raw = MaybeUninit::<s::SCOTCH_Graph>::uninit();
        // SAFETY: SCOTCH_graphInit only writes the structure behind the pointer.
        let rc = unsafe { (api.SCOTCH_graphInit)(raw.as_mut_ptr()) };
        check(rc, "SCOTCH_graphInit")?;
        // SAFETY: initialised just above.
        let mut bound = Graph(unsafe { raw.assume_init() }, api);
        // SAFETY: both the context and the source graph are initialised and outlive the
        // bound graph in scotch_map_tleaf.
        let rc = unsafe { (api.SCOTCH_contextBindGraph)(&mut *self.0, &graph.0, &mut bound.0) };
        check(rc, "SCOTCH_contextBindGraph")?;
        Ok(bound)
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: the context was initialised by SCOTCH_contextInit.
        unsafe { (self.1.SCOTCH_contextExit)(&mut *self.0) }
    }
}

fn check(rc: i32, call: &'static str) -> Result<(), ScotchError> {
    if rc == 0 {
        Ok(())
    } else {
        Err(ScotchError::Call { call, rc })
    }
}

struct Arch(s::SCOTCH_Arch, &'static Api);

impl Arch {
    fn tleaf(api: &'static Api, sizes: &[i32], links: &[i32]) -> Result<Arch, ScotchError> {
        let mut raw = MaybeUninit::<s::SCOTCH_Arch>::uninit();
        // SAFETY: SCOTCH_archInit only writes the structure behind the pointer, which
        // `raw` owns; it is initialised when the call returns 0.
        let rc = unsafe { (api.SCOTCH_archInit)(raw.as_mut_ptr()) };
        check(rc, "SCOTCH_archInit")?;
        // SAFETY: initialised just above.
        let mut arch = Arch(unsafe { raw.assume_init() }, api);
        let levels = sizes.len() as s::SCOTCH_Num;
        // SAFETY: both arrays hold `levels` entries and Scotch copies them.
        let rc =
            unsafe { (api.SCOTCH_archTleaf)(&mut arch.0, levels, sizes.as_ptr(), links.as_ptr()) };
        check(rc, "SCOTCH_archTleaf")?;
        Ok(arch)
    }
}

impl Drop for Arch {
    fn drop(&mut self) {
        // SAFETY: the architecture was initialised by SCOTCH_archInit.
        unsafe { (self.1.SCOTCH_archExit)(&mut self.0) }
    }
}

struct Graph(s::SCOTCH_Graph, &'static Api);

impl Graph {
    fn build(api: &'static Api, g: &CsrGraph) -> Result<Graph, ScotchError> {
        let mut raw = MaybeUninit::<s::SCOTCH_Graph>::uninit();
        // SAFETY: SCOTCH_graphInit only writes the structure behind the pointer, which
        // `raw` owns; it is initialised when the call returns 0.
        let rc = unsafe { (api.SCOTCH_graphInit)(raw.as_mut_ptr()) };
        check(rc, "SCOTCH_graphInit")?;
        // SAFETY: initialised just above.
        let mut graph = Graph(unsafe { raw.assume_init() }, api);
        let n = (g.xadj.len() - 1) as s::SCOTCH_Num;
        let edges = g.adjncy.len() as s::SCOTCH_Num;
        // SAFETY: xadj has n+1 entries, adjncy and adjwgt `edges` entries; Scotch keeps
        // pointers to them, and `g` outlives the graph because both live in
        // scotch_map_tleaf's frame and the graph is dropped first.
        let rc = unsafe {
            (api.SCOTCH_graphBuild)(
                &mut graph.0,
                0,
                n,
                g.xadj.as_ptr(),
                std::ptr::null(),
                std::ptr::null(),
                std::ptr::null(),
                edges,
                g.adjncy.as_ptr(),
                g.adjwgt.as_ptr(),
            )
        };
        check(rc, "SCOTCH_graphBuild")?;
        Ok(graph)
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: the graph was initialised by SCOTCH_graphInit.
        unsafe { (self.1.SCOTCH_graphExit)(&mut self.0) }
    }
}

struct Strat(s::SCOTCH_Strat, &'static Api);

impl Strat {
    fn map(api: &'static Api, parts: i64, balance: bool) -> Result<Strat, ScotchError> {
        let mut raw = MaybeUninit::<s::SCOTCH_Strat>::uninit();
        // SAFETY: SCOTCH_stratInit only writes the structure behind the pointer, which
        // `raw` owns; it is initialised when the call returns 0.
        let rc = unsafe { (api.SCOTCH_stratInit)(raw.as_mut_ptr()) };
        check(rc, "SCOTCH_stratInit")?;
        // SAFETY: initialised just above.
        let mut strat = Strat(unsafe { raw.assume_init() }, api);
        if balance {
            let flags = (s::SCOTCH_STRATQUALITY | s::SCOTCH_STRATBALANCE) as s::SCOTCH_Num;
            // SAFETY: strat is initialised; the strategy string is built by Scotch.
            let rc = unsafe {
                (api.SCOTCH_stratGraphMapBuild)(&mut strat.0, flags, parts as s::SCOTCH_Num, 0.0)
            };
            check(rc, "SCOTCH_stratGraphMapBuild")?;
        }
        Ok(strat)
    }
}

impl Drop for Strat {
    fn drop(&mut self) {
        // SAFETY: the strategy was initialised by SCOTCH_stratInit.
        unsafe { (self.1.SCOTCH_stratExit)(&mut self.0) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_pairs() -> CsrGraph {
        // 0-1 and 2-3 share heavily, the rest lightly.
        let w = |a: usize, b: usize| if a / 2 == b / 2 { 100 } else { 1 };
        let mut g = CsrGraph::default();
        g.xadj.push(0);
        for a in 0..4 {
            for b in 0..4 {
                if a != b {
                    g.adjncy.push(b as i32);
                    g.adjwgt.push(w(a, b));
                }
            }
            g.xadj.push(g.adjncy.len() as i32);
        }
        g
    }

    #[test]
    fn pairs_land_under_the_same_package() {
        let map = scotch_map_tleaf(&two_pairs(), &[2, 2], &[2, 1], true, 1).unwrap();
        assert_eq!(map[0] / 2, map[1] / 2, "{map:?}");
        assert_eq!(map[2] / 2, map[3] / 2, "{map:?}");
        assert_ne!(map[0] / 2, map[2] / 2, "{map:?}");
    }

    #[test]
    fn mismatched_levels_are_rejected() {
        assert!(scotch_map_tleaf(&two_pairs(), &[2, 2], &[1], false, 1).is_err());
    }
}
