//! Sources of a topology. Each backend produces an hwloc topology; [`hwloc::convert`]
//! turns it into the tdmap model, so all sources share one conversion.

mod hwloc;
pub mod preset;

use crate::{Distances, TopoError, Topology};
use hwlocality::topology::builder::BuildFlags;
use std::path::Path;

/// The live machine, as hwloc discovers it. `TDMAP_FSROOT` moves the `/sys` root
/// (it is passed on to hwloc as `HWLOC_FSROOT`).
pub fn live() -> Result<Topology, TopoError> {
    let root = tdmap_sys::FsRoot::from_env();
    if root != tdmap_sys::FsRoot::default() {
        std::env::set_var("HWLOC_FSROOT", root.path("/"));
    }
    let topo = hwlocality::Topology::new().map_err(|e| TopoError::Discovery(e.to_string()))?;
    hwloc::convert(&topo, "this machine")
}

/// A machine from an hwloc synthetic description, e.g. `package:2 numa:2 core:4 pu:2`.
/// hwloc wants PUs last; a string that stops above them gets one PU per core.
pub fn from_synthetic(spec: &str) -> Result<Topology, TopoError> {
    let bad = |why: String| TopoError::Synthetic {
        spec: spec.to_string(),
        why,
    };
    let last = spec.split_whitespace().last().unwrap_or("");
    let full = if last.to_ascii_lowercase().starts_with("pu:") {
        spec.to_string()
    } else {
        format!("{spec} pu:1")
    };
    let topo = hwlocality::Topology::builder()
        .from_synthetic(&full)
        .map_err(|_| bad("hwloc rejected it".into()))?
        .with_flags(BuildFlags::empty())
        .map_err(|e| bad(e.to_string()))?
        .build()
        .map_err(|e| bad(e.to_string()))?;
    hwloc::convert(&topo, spec)
}

/// A machine from an hwloc XML export (`lstopo machine.xml`).
pub fn from_xml_file(path: &Path) -> Result<Topology, TopoError> {
    let bad = |why: String| TopoError::Xml {
        path: path.to_path_buf(),
        why,
    };
    if !path.is_file() {
        return Err(bad("no such file".into()));
    }
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    if !text.trim_start().starts_with("<?xml") && !text.trim_start().starts_with("<topology") {
        return Err(bad("not an XML document".into()));
    }
    let topo = hwlocality::Topology::builder()
        .from_xml(&text)
        .map_err(|_| bad("hwloc rejected its content".into()))?
        .build()
        .map_err(|_| bad("hwloc rejected its content".into()))?;
    hwloc::convert(&topo, &path.display().to_string())
}

/// Replaces a topology's distances, checking that they fit its node count.
pub fn with_distances(mut topo: Topology, text: &str) -> Result<Topology, TopoError> {
    topo.distances = Distances::parse(text, topo.num_nodes())?;
    Ok(topo)
}
