//! Converts an hwloc topology into the tdmap model: the object tree, the PUs, the
//! flattened levels and the node distances.

use crate::model::{CacheInfo, Level, Obj, ObjId, ObjKind, Pu, Topology};
use crate::{Distances, DistancesSource, TopoError};
use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::types::{CacheType, ObjectType};
use hwlocality::object::TopologyObject;
use std::collections::HashMap;

/// Builds the model from an hwloc topology named `name`.
pub fn convert(topo: &hwlocality::Topology, name: &str) -> Result<Topology, TopoError> {
    let unusable = |why: &str| TopoError::Unusable {
        name: name.to_string(),
        why: why.to_string(),
    };
    let pu_os: Vec<usize> = topo
        .objects_with_type(ObjectType::PU)
        .map(|p| p.os_index().unwrap_or(p.logical_index()))
        .collect();
    if pu_os.is_empty() {
        return Err(unusable("it has no PU"));
    }
    let logical_of_os: HashMap<usize, usize> =
        pu_os.iter().enumerate().map(|(l, &os)| (os, l)).collect();
    let mut b = Builder {
        objects: Vec::new(),
        logical_of_os,
        counters: HashMap::new(),
    };
    b.add(topo.root_object(), None);
    let mut t = b.finish(name, pu_os);
    if t.nodes.is_empty() {
        return Err(unusable("it has no NUMA node"));
    }
    t.distances = node_distances(topo, &t)?;
    t.levels = levels(&t);
    Ok(t)
}

struct Builder {
    objects: Vec<Obj>,
    logical_of_os: HashMap<usize, usize>,
    counters: HashMap<ObjKind, usize>,
}

fn kind_of(obj: &TopologyObject) -> Option<ObjKind> {
    let data_cache = |o: &TopologyObject| match o.attributes() {
        Some(ObjectAttributes::Cache(c)) => c.cache_type() != CacheType::Instruction,
        _ => false,
    };
    Some(match obj.object_type() {
        ObjectType::Machine => ObjKind::Machine,
        ObjectType::Package => ObjKind::Package,
        ObjectType::Group => ObjKind::Group,
        ObjectType::NUMANode => ObjKind::NumaNode,
        ObjectType::L3Cache if data_cache(obj) => ObjKind::L3,
        ObjectType::L2Cache if data_cache(obj) => ObjKind::L2,
        ObjectType::L1Cache if data_cache(obj) => ObjKind::L1,
        ObjectType::Core => ObjKind::Core,
        ObjectType::PU => ObjKind::Pu,
        _ => return None,
    })
}

impl Builder {
    /// Adds `obj` below `parent`; objects of kinds tdmap ignores (L1i, dies, misc) are
    /// skipped and their children attached to `parent`.
    fn add(&mut self, obj: &TopologyObject, parent: Option<ObjId>) {
        let me = match kind_of(obj) {
            Some(kind) => Some(self.push(obj, kind, parent)),
            None => parent,
        };
        for child in obj.memory_children().chain(obj.normal_children()) {
            self.add(child, me);
        }
    }

    fn push(&mut self, obj: &TopologyObject, kind: ObjKind, parent: Option<ObjId>) -> ObjId {
        let logical = self.counters.entry(kind).or_insert(0);
        let mut pus: Vec<usize> = obj
            .cpuset()
            .map(|s| {
                s.iter_set()
                    .filter_map(|i| self.logical_of_os.get(&usize::from(i)).copied())
                    .collect()
            })
            .unwrap_or_default();
        pus.sort_unstable();
        let cache = match obj.attributes() {
            Some(ObjectAttributes::Cache(c)) => Some(CacheInfo {
                level: c.depth() as u8,
                size: c.size().map_or(0, |s| s.get()),
                line: c.line_size().map_or(64, |l| l.get() as u32),
                ways: 0,
            }),
            _ => None,
        };
        let memory = match obj.attributes() {
            Some(ObjectAttributes::NUMANode(n)) => Some(n.local_memory().map_or(0, |m| m.get())),
            _ => None,
        };
        let id = self.objects.len();
        self.objects.push(Obj {
            kind,
            logical: *logical,
            os: obj.os_index(),
            parent,
            children: Vec::new(),
            pus,
            cache,
            memory,
        });
        *logical += 1;
        if let Some(p) = parent {
            self.objects[p].children.push(id);
        }
        id
    }

    fn finish(self, name: &str, pu_os: Vec<usize>) -> Topology {
        let objects = self.objects;
        let of_kind = |kind: ObjKind| -> Vec<usize> {
            let mut owner = vec![0; pu_os.len()];
            for o in objects.iter().filter(|o| o.kind == kind) {
                for &p in &o.pus {
                    owner[p] = o.logical;
                }
            }
            owner
        };
        let (node, core, package) = (
            of_kind(ObjKind::NumaNode),
            of_kind(ObjKind::Core),
            of_kind(ObjKind::Package),
        );
        let pus = pu_os
            .iter()
            .enumerate()
            .map(|(l, &os)| Pu {
                os,
                node: node[l],
                core: core[l],
                package: package[l],
                host: 0,
            })
            .collect();
        let mut nodes: Vec<ObjId> = (0..objects.len())
            .filter(|&i| objects[i].kind == ObjKind::NumaNode)
            .collect();
        nodes.sort_by_key(|&i| objects[i].logical);
        Topology {
            name: name.to_string(),
            objects,
            pus,
            nodes,
            levels: Vec::new(),
            distances: Distances::uniform(1, 10, 10, DistancesSource::Assumed)
                .expect("a 1x1 matrix is valid"),
            latencies: None,
            hosts: vec!["localhost".to_string()],
            restricted: None,
        }
    }
}

/// The node distances hwloc has (the SLIT), or 10/20 when it has none.
fn node_distances(topo: &hwlocality::Topology, t: &Topology) -> Result<Distances, TopoError> {
    let n = t.num_nodes();
    let os_to_logical: HashMap<usize, usize> = (0..n).map(|l| (t.node_os_index(l), l)).collect();
    let all = topo.distances(None).unwrap_or_default();
    for d in all {
        let objs: Vec<Option<usize>> = d
            .objects()
            .map(|o| {
                o.filter(|o| o.object_type() == ObjectType::NUMANode)
                    .and_then(|o| o.os_index())
                    .and_then(|os| os_to_logical.get(&os).copied())
            })
            .collect();
        if objs.len() != n || objs.iter().any(Option::is_none) {
            continue;
        }
        let vals = d.distances();
        let mut rows = vec![vec![0i64; n]; n];
        for (a, oa) in objs.iter().enumerate() {
            for (b, ob) in objs.iter().enumerate() {
                rows[oa.unwrap()][ob.unwrap()] = vals[a * n + b] as i64;
            }
        }
        return Distances::from_rows(rows, DistancesSource::Hwloc);
    }
    Distances::uniform(n, 10, 20, DistancesSource::Assumed)
}

/// The flattened levels: every kind that partitions the PUs, ordered from the machine
/// down, with levels that split the PUs identically merged into one.
pub(crate) fn levels(t: &Topology) -> Vec<Level> {
    let n = t.num_pus();
    let order = [
        ObjKind::Machine,
        ObjKind::Host,
        ObjKind::Package,
        ObjKind::Group,
        ObjKind::NumaNode,
        ObjKind::L3,
        ObjKind::L2,
        ObjKind::L1,
        ObjKind::Core,
        ObjKind::Pu,
    ];
    let mut cands: Vec<(ObjKind, Vec<usize>, usize)> = Vec::new();
    for kind in order {
        let objs: Vec<&Obj> = t.objects_of(kind).collect();
        let mut group = vec![usize::MAX; n];
        for (g, o) in objs.iter().enumerate() {
            for &p in &o.pus {
                group[p] = g;
            }
        }
        // A kind covers every PU exactly once only if it partitions them.
        let covered: usize = objs.iter().map(|o| o.pus.len()).sum();
        if objs.is_empty() || covered != n || group.contains(&usize::MAX) {
            continue;
        }
        cands.push((kind, group, objs.len()));
    }
    // Coarse to fine; a stable sort keeps hwloc's order among equal counts.
    cands.sort_by_key(|c| c.2);
    let mut out: Vec<Level> = Vec::new();
    for (kind, group, groups) in cands {
        match out.last_mut() {
            Some(last) if same_partition(&last.group_of_pu, &group) => last.kinds.push(kind),
            Some(last) if !refines(&group, &last.group_of_pu) => {}
            _ => out.push(Level {
                kinds: vec![kind],
                group_of_pu: group,
                groups,
            }),
        }
    }
    out
}

fn same_partition(a: &[usize], b: &[usize]) -> bool {
    refines(a, b) && refines(b, a)
}

/// True when every group of `fine` lies inside one group of `coarse`. Group numbers are
/// one level's object indexes, so a vector maps them: cheaper than a hash map on every
/// start-up (`make bench-startup`).
fn refines(fine: &[usize], coarse: &[usize]) -> bool {
    let mut parent = vec![usize::MAX; fine.iter().max().map_or(0, |&m| m + 1)];
    fine.iter().zip(coarse).all(|(&f, &c)| {
        let p = &mut parent[f];
        if *p == usize::MAX {
            *p = c;
        }
        *p == c
    })
}
