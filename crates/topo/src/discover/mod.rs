//! Sources of a topology. Each backend produces an hwloc topology; [`hwloc::convert`]
//! turns it into the tdmap model, so all sources share one conversion.

mod components;
mod hwloc;
pub mod preset;
pub mod synthetic;
mod xml;

use crate::{Distances, TopoError, Topology};
use std::sync::{Mutex, MutexGuard};

pub(crate) use components::Source;
pub(crate) use hwloc::levels;
pub use synthetic::from_synthetic;
pub use xml::from_xml_file;

/// Held around every use of hwloc in this process, from building a topology to dropping
/// it: hwloc keeps global state behind its own locks (its component list, libxml2's
/// parser), and an XML file is first loaded in a forked child (see `xml`), which would
/// wait forever for a lock that another thread held at the fork.
static HWLOC: Mutex<()> = Mutex::new(());

/// Takes [`HWLOC`]; a panic while holding it leaves hwloc usable, so poison is ignored.
fn hwloc_lock() -> MutexGuard<'static, ()> {
    HWLOC.lock().unwrap_or_else(|e| e.into_inner())
}

/// The live machine, as hwloc discovers it. `TDMAP_FSROOT` moves the `/sys` root
/// (it is passed on to hwloc as `HWLOC_FSROOT`).
pub fn live() -> Result<Topology, TopoError> {
    let _hwloc = hwloc_lock();
    let root = tdmap_sys::FsRoot::from_env();
    if root != tdmap_sys::FsRoot::default() {
        std::env::set_var("HWLOC_FSROOT", root.path("/"));
    }
    components::select(Source::Live);
    let topo = hwlocality::Topology::new().map_err(|e| TopoError::Discovery(e.to_string()))?;
    hwloc::convert(&topo, "this machine")
}

/// Replaces a topology's distances, checking that they fit its node count.
pub fn with_distances(mut topo: Topology, text: &str) -> Result<Topology, TopoError> {
    topo.distances = Distances::parse(text, topo.num_nodes())?;
    Ok(topo)
}
