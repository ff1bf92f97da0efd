//! What `tdmap analyze` reports, as JSON or text, and the verdict in kMAF §2.3's terms.

use anyhow::Result;
use serde::Serialize;
use std::fmt::Write;
use tdmap_sharing::{
    data_metrics, thread_metrics, DataMetrics, Metric, SharingMatrix, SharingModel, TableConfig,
    ThreadMetrics,
};
use tdmap_trace::Header;

/// Coefficient of variation of the pairs' sharing, sqrt(Eq. 1) / Eq. 2, from which pairs
/// differ enough to be worth mapping. Eq. 1 alone shrinks as 1/T for the same pattern
/// (pairs: 0.12 at 8 threads, 0.03 at 32); its ratio to Eq. 2 does not (2.4 and 5.5).
const HIGH_VARIATION: f64 = 0.5;
/// Share of accesses that touch data shared with another thread, from which sharing is
/// "a lot" rather than "little".
const HIGH_SHARED: f64 = 0.05;
/// Average exclusivity (Eq. 4) from which pages mostly belong to one node.
const HIGH_EXCLUSIVITY: f64 = 0.8;
/// Footprint over total cache from which data placement can matter (kMAF §2.2.2).
const FOOTPRINT_OVER_CACHE: f64 = 4.0;

/// The analysis of one trace.
#[derive(Debug, Serialize)]
pub struct Report {
    trace: String,
    program: Vec<String>,
    recorded_machine: String,
    status: String,
    /// False when the trace is not whole or its run did not end normally
    /// ([`tdmap_trace::Ending`]); then the figures cover only what was read.
    complete: bool,
    threads: usize,
    events: u64,
    machine: String,
    nodes: usize,
    thread_nodes: Vec<u32>,
    table: TableConfig,
    /// kMAF Eq. 1–2 on the matrix of accesses to shared blocks.
    accesses: ThreadMetrics,
    /// kMAF Eq. 1–2 on the matrix of shared memory.
    amount: ThreadMetrics,
    /// Accesses that touched a block another thread also held, over all accesses.
    shared_access_fraction: f64,
    /// sqrt(heterogeneity) / amount on the access matrix: 0 when all pairs share alike.
    variation: f64,
    /// kMAF Eq. 3–4 and Figure 2 per page size.
    data: Vec<DataMetrics>,
    footprint_bytes: u64,
    cache_bytes: u64,
    metric: Metric,
    /// The whole matrix of `metric` ({n, cells row-major}): `tdmap run --reference`
    /// compares online detection with it.
    matrix: SharingMatrix,
    top_pairs: Vec<(usize, usize, u64)>,
    verdict_threads: String,
    verdict_data: String,
}

impl Report {
    /// Computes the report.
    pub fn new(
        name: &str,
        h: &Header,
        model: &SharingModel,
        topo: &tdmap_topo::Topology,
        sizes: &[u64],
        metric: Metric,
        top: usize,
    ) -> Result<Report> {
        let table = *model.table().config();
        let acc = model.matrix(Metric::Accesses);
        let private: u64 = (0..acc.n()).map(|i| acc.get(i, i)).sum();
        let shared = acc.off_diagonal_sum() / 2;
        let data = sizes
            .iter()
            .map(|&p| data_metrics(model.table(), p))
            .collect::<Result<Vec<_>, _>>()?;
        let mut r = Report {
            trace: name.to_string(),
            program: h.program.clone(),
            recorded_machine: h.machine.clone(),
            status: format!("{:?}", h.status),
            complete: false,
            threads: acc.n(),
            events: model.events(),
            machine: topo.name.clone(),
            nodes: table.nodes,
            thread_nodes: (0..acc.n()).map(|_| 0).collect(),
            table,
            accesses: thread_metrics(acc),
            amount: thread_metrics(model.matrix(Metric::Amount)),
            shared_access_fraction: ratio(shared, shared + private),
            variation: variation(&thread_metrics(acc)),
            data,
            footprint_bytes: model.table().tracked_pages() * table.page_size,
            cache_bytes: total_cache(topo),
            metric,
            matrix: model.matrix(metric).clone(),
            top_pairs: model.matrix(metric).top_pairs(top),
            verdict_threads: String::new(),
            verdict_data: String::new(),
        };
        r.verdict();
        Ok(r)
    }

    /// Sets the verdicts from the metrics, in the terms of kMAF §2.3.
    fn verdict(&mut self) {
        let het = self.variation >= HIGH_VARIATION;
        let lot = self.shared_access_fraction >= HIGH_SHARED;
        self.verdict_threads = match (het, lot) {
            (true, true) => "high potential: heterogeneous sharing and a lot of it; map threads that share onto nearby cores",
            (true, false) => "low potential: heterogeneous but little sharing (as CG and DC in kMAF §2.3)",
            (false, true) => "low potential: all threads share alike (as Vips in kMAF §2.3); any thread placement performs similarly",
            (false, false) => "no potential: threads hardly share data",
        }
        .to_string();
        let Some(d) = self.data.first() else { return };
        let fits = (self.footprint_bytes as f64) < FOOTPRINT_OVER_CACHE * self.cache_bytes as f64;
        self.verdict_data = if self.nodes < 2 {
            "not applicable: the machine has one NUMA node; pass --machine with a NUMA machine (e.g. xeon-x7550-4s)".into()
        } else if fits {
            "low potential: the memory footprint fits mostly in the caches (as EP and Swaptions in kMAF §2.3)".into()
        } else if d.avg_exclusivity >= HIGH_EXCLUSIVITY {
            "high potential: most accesses to a page come from one node; place pages on that node (after mapping threads: thread affinity is a prerequisite of data affinity)".into()
        } else {
            "moderate potential: pages are shared across nodes; interleave the shared ones and place the exclusive ones".into()
        };
    }

    /// Records whether the trace was Complete.
    pub fn set_complete(&mut self, complete: bool) {
        self.complete = complete;
    }

    /// Sets where each thread was assumed to run.
    pub fn set_thread_nodes(&mut self, nodes: Vec<u32>) {
        self.thread_nodes = nodes;
    }

    /// The report as text.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "trace     {} ({}, {} threads, {} events)",
            self.trace, self.status, self.threads, self.events
        );
        let _ = writeln!(s, "program   {}", self.program.join(" "));
        let _ = writeln!(
            s,
            "machine   {} ({} NUMA nodes; recorded: {})",
            self.machine, self.nodes, self.recorded_machine
        );
        let _ = writeln!(s, "threads on nodes {:?}", self.thread_nodes);
        let kept = if self.table.all_sharers {
            "all sharers kept".to_string()
        } else {
            format!("last {} sharers kept", self.table.sharers)
        };
        let _ = writeln!(s, "sharing per {} B block, {kept}\n", self.table.sub_block);
        let _ = writeln!(
            s,
            "thread affinity (kMAF Eq. 1-2, normalised, off-diagonal):"
        );
        let _ = writeln!(
            s,
            "  heterogeneity  {:.4} (accesses)  {:.4} (amount)",
            self.accesses.heterogeneity, self.amount.heterogeneity
        );
        let _ = writeln!(
            s,
            "  sharing amount {:.4} (accesses)  {:.4} (amount)",
            self.accesses.amount, self.amount.amount
        );
        let _ = writeln!(
            s,
            "  shared accesses {:.1}% of all; variation between pairs {:.2} (sqrt(Eq. 1) / Eq. 2)",
            100.0 * self.shared_access_fraction,
            self.variation
        );
        let _ = writeln!(s, "data affinity (kMAF Eq. 3-4):");
        for d in &self.data {
            let hist: Vec<String> = d
                .histogram
                .iter()
                .map(|&c| format!("{:.0}", 100.0 * ratio(c, d.pages)))
                .collect();
            let _ = writeln!(
                s,
                "  {:>7} pages: {} pages, avg exclusivity {:.3}",
                size(d.page_size),
                d.pages,
                d.avg_exclusivity
            );
            let _ = writeln!(
                s,
                "           % of pages at exclusivity 0,10..100%: {}",
                hist.join(" ")
            );
        }
        let _ = writeln!(
            s,
            "  footprint {} vs total cache {}",
            size(self.footprint_bytes),
            size(self.cache_bytes)
        );
        let _ = writeln!(s, "\ntop sharing pairs ({:?}):", self.metric);
        for (i, j, v) in &self.top_pairs {
            let _ = writeln!(s, "  {i:>4} {j:>4}  {v}");
        }
        let _ = writeln!(s, "\nthread mapping: {}", self.verdict_threads);
        let _ = writeln!(s, "data mapping:   {}", self.verdict_data);
        s
    }
}

fn variation(m: &ThreadMetrics) -> f64 {
    if m.amount > 0.0 {
        m.heterogeneity.sqrt() / m.amount
    } else {
        0.0
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// Sum of the sizes of the machine's last-level caches.
fn total_cache(topo: &tdmap_topo::Topology) -> u64 {
    let caches = || topo.objects.iter().filter_map(|o| o.cache);
    let top = caches().map(|c| c.level).max().unwrap_or(0);
    caches().filter(|c| c.level == top).map(|c| c.size).sum()
}

fn size(b: u64) -> String {
    match b {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{}G", b >> 30),
        b if b >= 1 << 20 => format!("{:.1}M", b as f64 / (1 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1}K", b as f64 / 1024.0),
        b => format!("{b}B"),
    }
}
