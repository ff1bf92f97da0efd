//! `--mapping FILE`: a `tdmap map --format json` mapping (tdmap-map's `MappingFile`), as
//! the logical PU of each thread on this machine. A file of another format or version,
//! and a CPU this machine does not have, are refused before the program starts.

use crate::exit::input;
use anyhow::Result;
use std::path::Path;
use tdmap_topo::Topology;

/// The logical PU of each thread, in thread order.
pub fn read(path: &Path, topo: &Topology) -> Result<Vec<usize>> {
    let cpus = tdmap_map::MappingFile::read(path).map_err(input)?.os_cpus();
    to_pus(&cpus, topo).map_err(|why| input(format!("{}: {why}", path.display())))
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
