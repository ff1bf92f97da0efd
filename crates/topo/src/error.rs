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
    /// An XML file could not be read or parsed by hwloc.
    #[error("cannot load hwloc XML {path}: {why}; export one with `lstopo machine.xml`")]
    Xml {
        /// The file.
        path: PathBuf,
        /// Why.
        why: String,
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
    #[error("invalid distance matrix: {why}; give \"local:remote\" (e.g. 10:20) or a square matrix with rows separated by ';'")]
    Distances {
        /// What is wrong.
        why: String,
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
