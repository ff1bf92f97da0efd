//! The topology model: an hwloc-like object tree plus the flattened levels that the
//! mapping algorithms and the simulator work on.

use crate::distances::Distances;
use serde::{Deserialize, Serialize};

/// The index of an object in [`Topology::objects`].
pub type ObjId = usize;

/// The kind of a topology object, from the machine down to a hardware thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum ObjKind {
    /// The whole machine (for a cluster: all its hosts).
    Machine,
    /// One host of a cluster, below the cluster's machine and above its own hierarchy.
    Host,
    /// A processor socket.
    Package,
    /// An hwloc group (e.g. a die, or a set of cores sharing a NUMA node).
    Group,
    /// A NUMA memory node.
    NumaNode,
    /// A level-3 cache.
    L3,
    /// A level-2 cache.
    L2,
    /// A level-1 data cache.
    L1,
    /// A physical core.
    Core,
    /// A processing unit: a hardware thread.
    Pu,
}

impl ObjKind {
    /// The name hwloc's lstopo prints for this kind.
    pub fn name(self) -> &'static str {
        match self {
            ObjKind::Machine => "Machine",
            ObjKind::Host => "Host",
            ObjKind::Package => "Package",
            ObjKind::Group => "Group",
            ObjKind::NumaNode => "NUMANode",
            ObjKind::L3 => "L3",
            ObjKind::L2 => "L2",
            ObjKind::L1 => "L1d",
            ObjKind::Core => "Core",
            ObjKind::Pu => "PU",
        }
    }
}

/// The attributes of a cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CacheInfo {
    /// 1, 2 or 3.
    pub level: u8,
    /// Size in bytes.
    pub size: u64,
    /// Line size in bytes.
    pub line: u32,
    /// Associativity (ways), 0 when unknown.
    pub ways: u32,
}

/// One object of the tree.
#[derive(Debug, Clone, Serialize)]
pub struct Obj {
    /// What it is.
    pub kind: ObjKind,
    /// Logical index among objects of its kind (hwloc's L#).
    pub logical: usize,
    /// OS index (hwloc's P#), where the OS gives one.
    pub os: Option<usize>,
    /// Parent object, `None` for the machine.
    #[serde(skip)]
    pub parent: Option<ObjId>,
    /// Children, NUMA nodes first as lstopo prints them.
    pub children: Vec<ObjId>,
    /// Logical indexes of the PUs below it.
    pub pus: Vec<usize>,
    /// Cache attributes, for caches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheInfo>,
    /// Local memory in bytes, for NUMA nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<u64>,
}

/// A hardware thread, with its place in every level.
#[derive(Debug, Clone, Serialize)]
pub struct Pu {
    /// OS index, as sched_setaffinity wants it.
    pub os: usize,
    /// Logical index of its NUMA node.
    pub node: usize,
    /// Logical index of its core.
    pub core: usize,
    /// Logical index of its package (0 when the machine has none).
    pub package: usize,
    /// Its host in a cluster (0 on a single machine).
    pub host: usize,
}

/// One level of the flattened hierarchy: a partition of the PUs into groups.
///
/// Adjacent hwloc levels that split the PUs identically (e.g. L2, L1d and Core with one
/// of each per core) are one level here, named by all their kinds.
#[derive(Debug, Clone, Serialize)]
pub struct Level {
    /// The hwloc kinds merged into this level, outermost first.
    pub kinds: Vec<ObjKind>,
    /// The group of each PU (by logical index) at this level.
    pub group_of_pu: Vec<usize>,
    /// How many groups the level has.
    pub groups: usize,
}

impl Level {
    /// A short name such as `L2+L1d+Core`.
    pub fn name(&self) -> String {
        let names: Vec<&str> = self.kinds.iter().map(|k| k.name()).collect();
        names.join("+")
    }
}

/// Access latencies in cycles, where a preset or the user gives them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Latencies {
    /// L1 hit.
    pub l1: f64,
    /// L2 hit.
    pub l2: f64,
    /// L3 hit (0 when there is no L3).
    pub l3: f64,
    /// Local memory access; a remote one is this × distance / local distance.
    pub mem_local: f64,
    /// A cache-to-cache transfer between packages, on top of the local cost.
    pub interchip: f64,
    /// Clock frequency in GHz, to turn cycles into time.
    pub ghz: f64,
}

/// A machine: the object tree, the flattened levels, the PUs and the node distances.
#[derive(Debug, Clone, Serialize)]
pub struct Topology {
    /// Where it came from: a preset name, a synthetic string, an XML path or "this machine".
    pub name: String,
    /// All objects; index 0 is the machine.
    pub objects: Vec<Obj>,
    /// The PUs by logical index.
    pub pus: Vec<Pu>,
    /// The NUMA nodes by logical index, as object ids.
    pub nodes: Vec<ObjId>,
    /// The levels from the machine (one group) down to the PUs (one group each).
    pub levels: Vec<Level>,
    /// Node distances (logical node order), as the ACPI SLIT gives them.
    pub distances: Distances,
    /// Latencies, where known.
    pub latencies: Option<Latencies>,
    /// The host names, one per host: `localhost` on a single machine; a cluster's from
    /// `--hosts`, else `host0`, `host1`, ...
    pub hosts: Vec<String>,
    /// Set when this is the live machine restricted to the CPUs tdmap may use.
    pub restricted: Option<Restriction>,
}

/// The live machine seen through the CPUs tdmap may use: its own CPU binding
/// (`sched_getaffinity`: taskset, cgroups, a Slurm step) intersected with hwloc's allowed
/// set (hwloc drops disallowed PUs itself; it does not see taskset).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Restriction {
    /// OS indexes of the PUs kept.
    pub allowed: Vec<usize>,
    /// How many PUs the machine has.
    pub of: usize,
    /// The whole machine's fingerprint, which mapping files carry.
    pub machine: crate::Fingerprint,
}

impl Topology {
    /// Number of PUs.
    pub fn num_pus(&self) -> usize {
        self.pus.len()
    }

    /// Number of hosts (1 on a single machine).
    pub fn num_hosts(&self) -> usize {
        self.hosts.len().max(1)
    }

    /// True for a cluster of hosts (a `cluster:` machine, even of one host).
    pub fn is_cluster(&self) -> bool {
        self.objects.iter().any(|o| o.kind == ObjKind::Host)
    }

    /// The host name of a PU (logical index).
    pub fn host_name(&self, pu: usize) -> &str {
        self.hosts
            .get(self.pus[pu].host)
            .map_or("localhost", String::as_str)
    }

    /// Number of NUMA nodes.
    pub fn num_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Number of objects of a kind.
    pub fn count(&self, kind: ObjKind) -> usize {
        self.objects.iter().filter(|o| o.kind == kind).count()
    }

    /// The objects of a kind, in logical order.
    pub fn objects_of(&self, kind: ObjKind) -> impl Iterator<Item = &Obj> {
        self.objects.iter().filter(move |o| o.kind == kind)
    }

    /// The logical NUMA node of a PU (logical index).
    pub fn node_of_pu(&self, pu: usize) -> usize {
        self.pus[pu].node
    }

    /// The logical PUs of a NUMA node.
    pub fn pus_of_node(&self, node: usize) -> &[usize] {
        &self.objects[self.nodes[node]].pus
    }

    /// The OS index of a NUMA node (what mbind and move_pages want).
    pub fn node_os_index(&self, node: usize) -> usize {
        self.objects[self.nodes[node]].os.unwrap_or(node)
    }

    /// The logical PU whose OS index is `os`, if any.
    pub fn pu_by_os(&self, os: usize) -> Option<usize> {
        self.pus.iter().position(|p| p.os == os)
    }

    /// The deepest level at which two PUs share a group (0 is the machine).
    pub fn common_level(&self, a: usize, b: usize) -> usize {
        (0..self.levels.len())
            .rev()
            .find(|&l| self.levels[l].group_of_pu[a] == self.levels[l].group_of_pu[b])
            .unwrap_or(0)
    }

    /// Tree distance between two PUs: how many levels up their lowest common one is.
    pub fn pu_distance(&self, a: usize, b: usize) -> usize {
        self.levels.len() - 1 - self.common_level(a, b)
    }

    /// The largest possible [`Topology::pu_distance`].
    pub fn max_pu_distance(&self) -> usize {
        self.levels.len() - 1
    }

    /// The children count of each level below the machine, levels of arity 1 dropped
    /// (kMAF §3.4.1), outermost first. Uneven levels report their largest arity.
    pub fn arities(&self) -> Vec<usize> {
        let mut out = Vec::new();
        for w in self.levels.windows(2) {
            let (up, down) = (&w[0], &w[1]);
            let mut children = vec![0usize; up.groups];
            let mut seen = vec![false; down.groups];
            for pu in 0..self.pus.len() {
                let g = down.group_of_pu[pu];
                if !seen[g] {
                    seen[g] = true;
                    children[up.group_of_pu[pu]] += 1;
                }
            }
            let arity = children.into_iter().max().unwrap_or(1);
            if arity > 1 {
                out.push(arity);
            }
        }
        out
    }

    /// NUMA factor as Minas defines it: the largest remote latency over the local one.
    pub fn numa_factor(&self) -> f64 {
        self.distances.numa_factor()
    }

    /// The data cache of a given level above a PU, if any.
    pub fn cache_of_pu(&self, pu: usize, level: u8) -> Option<CacheInfo> {
        self.objects
            .iter()
            .filter_map(|o| o.cache.filter(|c| c.level == level).map(|c| (o, c)))
            .find(|(o, _)| o.pus.binary_search(&pu).is_ok())
            .map(|(_, c)| c)
    }

    /// The largest cache of the machine in bytes (the "highest level cache" of MApp §3.2).
    pub fn last_level_cache_size(&self) -> u64 {
        self.objects
            .iter()
            .filter_map(|o| o.cache)
            .max_by_key(|c| (c.level, c.size))
            .map_or(0, |c| c.size)
    }

    /// Total memory in bytes.
    pub fn total_memory(&self) -> u64 {
        self.nodes
            .iter()
            .filter_map(|&n| self.objects[n].memory)
            .sum()
    }
}
