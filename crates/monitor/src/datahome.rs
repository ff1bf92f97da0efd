//! Where each thread's recent faults found their pages: events per (thread, node), aged
//! with the sharing matrix. The price of the data a remap leaves behind
//! ([`crate::Config::data_cost`]), used by the kMAF loop and by the simulator's SAMMU.
//!
//! Neither paper weighs the data: both move pages after threads (kMAF §3.3, SAMMU §2.6),
//! and on their long runs the pages soon follow. On a run of a few periods, or when the
//! matrix holds only the few sharing events of a reduction, a barrier or a pointer array
//! every thread reads once, a remap that only shortens sharing distances moves threads
//! away from their pages for longer than it wins anything.

/// Events per (thread, node of the page), aged with the sharing matrix.
#[derive(Debug, Clone, Default)]
pub struct DataHome {
    nodes: usize,
    counts: Vec<f64>,
}

impl DataHome {
    /// No events yet, for `threads` threads on `nodes` nodes.
    pub fn new(threads: usize, nodes: usize) -> Self {
        DataHome {
            nodes,
            counts: vec![0.0; threads * nodes],
        }
    }

    /// `events` events of `thread` on pages of `page_node`; events out of range are
    /// dropped.
    pub fn add(&mut self, thread: u32, page_node: usize, events: f64) {
        if page_node >= self.nodes {
            return;
        }
        if let Some(c) = self
            .counts
            .get_mut(thread as usize * self.nodes + page_node)
        {
            *c += events;
        }
    }

    /// Ages every count with the matrix (kMAF §3.4.2).
    pub fn age(&mut self) {
        tdmap_sharing::age_weights(&mut self.counts);
    }

    /// The extra latency `mapping` (a PU per thread) gives the recorded events: each
    /// thread's events on pages of a node other than the one it would run on, weighted by
    /// `penalty(run node, page node)`, the extra cost of such an access over a local one.
    pub fn cost(
        &self,
        mapping: &[usize],
        node_of_pu: impl Fn(usize) -> usize,
        penalty: impl Fn(usize, usize) -> f64,
    ) -> f64 {
        let nodes = self.nodes;
        let mut total = 0.0;
        for (t, &pu) in mapping.iter().enumerate() {
            let Some(row) = self.counts.get(t * nodes..(t + 1) * nodes) else {
                break;
            };
            let a = node_of_pu(pu);
            for (n, &f) in row.iter().enumerate() {
                if f > 0.0 && n != a {
                    total += f * penalty(a, n);
                }
            }
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_events_cost_their_penalty_and_age_with_the_matrix() {
        let mut h = DataHome::new(2, 2);
        h.add(0, 1, 4.0);
        h.add(1, 1, 2.0);
        h.add(5, 0, 9.0); // beyond the threads: dropped
        let node = |pu: usize| pu;
        let pen = |_a: usize, _n: usize| 10.0;
        assert_eq!(
            h.cost(&[0, 1], node, pen),
            40.0,
            "thread 0 away from node 1"
        );
        assert_eq!(h.cost(&[1, 1], node, pen), 0.0);
        h.age();
        assert_eq!(h.cost(&[0, 0], node, pen), 45.0, "(4 + 2) × 0.75 × 10");
    }
}
