//! `--mapping FILE`: a `tdmap map --format json` mapping, as the logical PU of each
//! thread on this machine. A CPU this machine does not have is refused before the
//! program starts.

use crate::exit::input;
use anyhow::Result;
use std::path::Path;
use tdmap_topo::Topology;

/// The logical PU of each thread, in thread order.
pub fn read(path: &Path, topo: &Topology) -> Result<Vec<usize>> {
    let bad = |why: String| input(format!("--mapping {}: {why}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        bad(format!(
            "not JSON ({e}); write it with tdmap map --format json"
        ))
    })?;
    let entries = v["mapping"]
        .as_array()
        .ok_or_else(|| bad("no \"mapping\" array; write it with tdmap map --format json".into()))?;
    let mut cpus = vec![None; entries.len()];
    for e in entries {
        let (Some(t), Some(os)) = (e["thread"].as_u64(), e["os"].as_u64()) else {
            return Err(bad("each entry needs \"thread\" and \"os\"".into()));
        };
        let slot = cpus
            .get_mut(t as usize)
            .ok_or_else(|| bad(format!("thread {t} out of range")))?;
        *slot = Some(os as usize);
    }
    let cpus = cpus
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| bad("thread numbers must be 0..n without gaps".into()))?;
    to_pus(&cpus, topo).map_err(bad)
}

/// The logical PU of each OS CPU; an error names the first CPU this machine lacks.
fn to_pus(cpus: &[usize], topo: &Topology) -> Result<Vec<usize>, String> {
    cpus.iter()
        .map(|&c| {
            topo.pu_by_os(c).ok_or_else(|| {
                format!(
                    "names CPU {c}, which this machine does not have ({} PUs); make the mapping for this machine with tdmap map",
                    topo.num_pus()
                )
            })
        })
        .collect()
}
