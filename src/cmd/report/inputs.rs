//! `tdmap report`'s inputs: each file's kind is told by its typed header (a trace's
//! magic, or a JSON file's `"format"`), then the file is read by its owner's typed reader,
//! so a report never guesses at a field.

use crate::cmd::MachineArgs;
use crate::exit::input;
use anyhow::Result;
use std::io::Read;
use std::path::{Path, PathBuf};
use tdmap_format::Versioned;
use tdmap_map::MappingFile;
use tdmap_monitor::report::RunReport;
use tdmap_sharing::{AnalyzeReport, Grain, Metric};
use tdmap_sim::Comparison;

/// What the page is made from: at most one input of each kind.
#[derive(Debug, Default)]
pub struct Sources {
    /// A trace's analysis (`tdmap analyze --json`, or a trace analysed here).
    pub analyze: Option<AnalyzeReport>,
    /// A simulated comparison (`tdmap sim --json`).
    pub sim: Option<Comparison>,
    /// A run report (`tdmap run --json --report FILE`).
    pub run: Option<RunReport>,
    /// A mapping (`tdmap map --format json`).
    pub mapping: Option<MappingFile>,
    /// Each input and the kind it was read as, in the order given.
    pub read: Vec<(PathBuf, &'static str)>,
}

/// The kinds `tdmap report` reads, for messages.
const KINDS: &str = "a trace, or the JSON of tdmap analyze --json, tdmap sim --json, tdmap run --json --report FILE or tdmap map --format json";

impl Sources {
    /// Reads every input; a file of no known kind, or two of one kind, is bad input.
    pub fn read(paths: &[PathBuf], machine: &MachineArgs) -> Result<Sources> {
        let mut s = Sources::default();
        for p in paths {
            let kind = s.add(p, machine)?;
            s.read.push((p.clone(), kind));
        }
        Ok(s)
    }

    fn add(&mut self, path: &Path, machine: &MachineArgs) -> Result<&'static str> {
        let head = head(path)?;
        if head.starts_with(tdmap_trace::MAGIC) {
            let rep = analyze_trace(path, machine)?;
            return put(&mut self.analyze, rep, path, "trace");
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| input(format!("{}: {e}: give {KINDS}", path.display())))?;
        let format = probe(&text).ok_or_else(|| {
            input(format!(
                "{}: no tdmap \"format\" header: give {KINDS}",
                path.display()
            ))
        })?;
        match format.as_str() {
            AnalyzeReport::FORMAT => typed(&text, path, &mut self.analyze),
            Comparison::FORMAT => typed(&text, path, &mut self.sim),
            RunReport::FORMAT => typed(&text, path, &mut self.run),
            MappingFile::FORMAT => typed(&text, path, &mut self.mapping),
            other => Err(input(format!(
                "{}: format {other:?} is not one tdmap report shows: give {KINDS}",
                path.display()
            ))),
        }
    }

    /// The machine the inputs name: the mapping's, else the analysis's, else the
    /// simulation's; empty for a run alone (it ran on this machine).
    pub fn machine_name(&self) -> &str {
        let named = [
            self.mapping.as_ref().map(|m| m.machine.as_str()),
            self.analyze.as_ref().map(|a| a.machine.as_str()),
            self.sim.as_ref().map(|s| s.machine.as_str()),
        ];
        named.into_iter().flatten().next().unwrap_or("")
    }

    /// The program the inputs are of, for the page's title.
    pub fn program(&self) -> String {
        if let Some(a) = &self.analyze {
            return a.program.join(" ");
        }
        if let Some(r) = &self.run {
            return r.program.clone();
        }
        self.sim
            .as_ref()
            .map_or_else(String::new, |s| s.trace.clone())
    }
}

/// Reads `text` as a `T` with its owner's typed reader into `slot`.
fn typed<T: Versioned>(text: &str, path: &Path, slot: &mut Option<T>) -> Result<&'static str> {
    let value = tdmap_format::from_str(text, path).map_err(input)?;
    put(slot, value, path, T::FORMAT)
}

/// Stores `value` in `slot`, refusing a second input of one kind.
fn put<T>(slot: &mut Option<T>, value: T, path: &Path, kind: &'static str) -> Result<&'static str> {
    if slot.is_some() {
        return Err(input(format!(
            "{}: a second {kind} input: give at most one of each kind",
            path.display()
        )));
    }
    *slot = Some(value);
    Ok(kind)
}

/// The first bytes of `path`, to tell a trace from JSON.
fn head(path: &Path) -> Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(8);
    std::fs::File::open(path)
        .and_then(|f| f.take(8).read_to_end(&mut buf))
        .map_err(|e| input(format!("cannot read {}: {e}", path.display())))?;
    Ok(buf)
}

/// The `"format"` field of a JSON object, if it has one.
fn probe(text: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Probe {
        format: Option<String>,
    }
    serde_json::from_str::<Probe>(text).ok()?.format
}

/// A trace analysed as `tdmap analyze` does by default (both page sizes, accesses).
fn analyze_trace(path: &Path, machine: &MachineArgs) -> Result<AnalyzeReport> {
    let sizes = [4096, 2 << 20];
    let grain = Grain {
        page: 4096,
        block: None,
        sharers: None,
    };
    let t = crate::cmd::from_trace::model(path, machine, grain)?;
    let name = path.display().to_string();
    let setup = crate::cmd::analyze::setup(&name, &t.topo, &sizes, Metric::Accesses, 10);
    let mut rep = AnalyzeReport::new(&setup, &t.header, &t.model).map_err(input)?;
    rep.set_thread_nodes(t.nodes);
    rep.set_complete(t.complete);
    Ok(rep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_header_names_the_kind() {
        assert_eq!(
            probe(r#"{"format": "tdmap-sim", "x": 1}"#).as_deref(),
            Some("tdmap-sim")
        );
        assert_eq!(probe(r#"{"x": 1}"#), None);
        assert_eq!(probe("not json"), None);
    }
}
