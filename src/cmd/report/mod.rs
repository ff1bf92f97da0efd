//! `tdmap report`: one self-contained HTML page (inline CSS, script and pictures, no
//! network) from what the other commands wrote: a trace or its analysis, a sim result, a
//! run report and a mapping, each known by its typed header. One file per section:
//! the machine with each thread in its PU (machine.rs), the sharing heatmaps and the
//! exclusivity histogram with the top pairs (sharing.rs), the SIMULATED comparison
//! (simulated.rs) and a run's timeline (timeline.rs); page.rs holds the page around them.

mod bars;
mod inputs;
mod machine;
mod page;
mod sharing;
mod simulated;
mod timeline;

use crate::exit::{input, OK};
use anyhow::Result;
use inputs::Sources;
use page::{esc, Section};
use std::io::Write;
use std::path::PathBuf;
use tdmap_topo::Topology;

/// Arguments of `tdmap report`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example:\n  tdmap analyze --json t.trace > a.json\n  tdmap sim --json t.trace > s.json\n  tdmap run --json --report r.json -- ./prog\n  tdmap map --trace t.trace --format json > m.json\n  tdmap report a.json s.json r.json m.json -o report.html"
)]
pub struct Args {
    /// The inputs, at most one of each kind: a trace (analysed here) or `tdmap analyze
    /// --json` output, `tdmap sim --json` output, a run report (`tdmap run --json
    /// --report FILE`) and a mapping (`tdmap map --format json`). Each is known by its
    /// header, whatever its name.
    #[arg(required = true, value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    /// The HTML file to write; it may not be one of the inputs.
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// Print what was written (the file, its inputs and sections) as JSON.
    #[arg(long)]
    json: bool,
    /// The machine to draw, instead of the one the inputs name (a mapping's, else the
    /// analysis's or the simulation's; for a run alone, this machine).
    #[command(flatten)]
    machine: super::MachineArgs,
}

/// Runs `tdmap report`.
pub fn run(args: Args) -> Result<i32> {
    let mut files = crate::paths::Files::new();
    for p in &args.inputs {
        files = files.reads("input", Some(p));
    }
    files
        .reads("--machine", args.machine.file().as_deref())
        .writes("--output", Some(&args.output))
        .check()?;
    let src = Sources::read(&args.inputs, &args.machine)?;
    let topo = args
        .machine
        .load_or_recorded(src.machine_name(), &args.inputs[0])?;
    let sections = sections(&src, &topo, args.machine.machine.is_some())?;
    let program = src.program();
    let title = if program.is_empty() {
        "tdmap report".to_string()
    } else {
        format!("tdmap report: {program}")
    };
    let read: Vec<(String, &str)> = src
        .read
        .iter()
        .map(|(p, k)| (p.display().to_string(), *k))
        .collect();
    let html = page::page(&title, &read, &sections);
    crate::paths::replace(&args.output, html.as_bytes()).map_err(|e| {
        input(format!(
            "--output {}: {e}: give a writable path",
            args.output.display()
        ))
    })?;
    if args.json {
        let out = serde_json::json!({
            "written": args.output.display().to_string(),
            "bytes": html.len(),
            "inputs": read.iter().map(|(p, k)| serde_json::json!({"path": p, "kind": k})).collect::<Vec<_>>(),
            "sections": sections.iter().map(|s| s.id).collect::<Vec<_>>(),
        });
        writeln!(std::io::stdout(), "{}", serde_json::to_string_pretty(&out)?)?;
    } else {
        eprintln!(
            "tdmap: wrote {} ({} sections); open it in a browser",
            args.output.display(),
            sections.len()
        );
    }
    Ok(OK)
}

/// Every section the inputs allow, in reading order.
fn sections(src: &Sources, topo: &Topology, named: bool) -> Result<Vec<Section>> {
    let mut out = vec![machine_section(src, topo, named)];
    out.extend(sharing::heatmaps(src, topo));
    out.extend(sharing::exclusivity(src));
    if let Some(c) = &src.sim {
        out.push(simulated::section(c).map_err(input)?);
    }
    if let Some(r) = &src.run {
        out.push(timeline::section(r));
    }
    Ok(out)
}

/// The machine, with the threads where the mapping puts them, else where the run planned
/// them (when the machine drawn is the one it ran on), else listed by assumed node.
fn machine_section(src: &Sources, topo: &Topology, named: bool) -> Section {
    let (threads, note) = placed(src, topo, named);
    let mut body = machine::boxes(topo, &threads);
    body += &format!("<p class=\"note\">{note}</p>");
    Section {
        id: "machine",
        title: "Machine and thread placement".into(),
        body,
    }
}

fn placed(src: &Sources, topo: &Topology, named: bool) -> (Vec<(usize, usize)>, String) {
    let fits = |pu: usize| pu < topo.num_pus();
    if let Some(m) = &src.mapping {
        if m.machine == topo.name && m.mapping.iter().all(|p| fits(p.pu)) {
            let t = m.mapping.iter().map(|p| (p.thread, p.pu)).collect();
            let note = format!(
                "Threads where the mapping ({}, cost {:.4e}; compact {:.4e}, random {:.4e}) puts them.",
                esc(&m.algorithm),
                m.cost,
                m.compact_cost,
                m.random_cost
            );
            return (t, note);
        }
        return (
            Vec::new(),
            format!(
                "The mapping is for machine {}, not this drawing's {}: threads not placed.",
                esc(&m.machine),
                esc(&topo.name)
            ),
        );
    }
    if let Some(r) = &src.run {
        if src.machine_name().is_empty() && !named {
            let t = r
                .threads
                .iter()
                .filter_map(|t| Some((t.thread, topo.pu_by_os(t.planned_cpu?)?)))
                .collect::<Vec<_>>();
            let note = if t.is_empty() {
                "The run placed no thread (one NUMA node, or --dry-run before any plan)."
            } else {
                "Threads on the CPU tdmap run last planned for them."
            };
            return (t, note.into());
        }
    }
    if let Some(a) = &src.analyze {
        let mut by_node = vec![Vec::new(); topo.num_nodes()];
        for (t, &n) in a.thread_nodes.iter().enumerate() {
            if let Some(v) = by_node.get_mut(n as usize) {
                v.push(machine::chip(t));
            }
        }
        let list: Vec<String> = by_node
            .iter()
            .enumerate()
            .filter(|(_, v)| !v.is_empty())
            .map(|(n, v)| format!("node L#{n}: {}", v.join(" ")))
            .collect();
        return (
            Vec::new(),
            format!(
                "No mapping given: the analysis assumed these nodes ({}); give a mapping (tdmap map --format json) to place threads on PUs.",
                list.join("; ")
            ),
        );
    }
    (Vec::new(), "No placement in the inputs.".into())
}
