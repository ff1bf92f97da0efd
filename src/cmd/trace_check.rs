//! `tdmap trace-check`: validate a trace file's invariants and print its counts, as
//! drcachesim's invariant checker does. Exits 2 when the file breaks an invariant.

use crate::exit::{input, BAD_INPUT, OK};
use anyhow::Result;
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `tdmap trace-check`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The trace file to check.
    trace: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Runs `tdmap trace-check`.
pub fn run(args: Args) -> Result<i32> {
    if let Err(e) = std::fs::metadata(&args.trace) {
        return Err(input(format!(
            "{}: {e}; give the path of a trace file",
            args.trace.display()
        )));
    }
    let rep = tdmap_trace::check(&args.trace);
    super::say_ending(&args.trace.display().to_string(), rep.ending);
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&rep)?)?;
    } else {
        write_text(&mut out, &args.trace, &rep)?;
    }
    Ok(if rep.ok() { OK } else { BAD_INPUT })
}

fn write_text(
    out: &mut impl Write,
    path: &std::path::Path,
    rep: &tdmap_trace::CheckReport,
) -> Result<()> {
    writeln!(out, "trace     {}", path.display())?;
    if let Some(h) = &rep.header {
        writeln!(out, "version   {}  status {:?}", h.version, h.status)?;
        writeln!(out, "program   {}", h.program.join(" "))?;
        writeln!(out, "machine   {}", h.machine)?;
        writeln!(
            out,
            "pages     {} B, lines {} B, {} threads",
            h.page_size, h.line_size, h.threads
        )?;
    }
    writeln!(out, "frames    {}", rep.frames)?;
    writeln!(out, "accesses  {} ({} writes)", rep.accesses, rep.writes)?;
    writeln!(
        out,
        "faults    {} (nodes {:?})",
        rep.faults, rep.fault_nodes
    )?;
    writeln!(out, "per thread {:?}", rep.per_thread)?;
    for t in &rep.threads {
        writeln!(
            out,
            "thread {:>4}  tid {:>7}  cpu {}",
            t.id,
            t.os_tid,
            t.cpu.map_or("-".into(), |c| c.to_string())
        )?;
    }
    for p in &rep.processes {
        let parent = p.parent.map_or("-".into(), |q| q.to_string());
        writeln!(
            out,
            "process {:>3}  pid {:>7}  parent {parent:>3}  tasks {}..{}  {:?}",
            p.index,
            p.pid,
            p.first_task,
            p.first_task + p.tasks,
            p.status
        )?;
    }
    match rep.totals {
        Some(t) => writeln!(
            out,
            "end frame {} accesses, {} faults",
            t.accesses, t.faults
        )?,
        None => writeln!(out, "end frame missing (unfinished trace)")?,
    }
    for p in &rep.problems {
        match p.offset {
            Some(o) => writeln!(out, "PROBLEM at byte {o}: {}", p.message)?,
            None => writeln!(out, "PROBLEM: {}", p.message)?,
        }
    }
    writeln!(out, "{}", if rep.ok() { "ok" } else { "FAILED" })?;
    Ok(())
}
