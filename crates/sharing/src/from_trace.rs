//! A trace's sharing model, as `tdmap analyze` and `tdmap map --trace` build it: exact
//! traces share per cache line and keep every sharer (trace paper §III-B), traces of
//! page-fault samples use kMAF's 1 KiB sub-blocks and 2 sharers; [`Grain`] overrides
//! either. The binary opens the trace and picks the machine; this feeds it.

use crate::{Sharers, SharingError, SharingModel, TableConfig};
use tdmap_trace::{Chunk, Prefetch, ThreadInfo, TraceError};

/// The granularity a trace is analysed at: page size, and overrides of the sharing
/// block and the sharers kept per block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grain {
    /// Page size of the NUMA vectors.
    pub page: u64,
    /// Bytes per sharing block, instead of the trace's own.
    pub block: Option<u64>,
    /// Sharers kept per block, instead of the trace's default.
    pub sharers: Option<Sharers>,
}

/// Why a trace's model could not be built.
#[derive(Debug, thiserror::Error)]
pub enum FromTraceError {
    /// The trace could not be read.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// The model refused its shape (too many threads, a node the machine lacks).
    #[error(transparent)]
    Shape(SharingError),
    /// An event names a thread or node beyond the machine the model was sized for.
    #[error("the trace does not fit the machine; pass --machine: {0}")]
    Fit(SharingError),
}

/// Where each of `threads` threads ran: the node of the CPU recorded for it when
/// `node_of_cpu` knows that CPU, else blocks over `nodes` nodes (t·N/T), as a compact
/// mapping would place them.
pub fn thread_nodes(
    recorded: &[ThreadInfo],
    threads: usize,
    nodes: usize,
    node_of_cpu: impl Fn(usize) -> Option<usize>,
) -> Vec<u32> {
    let nodes = nodes.max(1);
    (0..threads)
        .map(|t| {
            let cpu = recorded
                .iter()
                .find(|i| i.id as usize == t)
                .and_then(|i| i.cpu);
            cpu.and_then(|c| node_of_cpu(c as usize))
                .unwrap_or(t * nodes / threads.max(1)) as u32
        })
        .collect()
}

impl SharingModel {
    /// Feeds the whole trace to a model of `nodes` NUMA nodes, thread t on node
    /// `node_of[t]`; the table's shape is chosen from the first chunk (accesses or
    /// faults), then `grain`. `progress` gets the events of each chunk read.
    pub fn from_trace(
        reader: &mut Prefetch,
        nodes: usize,
        node_of: &[u32],
        grain: Grain,
        mut progress: impl FnMut(u64),
    ) -> Result<SharingModel, FromTraceError> {
        let threads = reader.header().threads as usize;
        let nodes = nodes.max(1);
        let line = (reader.header().line_size as u64).clamp(1, grain.page);
        let mut model: Option<SharingModel> = None;
        let mut accesses = false;
        while let Some(chunk) = reader.next_chunk()? {
            progress(chunk.len() as u64);
            accesses |= model.is_none() && matches!(chunk, Chunk::Accesses(_));
            // In an access trace the faults are first-touch records: each repeats an
            // access already in the trace, at its page's first byte, by whichever thread
            // got there first. Fed as accesses, they made that line shared with the
            // page's first toucher, so the matrices changed with the interleaving (trace
            // paper §III-B counts accesses only).
            if accesses && matches!(chunk, Chunk::Faults(_)) {
                continue;
            }
            let m = match &mut model {
                Some(m) => m,
                None => {
                    let cfg = grain.config(chunk, line, nodes, threads);
                    let m = SharingModel::new(cfg, threads, node_of);
                    model.insert(m.map_err(FromTraceError::Shape)?)
                }
            };
            m.feed(chunk).map_err(FromTraceError::Fit)?;
        }
        match model {
            Some(m) => Ok(m),
            None => SharingModel::new(TableConfig::exact(nodes), threads, node_of)
                .map_err(FromTraceError::Shape),
        }
    }
}

impl Grain {
    /// The table for a trace whose first chunk is `first`: per `line` and every sharer
    /// for accesses, kMAF's for faults; then this grain's overrides.
    fn config(&self, first: &Chunk, line: u64, nodes: usize, threads: usize) -> TableConfig {
        let mut cfg = match first {
            Chunk::Accesses(_) => TableConfig {
                sub_block: line,
                ..TableConfig::all_sharers(nodes, threads)
            },
            Chunk::Faults(_) => TableConfig::page_faults(nodes),
        };
        if let Some(s) = self.sharers {
            cfg = cfg.keeping(s);
        }
        cfg.page_size = self.page;
        cfg.sub_block = self.block.unwrap_or(cfg.sub_block).min(self.page);
        cfg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_sit_on_their_recorded_cpu_else_in_blocks() {
        let info = |id, cpu| ThreadInfo {
            id,
            os_tid: 100 + id as i32,
            cpu,
        };
        let recorded = [info(1, Some(5)), info(2, Some(99)), info(0, None)];
        let node_of_cpu = |c: usize| (c < 8).then_some(c / 4);
        // Thread 1 ran on CPU 5 (node 1); CPU 99 is not on the machine, so thread 2
        // gets its block, as thread 0 and 3 do: 4 threads over 2 nodes.
        assert_eq!(thread_nodes(&recorded, 4, 2, node_of_cpu), vec![0, 1, 1, 1]);
        assert_eq!(thread_nodes(&[], 4, 2, node_of_cpu), vec![0, 0, 1, 1]);
    }

    /// Regression (cg's cc-versus-gcc correlation, 0.985-0.995 from run to run): thread 1
    /// first-touches the page whose first line only thread 0 accesses. Its first-touch
    /// record is not an access, so the two threads share nothing.
    #[test]
    fn first_touch_records_of_an_access_trace_share_nothing() {
        use crate::Metric;
        use tdmap_trace::{Access, Fault, Header, Reader, TraceStatus, Writer};
        let dir = std::env::temp_dir().join(format!("tdmap-sharing-ft-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.trace");
        let mut h = Header::new(vec!["prog".into()], "m");
        h.threads = 2;
        let w = Writer::create(&path, h).unwrap();
        let at = |thread, addr, time| Access {
            thread,
            addr,
            size: 8,
            write: true,
            time,
        };
        let (page, theirs) = (0x10000, 0x10800);
        w.append_accesses(1, &[at(1, theirs, 1)]).unwrap();
        let first = Fault {
            thread: 1,
            addr: page,
            cpu: 1,
            node: 0,
            time: 1,
        };
        w.append_faults(1, &[first]).unwrap();
        w.append_accesses(0, &[at(0, page, 2)]).unwrap();
        w.finish(TraceStatus::Complete).unwrap();
        let mut rd = Reader::open(&path).unwrap().prefetch();
        let grain = Grain {
            page: 4096,
            block: None,
            sharers: None,
        };
        let m = SharingModel::from_trace(&mut rd, 1, &[0, 0], grain, |_| {}).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        for metric in [Metric::Accesses, Metric::Amount] {
            assert_eq!(m.matrix(metric).get(0, 1), 0, "{metric:?}");
            assert!(
                m.matrix(metric).get(0, 0) > 0,
                "{metric:?}: thread 0's line is private"
            );
        }
    }
}
