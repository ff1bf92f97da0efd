//! Where each thread of a heatmap ran or was placed: its NUMA node and package, so that
//! the heatmap can order its threads by place and draw the boundaries between nodes and
//! packages (sharing inside a node is cheap, across a package boundary dear: kMAF §2.1).

use tdmap_topo::Topology;

/// The node and package of each thread; `None` where the thread was never placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Places {
    /// Logical NUMA node of each thread.
    pub node: Vec<Option<usize>>,
    /// Logical package of each thread.
    pub package: Vec<Option<usize>>,
}

impl Places {
    /// Threads on NUMA nodes (`tdmap analyze`'s assumed placement), each node's package
    /// being that of its first PU.
    pub fn from_nodes(topo: &Topology, nodes: &[u32]) -> Places {
        let node: Vec<Option<usize>> = nodes
            .iter()
            .map(|&n| Some(n as usize).filter(|&n| n < topo.num_nodes()))
            .collect();
        let package = node
            .iter()
            .map(|n| n.and_then(|n| topo.pus_of_node(n).first().map(|&pu| topo.pus[pu].package)))
            .collect();
        Places { node, package }
    }

    /// Threads on logical PUs (a mapping, or `tdmap run`'s plan).
    pub fn from_pus(topo: &Topology, pus: &[Option<usize>]) -> Places {
        let pu = |p: &Option<usize>| p.and_then(|p| topo.pus.get(p));
        Places {
            node: pus.iter().map(|p| pu(p).map(|p| p.node)).collect(),
            package: pus.iter().map(|p| pu(p).map(|p| p.package)).collect(),
        }
    }

    /// Whether threads sit on more than one node or package: otherwise there is no
    /// boundary to draw.
    pub fn splits(&self) -> bool {
        let many = |v: &[Option<usize>]| v.iter().flatten().any(|x| Some(x) != v[0].as_ref());
        !self.node.is_empty() && (many(&self.node) || many(&self.package))
    }

    /// Thread ids in drawing order: by package, then node, then id; unplaced threads last.
    pub fn order(&self, n: usize) -> Vec<usize> {
        let key = |t: usize| {
            let at = |v: &[Option<usize>]| v.get(t).copied().flatten().unwrap_or(usize::MAX);
            (at(&self.package), at(&self.node), t)
        };
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&t| key(t));
        order
    }

    /// The boundaries in drawing order `order`: position p (1..n) starts a new package
    /// (`Edge::Package`) or node (`Edge::Node`) group.
    pub fn edges(&self, order: &[usize]) -> Vec<(usize, Edge)> {
        let at = |v: &[Option<usize>], p: usize| v.get(order[p]).copied().flatten();
        (1..order.len())
            .filter_map(|p| {
                if at(&self.package, p) != at(&self.package, p - 1) {
                    Some((p, Edge::Package))
                } else if at(&self.node, p) != at(&self.node, p - 1) {
                    Some((p, Edge::Node))
                } else {
                    None
                }
            })
            .collect()
    }

    /// The node groups in drawing order: (first position, positions, node label).
    pub fn groups(&self, order: &[usize]) -> Vec<(usize, usize, String)> {
        let mut out: Vec<(usize, usize, String)> = Vec::new();
        for (p, &t) in order.iter().enumerate() {
            let label = match self.node.get(t).copied().flatten() {
                Some(n) => format!("n{n}"),
                None => "?".to_string(),
            };
            match out.last_mut() {
                Some(g) if g.2 == label => g.1 += 1,
                _ => out.push((p, 1, label)),
            }
        }
        out
    }
}

/// A boundary between two groups of threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    /// Between two NUMA nodes of one package.
    Node,
    /// Between two packages.
    Package,
}

impl Edge {
    /// Its colour: blue for nodes, red for packages.
    pub fn rgb(self) -> [u8; 3] {
        match self {
            Edge::Node => [30, 100, 220],
            Edge::Package => [200, 30, 30],
        }
    }

    /// Its width in pixels.
    pub fn width(self) -> usize {
        match self {
            Edge::Node => 2,
            Edge::Package => 3,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places() -> Places {
        // Threads 0..4 on nodes 1, 0, 1, 2; nodes 0 and 1 in package 0, node 2 in 1.
        Places {
            node: vec![Some(1), Some(0), Some(1), Some(2)],
            package: vec![Some(0), Some(0), Some(0), Some(1)],
        }
    }

    #[test]
    fn threads_are_ordered_by_package_then_node_with_an_edge_at_each_change() {
        let p = places();
        let order = p.order(4);
        assert_eq!(order, vec![1, 0, 2, 3]);
        assert_eq!(p.edges(&order), vec![(1, Edge::Node), (3, Edge::Package)]);
        let groups: Vec<_> = p.groups(&order).into_iter().map(|g| (g.0, g.1)).collect();
        assert_eq!(groups, vec![(0, 1), (1, 2), (3, 1)]);
        assert!(p.splits());
    }

    #[test]
    fn one_node_has_no_boundary() {
        let p = Places {
            node: vec![Some(0); 3],
            package: vec![Some(0); 3],
        };
        assert!(!p.splits());
        assert!(p.edges(&p.order(3)).is_empty());
    }
}
