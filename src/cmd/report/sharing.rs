//! The sharing sections: the heatmap of each matrix (a trace's, a run's) with the
//! NUMA-node and package boundaries of the threads' places, then the exclusivity
//! histogram (kMAF Eq. 4, Figure 2) and the pairs that share most.

use super::bars::Bars;
use super::inputs::Sources;
use super::machine::chip;
use super::page::{esc, table, Section};
use crate::cmd::heatmap::{self, Counted, Places};
use tdmap_map::MappingFile;
use tdmap_sharing::{DataMetrics, SharingMatrix};
use tdmap_topo::Topology;

/// The heatmaps, or None without a matrix.
pub fn heatmaps(src: &Sources, topo: &Topology) -> Option<Section> {
    let mut body = String::new();
    if let Some(a) = &src.analyze {
        let places = mapping_places(src.mapping.as_ref(), a.threads).unwrap_or_else(|| {
            let fits = topo.num_nodes() == a.nodes;
            let nodes = if fits { a.thread_nodes.as_slice() } else { &[] };
            Places::from_nodes(topo, nodes)
        });
        let how = if src.mapping.as_ref().is_some_and(|m| m.threads == a.threads) {
            "threads ordered by the mapping's placement"
        } else {
            "threads ordered by the node the analysis assumed for them"
        };
        body += &figure(
            "heatmap-trace",
            &a.matrix,
            Counted::Trace(a.metric),
            &a.program.join(" "),
            &places,
        );
        body +=
            &format!("<p class=\"note\">From the trace ({how}); the diagonal is private data.</p>");
    }
    if let Some(r) = &src.run {
        let places = Places {
            node: r.threads.iter().map(|t| t.node).collect(),
            package: vec![None; r.threads.len()],
        };
        body += &figure(
            "heatmap-run",
            &r.matrix,
            Counted::FaultSamples,
            &r.program,
            &places,
        );
        body += "<p class=\"note\">From the run: page-fault samples (kMAF §3.1), a sample of the accesses; threads ordered by the node tdmap run planned for them.</p>";
    }
    (!body.is_empty()).then(|| Section {
        id: "sharing",
        title: "Sharing heatmap".into(),
        body,
    })
}

/// The places a mapping gives `threads` threads, when it is a mapping of that many.
fn mapping_places(m: Option<&MappingFile>, threads: usize) -> Option<Places> {
    let m = m.filter(|m| m.threads == threads)?;
    let mut p = Places {
        node: vec![None; threads],
        package: vec![None; threads],
    };
    for pl in &m.mapping {
        p.node[pl.thread] = Some(pl.node);
        p.package[pl.thread] = Some(pl.package);
    }
    Some(p)
}

fn figure(id: &str, m: &SharingMatrix, counted: Counted, program: &str, places: &Places) -> String {
    let svg = heatmap::of_matrix(m, counted, program, Some(places), |h| h.svg());
    let one = if places.splits() {
        ""
    } else {
        "<p class=\"note\">Every thread is on one NUMA node: no node boundary to draw.</p>"
    };
    format!("<div id=\"{id}\">{svg}</div>{one}")
}

/// The exclusivity histograms and the top pairs, or None without data.
pub fn exclusivity(src: &Sources) -> Option<Section> {
    let mut body = String::new();
    if let Some(a) = &src.analyze {
        for d in &a.data {
            body += &histogram(&format!("exclusivity-trace-{}", d.page_size), "trace", d);
        }
        body += &pairs("top-pairs-trace", "trace", &a.top_pairs);
    }
    if let Some(r) = &src.run {
        if let Some(d) = &r.data {
            body += &histogram("exclusivity-run", "run (sampled)", d);
        }
        body += &pairs("top-pairs-run", "run (samples)", &r.matrix.top_pairs(10));
    }
    (!body.is_empty()).then(|| Section {
        id: "exclusivity",
        title: "Page exclusivity and top pairs".into(),
        body,
    })
}

/// kMAF Figure 2: pages by exclusivity (Eq. 3) rounded to 10 %, as a share of pages.
fn histogram(id: &str, from: &str, d: &DataMetrics) -> String {
    let labels: Vec<String> = (0..=10).map(|k| format!("{}%", k * 10)).collect();
    let pages = d.pages.max(1) as f64;
    let values: Vec<f64> = d
        .histogram
        .iter()
        .map(|&c| 100.0 * c as f64 / pages)
        .collect();
    let chart = Bars {
        id,
        labels: &labels,
        values: &values,
        y_title: "% of pages",
        x_title: "exclusivity (kMAF Eq. 3; 100% = one node makes every access)",
        colour: "#36c",
    };
    format!(
        "<h3>{} pages, {}: {} pages, average exclusivity {:.3} (kMAF Eq. 4)</h3>{}",
        size(d.page_size),
        esc(from),
        d.pages,
        d.avg_exclusivity,
        chart.svg()
    )
}

fn pairs(id: &str, from: &str, top: &[(usize, usize, u64)]) -> String {
    let rows: Vec<Vec<String>> = top
        .iter()
        .enumerate()
        .map(|(k, &(i, j, v))| vec![(k + 1).to_string(), chip(i), chip(j), v.to_string()])
        .collect();
    format!(
        "<h3>Top sharing pairs, {}</h3><div id=\"{id}\">{}</div>",
        esc(from),
        table("pairs", &["#", "thread", "thread", "sharing"], &rows)
    )
}

fn size(b: u64) -> String {
    match b {
        b if b >= 1 << 20 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}
