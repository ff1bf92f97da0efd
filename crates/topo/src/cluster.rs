//! Clusters: N hosts of one node type joined by a network, as one [`Topology`] whose top
//! level is the hosts. hwloc describes one host (live, preset, synthetic or XML); tdmap
//! replicates it below a `Host` level, so every mapping algorithm places ranks across
//! hosts first, then within each host's hierarchy. Host names come from `--hosts` (one
//! per line or Slurm nodelists, see [`parse_hosts`](crate::parse_hosts)).

use crate::model::{Level, Obj, ObjKind, Pu, Topology};
use crate::{Distances, DistancesSource, TopoError};

/// The most hosts a cluster may have.
pub const MAX_HOSTS: usize = 4096;

/// The most PUs a cluster may have in total (2^18): 4,096 hosts of 64 PUs. Each host is
/// still held to [`MAX_PUS`](crate::MAX_PUS), which bounds hwloc's work; tdmap builds
/// the copies itself in linear time.
pub const MAX_CLUSTER_PUS: usize = 1 << 18;

/// The most NUMA nodes in all hosts together: the distance matrix is nodes², 64 MiB here.
pub const MAX_CLUSTER_NODES: usize = 4096;

/// The network distance when the spec gives none: 5 × the host's largest node distance
/// (100 between hosts of 10/20 nodes), so that leaving a host always costs most.
pub fn default_network_distance(host: &Topology) -> u32 {
    5 * host.distances.values.iter().copied().max().unwrap_or(20)
}

/// `hosts` copies of `host` below a `Host` level, `net` the node distance between hosts;
/// `name` names the whole. Host h is named `host{h}` (see [`Topology::set_host_names`]).
pub fn cluster(host: &Topology, hosts: usize, net: u32, name: &str) -> Result<Topology, TopoError> {
    let too_big = |what: String| TopoError::TooBig {
        spec: name.to_string(),
        what,
    };
    let (np, nn) = (host.num_pus(), host.num_nodes());
    if hosts == 0 {
        return Err(TopoError::Cluster {
            spec: name.to_string(),
            why: "it has no host".into(),
        });
    }
    if hosts > MAX_HOSTS {
        return Err(too_big(format!("{hosts} hosts (at most {MAX_HOSTS})")));
    }
    if hosts * np > MAX_CLUSTER_PUS {
        return Err(too_big(format!(
            "{} PUs in all hosts (a cluster has at most {MAX_CLUSTER_PUS})",
            hosts * np
        )));
    }
    if hosts * nn > MAX_CLUSTER_NODES {
        return Err(too_big(format!(
            "{} NUMA nodes in all hosts (a cluster has at most {MAX_CLUSTER_NODES})",
            hosts * nn
        )));
    }
    let local_max = host.distances.values.iter().copied().max().unwrap_or(10);
    if net <= local_max {
        return Err(TopoError::Distances {
            why: format!(
                "the network distance {net} is not above the host's largest node distance {local_max}"
            ),
            nodes: nn,
        });
    }
    let per_kind = |kind: ObjKind| host.count(kind);
    let m = host.objects.len();
    let mut objects = Vec::with_capacity(1 + hosts * m);
    objects.push(Obj {
        kind: ObjKind::Machine,
        logical: 0,
        os: None,
        parent: None,
        children: (0..hosts).map(|h| 1 + h * m).collect(),
        pus: (0..hosts * np).collect(),
        cache: None,
        memory: None,
    });
    let mut nodes = Vec::with_capacity(hosts * nn);
    let mut pus = Vec::with_capacity(hosts * np);
    for h in 0..hosts {
        let base = 1 + h * m;
        for (i, o) in host.objects.iter().enumerate() {
            let kind = if i == 0 { ObjKind::Host } else { o.kind };
            let logical = if i == 0 {
                h
            } else {
                h * per_kind(o.kind) + o.logical
            };
            objects.push(Obj {
                kind,
                logical,
                os: o.os,
                parent: Some(o.parent.map_or(0, |p| base + p)),
                children: o.children.iter().map(|&c| base + c).collect(),
                pus: o.pus.iter().map(|&p| h * np + p).collect(),
                cache: o.cache,
                memory: o.memory,
            });
        }
        nodes.extend(host.nodes.iter().map(|&n| base + n));
        let (cores, packages) = (per_kind(ObjKind::Core), per_kind(ObjKind::Package));
        pus.extend(host.pus.iter().map(|p| Pu {
            os: p.os,
            node: h * nn + p.node,
            core: h * cores + p.core,
            package: h * packages.max(1) + p.package,
            host: h,
        }));
    }
    let n = hosts * nn;
    let mut rows = vec![vec![i64::from(net); n]; n];
    for h in 0..hosts {
        for a in 0..nn {
            for b in 0..nn {
                rows[h * nn + a][h * nn + b] = i64::from(host.distances.get(a, b));
            }
        }
    }
    let source = match host.distances.source {
        DistancesSource::Hwloc => DistancesSource::Given,
        s => s,
    };
    let mut t = Topology {
        name: name.to_string(),
        objects,
        pus,
        nodes,
        levels: Vec::new(),
        distances: Distances::from_rows(rows, source)?,
        latencies: host.latencies,
        hosts: (0..hosts).map(|h| format!("host{h}")).collect(),
        restricted: host.restricted.clone(),
    };
    t.levels = levels(host, hosts);
    Ok(t)
}

/// The cluster's levels: the machine, the hosts (with the kinds that a host's own top
/// level merges, e.g. its single package), then each host level with groups numbered
/// host by host.
fn levels(host: &Topology, hosts: usize) -> Vec<Level> {
    let np = host.num_pus();
    let mut out = vec![Level {
        kinds: vec![ObjKind::Machine],
        group_of_pu: vec![0; hosts * np],
        groups: 1,
    }];
    for (i, l) in host.levels.iter().enumerate() {
        let mut kinds = l.kinds.clone();
        if i == 0 {
            kinds.retain(|&k| k != ObjKind::Machine);
            kinds.insert(0, ObjKind::Host);
            if hosts == 1 {
                // One host splits nothing: it is the machine's level.
                out[0].kinds.extend(kinds);
                continue;
            }
        }
        let group_of_pu = (0..hosts)
            .flat_map(|h| l.group_of_pu.iter().map(move |&g| h * l.groups + g))
            .collect();
        out.push(Level {
            kinds,
            group_of_pu,
            groups: hosts * l.groups,
        });
    }
    out
}

impl Topology {
    /// Names the hosts (one name per host, in order).
    pub fn set_host_names(&mut self, names: Vec<String>) -> Result<(), crate::HostsError> {
        if names.len() != self.num_hosts() {
            return Err(crate::HostsError::Count {
                names: names.len(),
                hosts: self.num_hosts(),
            });
        }
        self.hosts = names;
        Ok(())
    }

    /// The logical PUs of host `h`, in order.
    pub fn pus_of_host(&self, h: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.num_pus()).filter(move |&p| self.pus[p].host == h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_places_hosts_above_each_hosts_hierarchy() {
        let host = crate::from_synthetic("package:2 core:2").unwrap();
        let c = cluster(&host, 3, 100, "c").unwrap();
        assert_eq!(c.num_pus(), 12);
        assert_eq!(c.num_nodes(), 3);
        assert_eq!(c.arities(), vec![3, 2, 2]);
        assert_eq!(c.levels[1].kinds[0], ObjKind::Host);
        assert_eq!(c.pus[5].host, 1);
        assert_eq!(c.pus[5].os, 1);
        assert_eq!(c.pu_distance(0, 1), 1);
        assert_eq!(c.pu_distance(0, 2), 2);
        assert_eq!(c.pu_distance(0, 4), 3);
        assert_eq!(c.distances.get(0, 1), 100);
        assert_eq!(c.host_name(11), "host2");
        assert_eq!(c.count(ObjKind::Package), 6);
        assert!(cluster(&host, 2, 10, "c").is_err());
        assert!(cluster(&host, MAX_HOSTS + 1, 100, "c").is_err());
    }
}
