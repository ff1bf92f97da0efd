//! `--mapping FILE`, as `tdmap exec` and `tdmap run` apply it: a `tdmap map --format
//! json` file (tdmap-map's `MappingFile`), checked against this machine (its
//! fingerprint and CPUs) and the CPUs this process may use (tdmap-map's `check_fit`)
//! before the program starts. A refusal is bad input (exit 2), and the program has not
//! run; what `--force` or `--best-effort` let through is said on stderr, one line each.

use crate::exit::input;
use anyhow::{Context, Result};
use std::path::Path;
use tdmap_map::{Leniency, MappingFile, TaskName};
use tdmap_topo::Topology;

/// A static mapping on this machine (`tdmap run --mapping`), by thread index or by task.
#[derive(Debug, Clone)]
pub enum Fixed {
    /// The logical PU of each thread, in thread order.
    Threads(Vec<usize>),
    /// The logical PU of each task named, when every entry names one (`task`: process
    /// rank or index, thread in it), for programs of several processes.
    Tasks(Vec<(TaskName, usize)>),
}

/// `file`'s mapping as logical PUs of `topo`, once [`check`] has given its CPUs (`cpus`,
/// in thread order).
pub fn fixed(path: &Path, file: &MappingFile, cpus: &[usize], topo: &Topology) -> Result<Fixed> {
    match file.task_cpus() {
        Some(tasks) => {
            let os: Vec<usize> = tasks.iter().map(|t| t.1).collect();
            let pus = to_pus(path, &os, topo)?;
            Ok(Fixed::Tasks(tasks.iter().map(|t| t.0).zip(pus).collect()))
        }
        None => Ok(Fixed::Threads(to_pus(path, cpus, topo)?)),
    }
}

/// Reads `path`: a bad file is bad input.
pub fn read(path: &Path) -> Result<MappingFile> {
    MappingFile::read(path).map_err(input)
}

/// Checks `file` (read from `path`) against this machine, and against `allowed` (the
/// CPUs this process may use; None: every CPU of the machine); returns the OS CPU of
/// each entry.
pub fn check(
    path: &Path,
    file: &MappingFile,
    allowed: Option<&[usize]>,
    how: Leniency,
) -> Result<Vec<usize>> {
    let whole = tdmap_topo::MachineSpec::Live
        .load(None)
        .context("cannot read this machine's topology")?;
    let fitted = tdmap_map::check_fit(file, &whole, allowed, how)
        .map_err(|e| input(format!("{}: {e}", path.display())))?;
    for w in &fitted.warnings {
        eprintln!("tdmap: {}: {w}", path.display());
    }
    Ok(fitted.cpus)
}

/// The logical PU of each OS CPU in `topo`; an error names the first CPU it lacks.
pub fn to_pus(path: &Path, cpus: &[usize], topo: &Topology) -> Result<Vec<usize>> {
    cpus.iter()
        .map(|&c| {
            topo.pu_by_os(c).ok_or_else(|| {
                input(format!(
                    "{}: the mapping names CPU {c}, which is not among the {} PUs tdmap may use here; make the mapping for this machine with tdmap map",
                    path.display(),
                    topo.num_pus()
                ))
            })
        })
        .collect()
}
