//! `--mapping FILE`: a `tdmap map --format json` mapping (tdmap-map's `MappingFile`), as
//! the logical PU of each thread on this machine, or of each task (process rank or
//! index, thread) when every entry names one (`task`, for programs of several
//! processes). A file of another format or version,
//! and a CPU this machine does not have, are refused before the program starts.

use crate::exit::input;
use anyhow::Result;
use std::path::Path;
use tdmap_map::TaskName;
use tdmap_topo::Topology;

/// A static mapping, by thread index or by task.
#[derive(Debug, Clone)]
pub enum Fixed {
    /// The logical PU of each thread, in thread order.
    Threads(Vec<usize>),
    /// The logical PU of each task named.
    Tasks(Vec<(TaskName, usize)>),
}

/// The file's mapping on this machine.
pub fn read(path: &Path, topo: &Topology) -> Result<Fixed> {
    let file = tdmap_map::MappingFile::read(path).map_err(input)?;
    let named = |why| input(format!("{}: {why}", path.display()));
    match file.task_cpus() {
        Some(tasks) => {
            let cpus: Vec<usize> = tasks.iter().map(|t| t.1).collect();
            let pus = to_pus(&cpus, topo).map_err(named)?;
            Ok(Fixed::Tasks(tasks.iter().map(|t| t.0).zip(pus).collect()))
        }
        None => Ok(Fixed::Threads(
            to_pus(&file.os_cpus(), topo).map_err(named)?,
        )),
    }
}

/// The logical PU of each OS CPU; an error names the first CPU this machine lacks.
fn to_pus(cpus: &[usize], topo: &Topology) -> Result<Vec<usize>, String> {
    cpus.iter()
        .map(|&c| {
            topo.pu_by_os(c).ok_or_else(|| {
                format!(
                    "the mapping names CPU {c}, which this machine does not have ({} PUs); make the mapping for this machine with tdmap map",
                    topo.num_pus()
                )
            })
        })
        .collect()
}
