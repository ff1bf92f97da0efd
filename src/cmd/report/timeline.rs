//! The run's timeline: per period of `tdmap run`'s loop, the samples that came in, the
//! threads it moved and the pages it moved (planned ones under --dry-run, said so).

use super::bars::Bars;
use super::page::{esc, Section};
use tdmap_monitor::report::RunReport;
use tdmap_monitor::Period;

/// The section of run `r`, which says so when the report holds no timeline.
pub fn section(r: &RunReport) -> Section {
    let t = &r.timeline;
    let body = if t.is_empty() {
        "<p id=\"timeline-empty\" class=\"note\">This run report has no timeline (written by an older tdmap): run tdmap run --json --report FILE again.</p>".to_string()
    } else {
        charts(r)
    };
    Section {
        id: "timeline",
        title: "Run timeline".into(),
        body,
    }
}

/// Reads one count of a period; the flag says the run was a dry run (planned counts).
type Count = fn(&Period, bool) -> u64;

fn charts(r: &RunReport) -> String {
    let t = &r.timeline;
    let labels: Vec<String> = t.iter().map(|p| format!("{}", p.end_ms)).collect();
    let planned = if r.dry_run { " planned (dry run)" } else { "" };
    let series: [(&str, String, Count, &str); 3] = [
        (
            "timeline-samples",
            "page-fault samples".into(),
            |p, _| p.samples,
            "#555",
        ),
        (
            "timeline-migrations",
            format!("thread migrations{planned}"),
            |p, dry| if dry { p.pins_planned } else { p.pins },
            "#c33",
        ),
        (
            "timeline-pages",
            format!("pages moved{planned}"),
            |p, dry| if dry { p.moves_planned } else { p.pages_moved },
            "#36c",
        ),
    ];
    let mut s = format!(
        "<p>{} periods of {} ms, {} samples, mode {}, program exit code {}.</p><div id=\"timeline-chart\">",
        t.len(),
        r.period_ms,
        r.samples.taken,
        esc(&r.mode),
        r.exit_code
    );
    for (id, title, get, colour) in series {
        let values: Vec<f64> = t.iter().map(|p| get(p, r.dry_run) as f64).collect();
        let chart = Bars {
            id,
            labels: &labels,
            values: &values,
            y_title: &format!("{title} per period"),
            x_title: "end of period (ms since the program started)",
            colour,
        };
        s += &chart.svg();
    }
    s + "</div>"
}
