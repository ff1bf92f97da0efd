//! A machine's fingerprint, written into mapping files so that a mapping made for one
//! machine is not applied on another by mistake: a PU count and a readable summary to
//! show the user, and a hash of what a mapping depends on (each PU's OS number, core,
//! package, NUMA node and host, and the node distances). Cache sizes, the machine's name
//! and memory sizes are left out: a capture of this machine and the machine itself, or
//! the same model of machine with more memory, take the same mappings.

use crate::model::{ObjKind, Topology};
use serde::{Deserialize, Serialize};
use tdmap_format::Fnv;

/// What identifies a machine for a thread mapping.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// Number of PUs of the whole machine.
    pub pus: usize,
    /// Counts of the levels a mapping depends on, e.g. `4 packages, 4 NUMA nodes, 32
    /// cores, 64 PUs`.
    pub summary: String,
    /// FNV-1a 64 of each PU's (OS number, core, package, node OS number, host) in
    /// logical order, then the node distances, as 16 hex digits.
    pub hash: String,
}

impl Fingerprint {
    /// True when a mapping made on `self` means the same PUs on `other`.
    pub fn same_machine(&self, other: &Fingerprint) -> bool {
        self.pus == other.pus && self.hash == other.hash
    }
}

impl std::fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}; hash {}", self.summary, self.hash)
    }
}

impl Topology {
    /// The fingerprint of the whole machine: for a view restricted to the CPUs this
    /// process may use, the machine's before the restriction.
    pub fn fingerprint(&self) -> Fingerprint {
        match &self.restricted {
            Some(r) if !self.is_cluster() => r.machine.clone(),
            _ => self.own_fingerprint(),
        }
    }

    /// The fingerprint of exactly these PUs, restriction or not.
    pub(crate) fn own_fingerprint(&self) -> Fingerprint {
        let mut h = Fnv::new();
        for p in &self.pus {
            for v in [p.os, p.core, p.package, self.node_os_index(p.node), p.host] {
                h.add(v as u64);
            }
        }
        for row in self.distances.rows() {
            for d in row {
                h.add(d.into());
            }
        }
        let plural = |n: usize, one: &str| format!("{n} {one}{}", if n == 1 { "" } else { "s" });
        let mut parts = Vec::new();
        if self.is_cluster() {
            parts.push(plural(self.num_hosts(), "host"));
        }
        parts.push(plural(self.count(ObjKind::Package), "package"));
        parts.push(plural(self.num_nodes(), "NUMA node"));
        parts.push(plural(self.count(ObjKind::Core), "core"));
        parts.push(format!(
            "{} PU{}",
            self.num_pus(),
            if self.num_pus() == 1 { "" } else { "s" }
        ));
        Fingerprint {
            pus: self.num_pus(),
            summary: parts.join(", "),
            hash: format!("{:016x}", h.value()),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{from_synthetic, preset};

    #[test]
    fn the_same_machine_matches_and_another_does_not() {
        let a = from_synthetic("package:2 core:2 pu:2")
            .unwrap()
            .fingerprint();
        let again = from_synthetic("package:2 core:2 pu:2")
            .unwrap()
            .fingerprint();
        assert!(a.same_machine(&again));
        assert_eq!(a.summary, "2 packages, 1 NUMA node, 4 cores, 8 PUs");
        assert_eq!(a.hash.len(), 16);
        // Same PU count, different shape: the hash tells them apart.
        let b = from_synthetic("package:4 core:2").unwrap().fingerprint();
        assert_eq!(b.pus, 8);
        assert!(!a.same_machine(&b));
        let x = preset("xeon-x7550-4s").unwrap().fingerprint();
        assert!(!a.same_machine(&x));
    }

    #[test]
    fn a_restricted_view_keeps_the_whole_machines_fingerprint() {
        let t = from_synthetic("package:2 [numa] core:2").unwrap();
        let whole = t.fingerprint();
        let part = t.restrict(&[1]).unwrap();
        assert_eq!(part.num_pus(), 1);
        assert_eq!(part.fingerprint(), whole);
        assert_ne!(part.own_fingerprint(), whole);
    }
}
