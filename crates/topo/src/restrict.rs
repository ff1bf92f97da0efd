//! The machine seen through the CPUs tdmap may use. hwloc already drops the PUs its
//! allowed set excludes (cgroup cpusets), but not those outside the process's own CPU
//! binding (taskset, a Slurm step): [`Topology::restrict`] removes those, with the
//! objects left without PU, and renumbers what remains, so that every mapping, OpenMP
//! place list and launch line uses allowed PUs only.

use crate::model::{Obj, ObjKind, Pu, Restriction, Topology};
use crate::{Distances, TopoError};
use std::collections::HashMap;

impl Topology {
    /// The topology restricted to the PUs whose OS index is in `allowed_os`; objects
    /// left without PU (NUMA nodes included) are dropped and logical indexes renumbered.
    /// Returns `self` unchanged when every PU is allowed.
    pub fn restrict(self, allowed_os: &[usize]) -> Result<Topology, TopoError> {
        let keep: Vec<bool> = self
            .pus
            .iter()
            .map(|p| allowed_os.contains(&p.os))
            .collect();
        if keep.iter().all(|&k| k) {
            return Ok(self);
        }
        if !keep.contains(&true) {
            return Err(TopoError::Unusable {
                name: self.name.clone(),
                why: format!(
                    "none of its PUs is among the CPUs this process may use ({allowed_os:?}); pass --whole-machine"
                ),
            });
        }
        let mut new_pu = vec![usize::MAX; self.pus.len()];
        let mut n = 0;
        for (p, &k) in keep.iter().enumerate() {
            if k {
                new_pu[p] = n;
                n += 1;
            }
        }
        // Objects with a PU left, in the same order, children and parents renumbered.
        let mut new_id = vec![usize::MAX; self.objects.len()];
        let mut objects: Vec<Obj> = Vec::new();
        let mut counters: HashMap<ObjKind, usize> = HashMap::new();
        for (id, o) in self.objects.iter().enumerate() {
            let pus: Vec<usize> = o
                .pus
                .iter()
                .filter(|&&p| keep[p])
                .map(|&p| new_pu[p])
                .collect();
            if pus.is_empty() && id != 0 {
                continue;
            }
            let c = counters.entry(o.kind).or_insert(0);
            new_id[id] = objects.len();
            objects.push(Obj {
                logical: *c,
                pus,
                children: Vec::new(),
                ..o.clone()
            });
            *c += 1;
        }
        for (id, o) in self.objects.iter().enumerate() {
            if new_id[id] == usize::MAX {
                continue;
            }
            let me = new_id[id];
            objects[me].parent = o.parent.map(|p| new_id[p]);
            objects[me].children = o
                .children
                .iter()
                .map(|&c| new_id[c])
                .filter(|&c| c != usize::MAX)
                .collect();
        }
        let kept_nodes: Vec<usize> = (0..self.num_nodes())
            .filter(|&n| new_id[self.nodes[n]] != usize::MAX)
            .collect();
        let nodes: Vec<usize> = kept_nodes.iter().map(|&n| new_id[self.nodes[n]]).collect();
        let rows = kept_nodes
            .iter()
            .map(|&a| {
                kept_nodes
                    .iter()
                    .map(|&b| i64::from(self.distances.get(a, b)))
                    .collect()
            })
            .collect();
        let distances = Distances::from_rows(rows, self.distances.source)?;
        let owner = |kind: ObjKind| {
            let mut v = vec![0; n];
            for o in objects.iter().filter(|o| o.kind == kind) {
                for &p in &o.pus {
                    v[p] = o.logical;
                }
            }
            v
        };
        let (node, core, package) = (
            owner(ObjKind::NumaNode),
            owner(ObjKind::Core),
            owner(ObjKind::Package),
        );
        let pus: Vec<Pu> = (0..self.pus.len())
            .filter(|&p| keep[p])
            .map(|p| {
                let l = new_pu[p];
                Pu {
                    os: self.pus[p].os,
                    node: node[l],
                    core: core[l],
                    package: package[l],
                    host: self.pus[p].host,
                }
            })
            .collect();
        let restricted = Some(Restriction {
            allowed: pus.iter().map(|p| p.os).collect(),
            of: self.pus.len(),
            machine: self.fingerprint(),
        });
        let mut t = Topology {
            objects,
            pus,
            nodes,
            levels: Vec::new(),
            distances,
            restricted,
            ..self
        };
        t.levels = crate::discover::levels(&t);
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn restricting_drops_pus_and_empty_objects() {
        let t = crate::from_synthetic("package:2 [numa] core:2 pu:2").unwrap();
        let os: Vec<usize> = t.pus.iter().map(|p| p.os).collect();
        let r = t.clone().restrict(&[os[5], os[7]]).unwrap();
        assert_eq!(r.num_pus(), 2);
        assert_eq!(r.num_nodes(), 1);
        assert_eq!(
            r.pus.iter().map(|p| p.os).collect::<Vec<_>>(),
            [os[5], os[7]]
        );
        assert_eq!(r.restricted.as_ref().unwrap().of, 8);
        // PU 5 and 7 are the second PUs of two cores of one package.
        assert_eq!(r.arities(), vec![2]);
        assert!(t.clone().restrict(&[99]).is_err());
        assert!(t.clone().restrict(&os).unwrap().restricted.is_none());
    }
}
