//! `tdmap topo`: print a machine's topology (the numarch module of Minas).

use crate::exit::{input, OK};
use anyhow::Result;
use std::io::Write;

/// Arguments of `tdmap topo`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    machine: super::MachineArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// List the preset machines and exit.
    #[arg(long)]
    list_presets: bool,
}

/// Runs `tdmap topo`.
pub fn run(args: Args) -> Result<i32> {
    let mut out = std::io::stdout().lock();
    if args.list_presets {
        for p in tdmap_topo::PRESETS {
            writeln!(out, "{:<18} {}", p.name, p.about)?;
        }
        return Ok(OK);
    }
    let topo = args.machine.load().map_err(input)?;
    if args.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&tdmap_topo::render_json(&topo))?
        )?;
    } else {
        write!(out, "{}", tdmap_topo::render_text(&topo))?;
    }
    Ok(OK)
}
