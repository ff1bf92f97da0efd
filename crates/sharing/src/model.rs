//! The sharing model: the affinity table plus the two sharing matrices of the trace
//! paper (§III-B), fed event by event or a whole trace chunk at a time.

use crate::error::SharingError;
use crate::matrix::SharingMatrix;
use crate::table::{AffinityTable, TableConfig, Touch, EMPTY};
use tdmap_trace::Chunk;

/// Which of the trace paper's two metrics a matrix holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Metric {
    /// Number of accesses to blocks shared with the other thread (kMAF's sharing events).
    Accesses,
    /// Bytes of memory shared with the other thread.
    Amount,
}

/// The affinity table and both sharing matrices, updated on every event.
#[derive(Debug, Clone)]
pub struct SharingModel {
    table: AffinityTable,
    accesses: SharingMatrix,
    amount: SharingMatrix,
    node_of: Vec<u16>,
    sub_block: u64,
    events: u64,
}

impl SharingModel {
    /// A model for `threads` threads, where thread t runs on NUMA node `node_of[t]` for
    /// accesses (faults carry their own node). Threads missing from `node_of` use node 0.
    pub fn new(cfg: TableConfig, threads: usize, node_of: &[u32]) -> Result<Self, SharingError> {
        if threads >= EMPTY as usize {
            return Err(SharingError::Thread {
                thread: threads as u32,
                threads: EMPTY as usize - 1,
            });
        }
        let mut nodes = vec![0u16; threads];
        for (slot, &n) in nodes.iter_mut().zip(node_of) {
            if n as usize >= cfg.nodes {
                return Err(SharingError::Node {
                    node: n,
                    nodes: cfg.nodes,
                });
            }
            *slot = n as u16;
        }
        Ok(SharingModel {
            table: AffinityTable::new(cfg)?,
            accesses: SharingMatrix::new(threads),
            amount: SharingMatrix::new(threads),
            node_of: nodes,
            sub_block: cfg.sub_block,
            events: 0,
        })
    }

    /// The affinity table.
    pub fn table(&self) -> &AffinityTable {
        &self.table
    }

    /// Mutable access to the table, e.g. to halve a NUMA vector after a migration.
    pub fn table_mut(&mut self) -> &mut AffinityTable {
        &mut self.table
    }

    /// One of the two sharing matrices.
    pub fn matrix(&self, metric: Metric) -> &SharingMatrix {
        match metric {
            Metric::Accesses => &self.accesses,
            Metric::Amount => &self.amount,
        }
    }

    /// Events consumed so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// kMAF §3.4.2 aging of both matrices (×0.75), done after each mapping.
    pub fn age(&mut self) {
        self.accesses.age();
        self.amount.age();
    }

    /// One access by `thread` at `addr`, from the thread's node.
    pub fn access(&mut self, thread: u32, addr: u64) -> Result<(), SharingError> {
        self.accesses(thread, &[addr])
    }

    /// One page-fault sample of `thread` at `addr` on `node`.
    pub fn fault(&mut self, thread: u32, addr: u64, node: u32) -> Result<(), SharingError> {
        self.faults(thread, &[addr], &[node])
    }

    /// Many accesses of one thread, in order: the fast path.
    pub fn accesses(&mut self, thread: u32, addrs: &[u64]) -> Result<(), SharingError> {
        let t = self.check_thread(thread)?;
        let node = self.node_of[t as usize] as usize;
        for &a in addrs {
            self.event(t, node, a);
        }
        self.events += addrs.len() as u64;
        Ok(())
    }

    /// Many page-fault samples of one thread, with the node of each.
    pub fn faults(
        &mut self,
        thread: u32,
        addrs: &[u64],
        nodes: &[u32],
    ) -> Result<(), SharingError> {
        let t = self.check_thread(thread)?;
        let max = self.table.config().nodes;
        if let Some(&bad) = nodes.iter().find(|&&n| n as usize >= max) {
            return Err(SharingError::Node {
                node: bad,
                nodes: max,
            });
        }
        for (&a, &n) in addrs.iter().zip(nodes) {
            self.event(t, n as usize, a);
        }
        self.events += addrs.len().min(nodes.len()) as u64;
        Ok(())
    }

    /// Consumes one chunk straight from [`tdmap_trace::Reader::next_chunk`].
    pub fn feed(&mut self, chunk: &Chunk) -> Result<(), SharingError> {
        match chunk {
            Chunk::Accesses(c) => self.accesses(c.thread, &c.addrs),
            Chunk::Faults(c) => self.faults(c.thread, &c.addrs, &c.nodes),
        }
    }

    fn check_thread(&self, thread: u32) -> Result<u16, SharingError> {
        if thread as usize >= self.node_of.len() {
            return Err(SharingError::Thread {
                thread,
                threads: self.node_of.len(),
            });
        }
        Ok(thread as u16)
    }

    /// kMAF §3.2: the thread becomes MRU and a sharing event is recorded with every other
    /// sharer of the sub-block. The access metric counts it on every event; the amount
    /// metric only when the thread newly joins the sharers (the block is newly shared with
    /// them). With no other sharer the event is private and goes on the diagonal.
    #[inline]
    fn event(&mut self, t: u16, node: usize, addr: u64) {
        let Touch { sbv_at, was_sharer } = self.table.touch(t, node, addr);
        let mut shared = false;
        for &u in &self.table.sharer_slots(sbv_at)[1..] {
            if u == EMPTY {
                break;
            }
            shared = true;
            self.accesses.add(t as usize, u as usize, 1);
            if !was_sharer {
                self.amount.add(t as usize, u as usize, self.sub_block);
            }
        }
        if !shared {
            self.accesses.add(t as usize, t as usize, 1);
            if !was_sharer {
                self.amount.add(t as usize, t as usize, self.sub_block);
            }
        }
    }
}
