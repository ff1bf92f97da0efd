//! The simulated section: `tdmap sim`'s chart and table, labelled SIMULATED everywhere,
//! since no figure in it was measured.

use super::page::{esc, png_data_url, table, Section};
use anyhow::Result;
use tdmap_sim::Comparison;

/// The section of comparison `c`.
pub fn section(c: &Comparison) -> Result<Section> {
    let png = crate::cmd::sim::chart_png(c)?;
    let ratio = |v: f64| {
        if v.is_finite() {
            format!("{v:.3}")
        } else {
            "inf".into()
        }
    };
    let rows: Vec<Vec<String>> = c
        .results
        .iter()
        .map(|r| {
            vec![
                esc(&r.policy),
                ratio(r.normalised.time),
                ratio(r.normalised.l3_misses),
                ratio(r.normalised.interchip),
                format!("{:.1}%", 100.0 * r.remote_ratio),
            ]
        })
        .collect();
    let head = ["policy", "time", "L3 misses", "inter-chip", "remote reads"];
    let body = format!(
        "<p class=\"simulated\">SIMULATED: tdmap-sim's model of {} replaying {} ({} threads, {} accesses{}); not a measurement.</p>\n<img id=\"sim-chart\" class=\"chart\" alt=\"SIMULATED policy comparison\" src=\"{}\">\n<p class=\"note\">Each figure relative to the <code>{}</code> policy (1.0); lower is better.</p>\n<div id=\"sim-table\">{}</div>",
        esc(&c.machine),
        esc(&c.trace),
        c.threads,
        c.accesses,
        if c.complete { "" } else { ", incomplete trace" },
        png_data_url(&png),
        esc(&c.baseline),
        table("sim", &head, &rows)
    );
    Ok(Section {
        id: "simulated",
        title: "Policies compared (SIMULATED)".into(),
        body,
    })
}
