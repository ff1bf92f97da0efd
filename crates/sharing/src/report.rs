//! What `tdmap analyze` reports about a trace's model, as text or as the analyze report
//! file (format `tdmap-analyze`, `docs/formats.md`) that `tdmap run --reference` reads
//! back, and the verdict in kMAF §2.3's terms. `tdmap trace --model-only` embeds one.

use crate::{
    data_metrics, thread_metrics, DataMetrics, Metric, SharingError, SharingMatrix, SharingModel,
    TableConfig, ThreadMetrics,
};
use serde::{Deserialize, Serialize};
use std::fmt::Write;
use std::path::Path;
use tdmap_format::{FormatError, Versioned};
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
/// Bytes two threads share on average from which gathering threads that all share alike
/// onto fewer nodes pays (calibrated on the workloads with `scripts/calibrate-verdict.sh`,
/// docs/sim-checks.md: at 8 threads on xeon-x7550-4s, alltoall's pairs share 8 KiB and
/// cginit's 33 KiB for a SIMULATED gain of 8-30 %; ep's share 256 B, read-only, for 0.3 %).
const GATHER_SHARED_BYTES: f64 = 4096.0;
/// Footprint over total cache from which data placement can matter (kMAF §2.2.2).
const FOOTPRINT_OVER_CACHE: f64 = 4.0;

/// The analysis of one trace: what `tdmap analyze --json` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnalyzeReport {
    /// Always `tdmap-analyze`.
    pub format: String,
    /// [`AnalyzeReport::VERSION`].
    pub version: u32,
    /// The trace file, as given.
    pub trace: String,
    /// The traced command line.
    pub program: Vec<String>,
    /// The machine recorded in the trace.
    pub recorded_machine: String,
    /// The trace's status (`Complete`, `Crashed`, `Incomplete`).
    pub status: String,
    /// False when the trace is not whole (no valid end marker); the figures then cover
    /// only what was read. Absent in files of older builds: true.
    #[serde(default = "complete_by_default")]
    pub complete: bool,
    /// Threads.
    pub threads: usize,
    /// Events fed to the model.
    pub events: u64,
    /// The machine analysed on.
    pub machine: String,
    /// Its NUMA nodes.
    pub nodes: usize,
    /// The node each thread was assumed to run on.
    pub thread_nodes: Vec<u32>,
    /// The affinity table's shape: `sub_block` is the sharing granularity.
    pub table: TableConfig,
    /// kMAF Eq. 1–2 on the matrix of accesses to shared blocks.
    pub accesses: ThreadMetrics,
    /// kMAF Eq. 1–2 on the matrix of shared memory.
    pub amount: ThreadMetrics,
    /// Accesses that touched a block another thread also held, over all accesses.
    pub shared_access_fraction: f64,
    /// sqrt(heterogeneity) / amount on the access matrix: 0 when all pairs share alike.
    pub variation: f64,
    /// kMAF Eq. 3–4 and Figure 2 per page size.
    pub data: Vec<DataMetrics>,
    /// Bytes of the pages touched.
    pub footprint_bytes: u64,
    /// Bytes of the machine's last-level caches.
    pub cache_bytes: u64,
    /// Which matrix `matrix` and `top_pairs` show.
    pub metric: Metric,
    /// The whole matrix of `metric` ({n, cells row-major}): `tdmap run --reference`
    /// compares online detection with it.
    pub matrix: SharingMatrix,
    /// The pairs that share most: (i, j, sharing), i < j.
    pub top_pairs: Vec<(usize, usize, u64)>,
    /// Bytes of memory an average pair of threads both touched (the amount matrix's mean
    /// off-diagonal cell). Absent in files of older builds: 0.
    #[serde(default)]
    pub mean_pair_shared_bytes: f64,
    /// The fewest NUMA nodes whose PUs hold every thread; 0 when not known. Absent in
    /// files of older builds: 0.
    #[serde(default)]
    pub nodes_needed: usize,
    /// The verdict on thread mapping.
    pub verdict_threads: String,
    /// The verdict on data mapping.
    pub verdict_data: String,
}

/// What a report is computed for, besides the model.
#[derive(Debug, Clone, Copy)]
pub struct ReportSetup<'a> {
    /// The trace's name, as given.
    pub trace: &'a str,
    /// The machine's name.
    pub machine: &'a str,
    /// Bytes of its last-level caches.
    pub cache_bytes: u64,
    /// Page sizes of the data metrics, one entry each.
    pub page_sizes: &'a [u64],
    /// The matrix to show.
    pub metric: Metric,
    /// Pairs to list.
    pub top: usize,
}

impl Versioned for AnalyzeReport {
    const FORMAT: &'static str = "tdmap-analyze";
    const VERSION: u32 = 1;
    const WRITER: &'static str = "tdmap analyze --json TRACE > FILE";

    fn check(&self) -> Result<(), String> {
        (self.matrix.n() == self.threads)
            .then_some(())
            .ok_or_else(|| {
                format!(
                    "\"matrix\" has {} threads, \"threads\" says {}",
                    self.matrix.n(),
                    self.threads
                )
            })
    }
}

impl AnalyzeReport {
    /// Computes the report of `model`, fed from a trace with header `h`.
    pub fn new(
        setup: &ReportSetup<'_>,
        h: &Header,
        model: &SharingModel,
    ) -> Result<AnalyzeReport, SharingError> {
        let table = *model.table().config();
        let acc = model.matrix(Metric::Accesses);
        let pairs = acc.n() * acc.n().saturating_sub(1);
        let mean_pair_shared_bytes =
            model.matrix(Metric::Amount).off_diagonal_sum() as f64 / pairs.max(1) as f64;
        let private: u64 = (0..acc.n()).map(|i| acc.get(i, i)).sum();
        let shared = acc.off_diagonal_sum() / 2;
        let data = setup
            .page_sizes
            .iter()
            .map(|&p| data_metrics(model.table(), p))
            .collect::<Result<Vec<_>, _>>()?;
        let (format, version) = tdmap_format::header::<AnalyzeReport>();
        let mut r = AnalyzeReport {
            format,
            version,
            trace: setup.trace.to_string(),
            program: h.program.clone(),
            recorded_machine: h.machine.clone(),
            status: format!("{:?}", h.status),
            complete: true,
            threads: acc.n(),
            events: model.events(),
            machine: setup.machine.to_string(),
            nodes: table.nodes,
            thread_nodes: (0..acc.n()).map(|_| 0).collect(),
            table,
            accesses: thread_metrics(acc),
            amount: thread_metrics(model.matrix(Metric::Amount)),
            shared_access_fraction: ratio(shared, shared + private),
            variation: variation(&thread_metrics(acc)),
            data,
            footprint_bytes: model.table().tracked_pages() * table.page_size,
            cache_bytes: setup.cache_bytes,
            metric: setup.metric,
            matrix: model.matrix(setup.metric).clone(),
            top_pairs: model.matrix(setup.metric).top_pairs(setup.top),
            mean_pair_shared_bytes,
            nodes_needed: 0,
            verdict_threads: String::new(),
            verdict_data: String::new(),
        };
        r.verdict();
        Ok(r)
    }

    /// Reads and checks an analyze report file; errors name the file and the field.
    pub fn read(path: &Path) -> Result<AnalyzeReport, FormatError> {
        tdmap_format::read(path)
    }

    /// The report as pretty JSON, header first.
    pub fn to_json(&self) -> String {
        tdmap_format::to_string(self)
    }

    /// Sets the verdicts from the metrics, in the terms of kMAF §2.3.
    fn verdict(&mut self) {
        let het = self.variation >= HIGH_VARIATION;
        let lot = self.shared_access_fraction >= HIGH_SHARED;
        // Threads that all share alike still gain from sharing one node's cache when they
        // fit on fewer nodes than they are spread over (kMAF §2.3's Vips ran on the whole
        // machine, where there is nothing to gather), if they share more than a few lines.
        let mut spread = self.thread_nodes.clone();
        spread.sort_unstable();
        spread.dedup();
        let gather = self.nodes_needed > 0
            && self.nodes_needed < spread.len()
            && self.mean_pair_shared_bytes >= GATHER_SHARED_BYTES;
        self.verdict_threads = match (het, lot, gather) {
            (true, true, _) => "high potential: heterogeneous sharing and a lot of it; map threads that share onto nearby cores",
            (true, false, _) => "low potential: heterogeneous but little sharing (as CG and DC in kMAF §2.3)",
            (false, true, true) => "high potential: all threads share alike and a lot, and fit on fewer nodes than they are spread over; gather them onto the fewest nodes that hold them (compact)",
            (false, true, false) => "low potential: all threads share alike (as Vips in kMAF §2.3); any thread placement performs similarly",
            (false, false, _) => "no potential: threads hardly share data",
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

    /// Records whether the trace was whole.
    pub fn set_complete(&mut self, complete: bool) {
        self.complete = complete;
    }

    /// Sets where each thread was assumed to run (which the verdicts depend on).
    pub fn set_thread_nodes(&mut self, nodes: Vec<u32>) {
        self.thread_nodes = nodes;
        self.verdict();
    }

    /// Sets the fewest NUMA nodes whose PUs hold every thread (which the verdicts depend
    /// on).
    pub fn set_nodes_needed(&mut self, nodes: usize) {
        self.nodes_needed = nodes;
        self.verdict();
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
            // Eq. 4 weights each page by its accesses; the histogram counts pages alike, so
            // the two can disagree (a few hot private pages among many shared cold ones).
            let _ = writeln!(
                s,
                "  {:>7} pages: {} pages, avg exclusivity {:.3} (access-weighted, Eq. 4)",
                size(d.page_size),
                d.pages,
                d.avg_exclusivity
            );
            let _ = writeln!(
                s,
                "           per page, unweighted: % of pages at exclusivity 0,10..100%: {}",
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

fn size(b: u64) -> String {
    match b {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{}G", b >> 30),
        b if b >= 1 << 20 => format!("{:.1}M", b as f64 / (1 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1}K", b as f64 / 1024.0),
        b => format!("{b}B"),
    }
}

fn complete_by_default() -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ModelFile, ModelPage, ModelThread, TableConfig};

    /// Threads 0 and 1 share a line; thread 2 stays alone.
    pub(crate) fn report() -> AnalyzeReport {
        let mut model = SharingModel::new(TableConfig::exact(2), 3, &[0, 0, 1]).unwrap();
        for t in [0, 1, 0, 1] {
            model.accesses(t, &[0x1000]).unwrap();
        }
        model.accesses(2, &[0x9000]).unwrap();
        let setup = ReportSetup {
            trace: "t.trace",
            machine: "package:2 core:2",
            cache_bytes: 1 << 20,
            page_sizes: &[4096, 2 << 20],
            metric: Metric::Amount,
            top: 2,
        };
        let h = Header::new(vec!["prog".into(), "3".into()], "local");
        AnalyzeReport::new(&setup, &h, &model).unwrap()
    }

    /// Four threads that all read and write the same `lines` lines, on four nodes.
    fn all_alike(lines: u64) -> AnalyzeReport {
        let config = TableConfig::all_sharers(4, 4);
        let mut model = SharingModel::new(config, 4, &[0, 1, 2, 3]).unwrap();
        for _ in 0..4 {
            for t in 0..4 {
                let addrs: Vec<u64> = (0..lines).map(|l| 0x10000 + 64 * l).collect();
                model.accesses(t, &addrs).unwrap();
            }
        }
        let setup = ReportSetup {
            trace: "t.trace",
            machine: "xeon-x7550-4s",
            cache_bytes: 72 << 20,
            page_sizes: &[4096],
            metric: Metric::Accesses,
            top: 2,
        };
        let h = Header::new(vec!["prog".into()], "local");
        let mut r = AnalyzeReport::new(&setup, &h, &model).unwrap();
        r.set_thread_nodes(vec![0, 1, 2, 3]);
        r
    }

    #[test]
    fn threads_sharing_alike_are_worth_gathering_only_when_they_fit_on_fewer_nodes() {
        // 128 lines (8 KiB) shared by every pair, as alltoall's at 8 threads.
        let mut r = all_alike(128);
        assert!(
            r.mean_pair_shared_bytes >= 8192.0,
            "{}",
            r.mean_pair_shared_bytes
        );
        assert!(
            r.verdict_threads
                .starts_with("low potential: all threads share alike"),
            "{} (variation {}, shared {})",
            r.verdict_threads,
            r.variation,
            r.shared_access_fraction
        );
        r.set_nodes_needed(1);
        assert!(
            r.verdict_threads
                .starts_with("high potential: all threads share alike"),
            "{}",
            r.verdict_threads
        );
        r.set_nodes_needed(4);
        assert!(
            r.verdict_threads.starts_with("low potential"),
            "a full machine: {}",
            r.verdict_threads
        );
        // A few lines (ep's 256 B) are replicated in every cache at no cost.
        let mut few = all_alike(4);
        few.set_nodes_needed(1);
        assert!(
            few.verdict_threads.starts_with("low potential"),
            "{}",
            few.verdict_threads
        );
    }

    fn parse<T: Versioned>(text: &str) -> Result<T, FormatError> {
        tdmap_format::from_str(text, Path::new("r.json"))
    }

    #[test]
    fn an_analyze_report_round_trips() {
        let r = report();
        let text = r.to_json();
        assert!(text.starts_with("{\n  \"format\": \"tdmap-analyze\",\n  \"version\": 1,"));
        assert_eq!(parse::<AnalyzeReport>(&text).unwrap(), r);
        assert_eq!(r.top_pairs[0], (0, 1, 64));
    }

    #[test]
    fn a_report_with_a_broken_matrix_or_no_metric_is_refused() {
        let text = report().to_json();
        let asym = text.replacen(
            "\"cells\": [\n      64,\n      64,",
            "\"cells\": [\n      64,\n      65,",
            1,
        );
        assert_ne!(asym, text);
        let err = parse::<AnalyzeReport>(&asym).unwrap_err().to_string();
        assert!(err.contains("not a symmetric 3×3 matrix"), "{err}");
        let no_metric = text.replacen("\"metric\": \"Amount\",", "", 1);
        let err = parse::<AnalyzeReport>(&no_metric).unwrap_err().to_string();
        assert!(
            err.starts_with("r.json: field \"metric\": missing;"),
            "{err}"
        );
    }

    #[test]
    fn a_model_file_round_trips_and_is_not_an_analyze_report() {
        let (format, version) = tdmap_format::header::<ModelFile>();
        let m = ModelFile {
            format,
            version,
            program: vec!["prog".into()],
            status: "Complete".into(),
            exit_code: Some(0),
            signal: None,
            machine: "local".into(),
            page_size: 4096,
            threads: vec![ModelThread { id: 0, os_tid: 42 }],
            filtered: 0,
            model_bytes: 100,
            run_seconds: 0.5,
            matrix_accesses: vec![vec![1, 2], vec![2, 0]],
            matrix_amount: vec![vec![64, 64], vec![64, 0]],
            pages: vec![ModelPage {
                addr: 4096,
                nv: vec![3, 0],
                first_thread: Some(0),
                first_node: None,
            }],
            analysis: report(),
        };
        let text = tdmap_format::to_string(&m);
        assert_eq!(parse::<ModelFile>(&text).unwrap(), m);
        assert_eq!(m.accesses_f64(), vec![1.0, 2.0, 2.0, 0.0]);
        let err = parse::<AnalyzeReport>(&text).unwrap_err().to_string();
        assert!(
            err.starts_with(
                "r.json: format \"tdmap-model\" version 1, expected \"tdmap-analyze\" version 1"
            ),
            "{err}"
        );
        let ragged = text.replacen("[\n      2,\n      0\n    ]", "[\n      2\n    ]", 1);
        let err = parse::<ModelFile>(&ragged).unwrap_err().to_string();
        assert!(err.contains("must be n×n"), "{err}");
    }
}
