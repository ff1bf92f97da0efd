//! `--machine SPEC`: one way to name a machine everywhere in tdmap.

use crate::discover::{self, preset::preset};
use crate::{TopoError, Topology};
use std::path::PathBuf;

/// A machine named on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MachineSpec {
    /// The machine tdmap runs on.
    Live,
    /// A preset name.
    Preset(String),
    /// An hwloc synthetic string (it contains ':').
    Synthetic(String),
    /// An hwloc XML file.
    Xml(PathBuf),
}

impl MachineSpec {
    /// Classifies a SPEC: a synthetic string contains ':', an existing file or a name
    /// ending in `.xml` is XML, anything else is a preset name.
    pub fn parse(spec: &str) -> MachineSpec {
        let spec = spec.trim();
        if spec.is_empty() || spec == "this" || spec == "live" {
            MachineSpec::Live
        } else if spec.ends_with(".xml")
            || spec.contains('/')
            || std::path::Path::new(spec).is_file()
        {
            MachineSpec::Xml(PathBuf::from(spec))
        } else if spec.contains(':') {
            MachineSpec::Synthetic(spec.to_string())
        } else {
            MachineSpec::Preset(spec.to_string())
        }
    }

    /// Builds the topology, with `distances` (`local:remote` or a matrix) replacing the
    /// machine's own when given.
    pub fn load(&self, distances: Option<&str>) -> Result<Topology, TopoError> {
        let topo = match self {
            MachineSpec::Live => discover::live()?,
            MachineSpec::Preset(name) => preset(name)?,
            MachineSpec::Synthetic(s) => discover::from_synthetic(s)?,
            MachineSpec::Xml(p) => discover::from_xml_file(p)?,
        };
        match distances {
            Some(d) => discover::with_distances(topo, d),
            None => Ok(topo),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_specs() {
        assert_eq!(MachineSpec::parse(""), MachineSpec::Live);
        assert_eq!(
            MachineSpec::parse("xeon-x7550-4s"),
            MachineSpec::Preset("xeon-x7550-4s".into())
        );
        assert_eq!(
            MachineSpec::parse("package:2 core:2"),
            MachineSpec::Synthetic("package:2 core:2".into())
        );
        assert_eq!(
            MachineSpec::parse("m.xml"),
            MachineSpec::Xml("m.xml".into())
        );
    }
}
