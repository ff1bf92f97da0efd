//! The machine: a NUMA topology tree with caches, node distances and the NUMA factor.
//!
//! This is the "numarch" module of Minas (§3.3) built on hwloc. Every other part of tdmap
//! (mapping, simulation, policies) sees the machine only through [`Topology`]. A topology
//! comes from the live machine, an hwloc synthetic string, an hwloc XML export or a named
//! preset of the papers' machines; [`MachineSpec`] names any of them.

#![forbid(unsafe_code)]

mod cluster;
mod cpulist;
mod discover;
mod distances;
mod error;
mod fingerprint;
mod hosts;
mod model;
mod render;
mod restrict;
mod spec;

pub use cluster::{
    cluster, default_network_distance, MAX_CLUSTER_NODES, MAX_CLUSTER_PUS, MAX_HOSTS,
};
pub use cpulist::cpu_list;
pub use discover::preset::{preset, preset_names, NEHALEM_EX, PRESETS};
pub use discover::synthetic::{check_size as check_synthetic, MAX_ARITY, MAX_PUS};
pub use discover::{from_synthetic, from_xml_file, live, with_distances};
pub use distances::{Distances, DistancesSource};
pub use error::TopoError;
pub use fingerprint::Fingerprint;
pub use hosts::{expand_nodelist, parse_hosts, HostsError};
pub use model::{CacheInfo, Latencies, Level, Obj, ObjId, ObjKind, Pu, Restriction, Topology};
pub use render::{render_json, render_text};
pub use spec::MachineSpec;
