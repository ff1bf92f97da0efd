//! Static data-mapping policies as pure functions page → node: first-touch, interleave
//! and bind as Linux offers them, and the eight MAi policies of Minas (§3.1): cyclic,
//! cyclic_block, skew_mapp, prime_mapp, random, bind_block and bind_all. `page` is the
//! page's index within its array (or region) and `m` the number of memory nodes.

use crate::rng::hash_below;
use crate::MapError;

/// MAi cyclic: round-robin, one page per round.
pub fn cyclic(page: usize, m: usize) -> usize {
    page % m
}

/// Cyclic by blocks of `block` pages (MAi's tile distribution).
pub fn cyclic_block(page: usize, m: usize, block: usize) -> usize {
    (page / block.max(1)) % m
}

/// MAi skew_mapp: page i on node (i + ⌊i/M⌋ + 1) mod M (Minas §3.1).
pub fn skew_mapp(page: usize, m: usize) -> usize {
    // Minas §3.1, skew_mapp formula
    (page + page / m + 1) % m
}

/// The smallest prime ≥ `m`: the number of virtual nodes prime_mapp uses by default.
pub fn prime_at_least(m: usize) -> usize {
    let is_prime = |p: usize| {
        p >= 2
            && (2..)
                .take_while(|d| d * d <= p)
                .all(|d| !p.is_multiple_of(d))
    };
    (m.max(2)..)
        .find(|&p| is_prime(p))
        .expect("primes are unbounded")
}

/// MAi prime_mapp: cyclic over `p` ≥ M virtual nodes (p prime), then the virtual nodes
/// folded cyclically onto the M real ones (Minas §3.1).
pub fn prime_mapp(page: usize, m: usize, p: usize) -> usize {
    // Minas §3.1: phase 1 cyclic on P virtual banks, phase 2 cyclic onto M real banks.
    let virtual_node = page % p.max(m);
    virtual_node % m
}

/// MAi random: a uniformly random node, the same for the same page and seed.
pub fn random(page: usize, m: usize, seed: u64) -> usize {
    hash_below(seed, page as u64, m)
}

/// MAi bind_block: the `pages` pages split into one contiguous block per thread, each
/// block on the node of its thread (`thread_node[t]`).
pub fn bind_block(page: usize, pages: usize, thread_node: &[usize]) -> usize {
    let t = thread_node.len();
    let owner = (page * t / pages.max(1)).min(t - 1);
    thread_node[owner]
}

/// MAi bind_all: every page on the given set of nodes, spread cyclically within it.
pub fn bind_all(page: usize, nodes: &[usize]) -> usize {
    nodes[page % nodes.len()]
}

/// Linux interleave over a node set (numactl --interleave).
pub fn interleave(page: usize, nodes: &[usize]) -> usize {
    nodes[page % nodes.len()]
}

/// A static policy with its parameters, to evaluate page by page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Policy {
    /// The node of the thread that touches the page first.
    FirstTouch,
    /// Round-robin over these nodes.
    Interleave(Vec<usize>),
    /// Everything on one node.
    Bind(usize),
    /// MAi cyclic.
    Cyclic,
    /// MAi cyclic by blocks of this many pages.
    CyclicBlock(usize),
    /// MAi skew_mapp.
    SkewMapp,
    /// MAi prime_mapp with this many virtual nodes (0: the smallest prime ≥ M).
    PrimeMapp(usize),
    /// MAi random with this seed.
    Random(u64),
    /// MAi bind_block over threads placed on these nodes.
    BindBlock(Vec<usize>),
    /// MAi bind_all on these nodes.
    BindAll(Vec<usize>),
}

/// What a policy may need to know about a page besides its index.
#[derive(Debug, Clone, Copy)]
pub struct PageCtx {
    /// Number of memory nodes.
    pub nodes: usize,
    /// Pages in the array or region.
    pub pages: usize,
    /// Node of the thread that touched the page first (for first-touch).
    pub first_toucher_node: usize,
}

impl Policy {
    /// The node of page `page`.
    pub fn node_of(&self, page: usize, ctx: &PageCtx) -> usize {
        let m = ctx.nodes;
        match self {
            Policy::FirstTouch => ctx.first_toucher_node,
            Policy::Interleave(nodes) => interleave(page, nodes),
            Policy::Bind(node) => *node,
            Policy::Cyclic => cyclic(page, m),
            Policy::CyclicBlock(b) => cyclic_block(page, m, *b),
            Policy::SkewMapp => skew_mapp(page, m),
            Policy::PrimeMapp(0) => prime_mapp(page, m, prime_at_least(m)),
            Policy::PrimeMapp(p) => prime_mapp(page, m, *p),
            Policy::Random(seed) => random(page, m, *seed),
            Policy::BindBlock(tn) => bind_block(page, ctx.pages, tn),
            Policy::BindAll(nodes) => bind_all(page, nodes),
        }
    }

    /// Parses a name with default parameters on `nodes` nodes (all nodes for sets).
    pub fn parse(name: &str, nodes: usize) -> Result<Policy, MapError> {
        let all: Vec<usize> = (0..nodes).collect();
        Ok(match name {
            "first-touch" | "first_touch" => Policy::FirstTouch,
            "interleave" => Policy::Interleave(all),
            "bind" => Policy::Bind(0),
            "cyclic" => Policy::Cyclic,
            "cyclic_block" | "cyclic-block" => Policy::CyclicBlock(1),
            "skew_mapp" | "skew-mapp" => Policy::SkewMapp,
            "prime_mapp" | "prime-mapp" => Policy::PrimeMapp(0),
            "random" => Policy::Random(0),
            "bind_block" | "bind-block" => Policy::BindBlock(all),
            "bind_all" | "bind-all" => Policy::BindAll(vec![0]),
            _ => return Err(MapError::UnknownPolicy(name.to_string())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seq(f: impl Fn(usize) -> usize, pages: usize) -> Vec<usize> {
        (0..pages).map(f).collect()
    }

    #[test]
    fn cyclic_and_cyclic_block() {
        assert_eq!(seq(|i| cyclic(i, 3), 7), vec![0, 1, 2, 0, 1, 2, 0]);
        assert_eq!(
            seq(|i| cyclic_block(i, 2, 3), 8),
            vec![0, 0, 0, 1, 1, 1, 0, 0]
        );
    }

    #[test]
    fn skew_mapp_matches_the_formula() {
        // M = 4: (i + floor(i/4) + 1) mod 4, by hand.
        assert_eq!(
            seq(|i| skew_mapp(i, 4), 12),
            vec![1, 2, 3, 0, 2, 3, 0, 1, 3, 0, 1, 2]
        );
        // M = 3.
        assert_eq!(seq(|i| skew_mapp(i, 3), 7), vec![1, 2, 0, 2, 0, 1, 0]);
    }

    #[test]
    fn prime_mapp_is_cyclic_on_p_virtual_nodes_folded_onto_m() {
        assert_eq!(prime_at_least(4), 5);
        assert_eq!(prime_at_least(7), 7);
        assert_eq!(prime_at_least(8), 11);
        // M = 4, P = 5: virtual 0 1 2 3 4 0 1 2 3 4 -> real 0 1 2 3 0 0 1 2 3 0.
        assert_eq!(
            seq(|i| prime_mapp(i, 4, 5), 10),
            vec![0, 1, 2, 3, 0, 0, 1, 2, 3, 0]
        );
        // M = 3, P = 7.
        assert_eq!(
            seq(|i| prime_mapp(i, 3, 7), 8),
            vec![0, 1, 2, 0, 1, 2, 0, 0]
        );
        let ctx = PageCtx {
            nodes: 4,
            pages: 10,
            first_toucher_node: 2,
        };
        assert_eq!(Policy::PrimeMapp(0).node_of(9, &ctx), 0);
    }

    #[test]
    fn bind_policies() {
        // 8 pages, 4 threads on nodes 1,1,0,0: blocks of two pages.
        let tn = [1, 1, 0, 0];
        assert_eq!(
            seq(|i| bind_block(i, 8, &tn), 8),
            vec![1, 1, 1, 1, 0, 0, 0, 0]
        );
        assert_eq!(seq(|i| bind_all(i, &[2]), 3), vec![2, 2, 2]);
        assert_eq!(seq(|i| bind_all(i, &[1, 3]), 3), vec![1, 3, 1]);
        assert_eq!(seq(|i| interleave(i, &[0, 2]), 3), vec![0, 2, 0]);
        let ctx = PageCtx {
            nodes: 4,
            pages: 8,
            first_toucher_node: 2,
        };
        assert_eq!(Policy::FirstTouch.node_of(5, &ctx), 2);
        assert_eq!(Policy::Bind(3).node_of(5, &ctx), 3);
    }

    #[test]
    fn random_is_uniform_enough_and_seeded() {
        let a = seq(|i| random(i, 4, 1), 4000);
        assert_eq!(a, seq(|i| random(i, 4, 1), 4000));
        assert_ne!(a, seq(|i| random(i, 4, 2), 4000));
        for node in 0..4 {
            let c = a.iter().filter(|&&x| x == node).count();
            assert!((850..1150).contains(&c), "node {node}: {c}");
        }
    }

    #[test]
    fn names_parse() {
        assert_eq!(Policy::parse("skew_mapp", 4), Ok(Policy::SkewMapp));
        assert!(Policy::parse("nope", 4).is_err());
    }
}
