//! Errors when naming, loading or checking a machine; each names the input and the fix.

use std::path::PathBuf;

/// Why a topology could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TopoError {
    /// hwloc rejected a synthetic description.
    #[error("invalid hwloc synthetic string {spec:?}: {why}; expected e.g. \"package:2 numa:2 core:4 pu:2\"")]
    Synthetic {
        /// The string given.
        spec: String,
        /// hwloc's reason.
        why: String,
    },
    /// A synthetic machine is over tdmap's size limits, which keep hwloc from running for
    /// minutes ([`MAX_PUS`](crate::MAX_PUS) PUs, [`MAX_ARITY`](crate::MAX_ARITY) per level).
    #[error(
        "machine {spec:?} is too big: {what}; tdmap's limits are {} PUs in total and {} children per object at each level, so that hwloc builds it in seconds",
        crate::MAX_PUS,
        crate::MAX_ARITY
    )]
    TooBig {
        /// The string given.
        spec: String,
        /// Which limit it passes.
        what: String,
    },
    /// A `cluster:` spec that does not parse.
    #[error("invalid cluster {spec:?}: {why}; a cluster is cluster:Nx(HOST) or cluster:Nx(HOST),net=D with HOST a preset, synthetic string, XML file or live, e.g. \"cluster:4x(xeon-x7550-4s),net=100\"")]
    Cluster {
        /// The spec given.
        spec: String,
        /// What is wrong.
        why: String,
    },
    /// An XML file could not be read or parsed by hwloc.
    #[error("cannot load hwloc XML {path}: {why}; export one with `lstopo machine.xml`")]
    Xml {
        /// The file.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// hwloc crashed (or hung) reading an XML file, in the child process that reads it
    /// first so that tdmap survives.
    #[error("hwloc could not read {path}: {why} (it crashed {hwloc}; check the file with lstopo or re-export it)")]
    HwlocCrashed {
        /// The file.
        path: PathBuf,
        /// The signal or time-out, and hwloc's last message.
        why: String,
        /// The hwloc release.
        hwloc: &'static str,
    },
    /// No preset has that name.
    #[error("unknown machine {name:?}: give a preset ({presets}), an hwloc synthetic string containing ':', or an hwloc XML file")]
    UnknownMachine {
        /// The name given.
        name: String,
        /// The preset names, comma-separated.
        presets: String,
    },
    /// A distance matrix is malformed.
    #[error("invalid distance matrix: {why}; {}", crate::Distances::suggestion(*.nodes))]
    Distances {
        /// What is wrong.
        why: String,
        /// The machine's NUMA nodes, for the suggestion.
        nodes: usize,
    },
    /// hwloc could not discover the live machine.
    #[error("cannot discover this machine with hwloc: {0}")]
    Discovery(String),
    /// The topology hwloc gave has no PU or is otherwise unusable.
    #[error("unusable topology {name}: {why}")]
    Unusable {
        /// Which machine.
        name: String,
        /// Why.
        why: String,
    },
}
