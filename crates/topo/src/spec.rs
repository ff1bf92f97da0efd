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
    /// `cluster:Nx(HOST)[,net=D]`: N hosts like HOST (any other spec), D apart.
    Cluster {
        /// Number of hosts.
        hosts: usize,
        /// Each host's machine.
        host: Box<MachineSpec>,
        /// The node distance between hosts; default [`crate::default_network_distance`].
        net: Option<u32>,
    },
    /// A `cluster:` spec that does not parse, with the reason.
    BadCluster(String, String),
}

impl MachineSpec {
    /// Classifies a SPEC: a synthetic string contains ':', an existing file or a name
    /// ending in `.xml` is XML, anything else is a preset name.
    pub fn parse(spec: &str) -> MachineSpec {
        let spec = spec.trim();
        if let Some(rest) = spec.strip_prefix("cluster:") {
            return parse_cluster(rest)
                .unwrap_or_else(|why| MachineSpec::BadCluster(spec.to_string(), why));
        }
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

    /// True when the live machine is part of it (alone or as a cluster's hosts).
    pub fn is_live(&self) -> bool {
        match self {
            MachineSpec::Live => true,
            MachineSpec::Cluster { host, .. } => host.is_live(),
            _ => false,
        }
    }

    /// Builds the topology, with `distances` (`local:remote` or a matrix) replacing the
    /// machine's own when given.
    pub fn load(&self, distances: Option<&str>) -> Result<Topology, TopoError> {
        self.load_within(distances, None)
    }

    /// [`MachineSpec::load`], with the live machine (alone or as a cluster's host)
    /// restricted to the PUs whose OS indexes are `allowed` ([`Topology::restrict`]).
    pub fn load_within(
        &self,
        distances: Option<&str>,
        allowed: Option<&[usize]>,
    ) -> Result<Topology, TopoError> {
        let topo = match self {
            MachineSpec::Live => match allowed {
                Some(a) => discover::live()?.restrict(a)?,
                None => discover::live()?,
            },
            MachineSpec::Preset(name) => preset(name)?,
            MachineSpec::Synthetic(s) => discover::from_synthetic(s)?,
            MachineSpec::Xml(p) => discover::from_xml_file(p)?,
            MachineSpec::Cluster { hosts, host, net } => {
                let one = host.load_within(distances, allowed)?;
                let net = net.unwrap_or_else(|| crate::default_network_distance(&one));
                return crate::cluster(&one, *hosts, net, &self.to_string());
            }
            MachineSpec::BadCluster(spec, why) => {
                return Err(TopoError::Cluster {
                    spec: spec.clone(),
                    why: why.clone(),
                })
            }
        };
        match distances {
            Some(d) => discover::with_distances(topo, d),
            None => Ok(topo),
        }
    }
}

/// `Nx(HOST)[,net=D]`, after `cluster:`.
fn parse_cluster(rest: &str) -> Result<MachineSpec, String> {
    let (count, after) = rest
        .split_once("x(")
        .ok_or("no \"x(\" after the host count")?;
    let hosts: usize = count
        .trim()
        .parse()
        .ok()
        .filter(|&h| h > 0)
        .ok_or_else(|| format!("{count:?} is not a host count of at least 1"))?;
    let close = after.rfind(')').ok_or("no closing ')'")?;
    let (inner, tail) = (&after[..close], after[close + 1..].trim());
    if inner.trim().is_empty() || inner.trim_start().starts_with("cluster:") {
        return Err("the host must be a preset, synthetic string, XML file or live".into());
    }
    let net = match tail {
        "" => None,
        t => Some(
            t.strip_prefix(",net=")
                .and_then(|d| d.trim().parse::<u32>().ok())
                .filter(|&d| d > 0)
                .ok_or_else(|| format!("{t:?} after the host is not \",net=D\" with D > 0"))?,
        ),
    };
    Ok(MachineSpec::Cluster {
        hosts,
        host: Box::new(MachineSpec::parse(inner)),
        net,
    })
}

impl std::fmt::Display for MachineSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MachineSpec::Live => f.write_str("live"),
            MachineSpec::Preset(s) | MachineSpec::Synthetic(s) => f.write_str(s),
            MachineSpec::Xml(p) => write!(f, "{}", p.display()),
            MachineSpec::Cluster { hosts, host, net } => {
                write!(f, "cluster:{hosts}x({host})")?;
                match net {
                    Some(d) => write!(f, ",net={d}"),
                    None => Ok(()),
                }
            }
            MachineSpec::BadCluster(s, _) => f.write_str(s),
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
        assert_eq!(
            MachineSpec::parse("cluster:4x(package:1 core:64),net=200"),
            MachineSpec::Cluster {
                hosts: 4,
                host: Box::new(MachineSpec::Synthetic("package:1 core:64".into())),
                net: Some(200)
            }
        );
        for bad in [
            "cluster:4(core:2)",
            "cluster:x(core:2)",
            "cluster:2x(core:2),net=0",
            "cluster:2x()",
        ] {
            let err = MachineSpec::parse(bad).load(None).unwrap_err().to_string();
            assert!(err.contains("cluster:Nx(HOST)"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_cluster_spec_builds_hosts_of_its_machine() {
        let t = MachineSpec::parse("cluster:4x(core:64)")
            .load(None)
            .unwrap();
        assert_eq!(t.num_pus(), 256);
        assert_eq!(t.num_hosts(), 4);
        assert_eq!(t.distances.get(0, 3), 50);
        assert_eq!(t.name, "cluster:4x(core:64)");
    }
}
