//! Whether a mapping file may be applied here, shared by `tdmap exec` and `tdmap run
//! --mapping`: the machine it was made for (its fingerprint), the CPUs it names (this
//! machine must have them) and the allocation (the CPUs this process may use). Each
//! refusal names the file's machine and this one and says how to get a fitting mapping;
//! `force` lets a mapping for another machine or outside the allocation through (pins the
//! kernel then refuses are reported), `best_effort` lets everything through, with a
//! warning per broken rule.

use crate::MappingFile;
use tdmap_topo::{cpu_list, Fingerprint, Topology};

/// Why a mapping does not fit here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FitError {
    /// The file was made for another machine.
    #[error("made for {made} ({theirs}), but this machine is {here}; make the mapping here with tdmap map, or pass --force")]
    OtherMachine {
        /// The file's `machine` field.
        made: String,
        /// The file's fingerprint.
        theirs: Box<Fingerprint>,
        /// This machine's.
        here: Box<Fingerprint>,
    },
    /// The file names CPUs this machine does not have.
    #[error("it names CPU {} that this machine does not have ({pus} PUs); make the mapping here with tdmap map, or pass --best-effort", cpu_list(cpus))]
    Missing {
        /// The CPUs, ascending.
        cpus: Vec<usize>,
        /// How many PUs this machine has.
        pus: usize,
    },
    /// The file names CPUs outside this process's allocation.
    #[error("it names CPU {} outside the CPUs this process may use ({}: its taskset, cgroup or Slurm binding); run within an allocation that holds them, make the mapping inside it with tdmap map, or pass --force", cpu_list(cpus), cpu_list(allowed))]
    Outside {
        /// The CPUs, ascending.
        cpus: Vec<usize>,
        /// The CPUs this process may use.
        allowed: Vec<usize>,
    },
    /// The file maps onto a cluster's hosts.
    #[error("it maps onto the hosts of cluster {made}; apply it per host with tdmap map --format rankfile, hostfile or slurm")]
    Cluster {
        /// The file's `machine` field.
        made: String,
    },
}

/// How strict [`check`] is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Leniency {
    /// Accept a mapping for another machine, or CPUs outside the allocation.
    pub force: bool,
    /// Accept anything, warning for each broken rule.
    pub best_effort: bool,
}

/// A mapping that may be applied: the OS CPU of each entry, and the warnings to print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fitted {
    /// The OS CPU of entry k (thread or rank k).
    pub cpus: Vec<usize>,
    /// One line each (without the `tdmap: ` prefix), to print before the program starts.
    pub warnings: Vec<String>,
}

/// Checks `file` against this machine `here`, whole (not restricted to the allocation:
/// that is `allowed`, the CPUs this process may use, None for all).
pub fn check(
    file: &MappingFile,
    here: &Topology,
    allowed: Option<&[usize]>,
    how: Leniency,
) -> Result<Fitted, FitError> {
    let mut warnings = Vec::new();
    let refuse = |warnings: &mut Vec<String>, e: FitError, lenient: bool| {
        let flag = if how.best_effort {
            "--best-effort"
        } else {
            "--force"
        };
        if lenient || how.best_effort {
            warnings.push(format!("{e} (going on: {flag})"));
            Ok(())
        } else {
            Err(e)
        }
    };
    if file.mapping.iter().any(|p| p.host.is_some()) {
        refuse(
            &mut warnings,
            FitError::Cluster {
                made: file.machine.clone(),
            },
            false,
        )?;
    }
    debug_assert!(here.restricted.is_none(), "check takes the whole machine");
    let mine = here.fingerprint();
    match &file.fingerprint {
        Some(theirs) if !theirs.same_machine(&mine) => refuse(
            &mut warnings,
            FitError::OtherMachine {
                // A mapping of a live machine records only "this machine".
                made: if file.machine == "this machine" {
                    "the machine it was made on".into()
                } else {
                    file.machine.clone()
                },
                theirs: Box::new(theirs.clone()),
                here: Box::new(mine),
            },
            how.force,
        )?,
        Some(_) => {}
        None => warnings.push(format!(
            "the mapping is version {} and has no machine fingerprint, so it is not checked against this machine; remake it with tdmap map to have it checked",
            file.version
        )),
    }
    let cpus = file.os_cpus();
    let mut sorted = cpus.clone();
    sorted.sort_unstable();
    sorted.dedup();
    let exists = |c: &usize| here.pu_by_os(*c).is_some();
    let missing: Vec<usize> = sorted.iter().copied().filter(|c| !exists(c)).collect();
    if !missing.is_empty() {
        refuse(
            &mut warnings,
            FitError::Missing {
                cpus: missing.clone(),
                pus: here.num_pus(),
            },
            false,
        )?;
    }
    if let Some(allowed) = allowed {
        let outside: Vec<usize> = sorted
            .iter()
            .copied()
            .filter(|c| !allowed.contains(c) && !missing.contains(c))
            .collect();
        if !outside.is_empty() {
            refuse(
                &mut warnings,
                FitError::Outside {
                    cpus: outside,
                    allowed: allowed.to_vec(),
                },
                how.force,
            )?;
        }
    }
    Ok(Fitted { cpus, warnings })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Provenance;

    fn made_on(spec: &str, mapping: &[usize]) -> MappingFile {
        let topo = tdmap_topo::from_synthetic(spec).unwrap();
        let how = Provenance {
            algorithm: "greedy".into(),
            distance: "hops".into(),
            seed: 0,
            costs: [0.0; 3],
        };
        MappingFile::new(&topo, mapping, how)
    }

    #[test]
    fn a_mapping_for_another_machine_is_refused_unless_forced() {
        let here = tdmap_topo::from_synthetic("core:2").unwrap();
        let file = made_on("package:4 core:8", &[5, 1]);
        let err = check(&file, &here, None, Leniency::default()).unwrap_err();
        assert!(matches!(err, FitError::OtherMachine { .. }), "{err}");
        let mut live = file.clone();
        live.machine = "this machine".into();
        let err = check(&live, &here, None, Leniency::default()).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("made for the machine it was made on ("),
            "{err}"
        );
        let text = err.to_string();
        assert!(text.contains("32 PUs") && text.contains("2 PUs"), "{text}");
        // Forced, CPU 5 is still missing here.
        let force = Leniency {
            force: true,
            best_effort: false,
        };
        let err = check(&file, &here, None, force).unwrap_err();
        assert_eq!(
            err,
            FitError::Missing {
                cpus: vec![5],
                pus: 2
            }
        );
        let best = Leniency {
            force: false,
            best_effort: true,
        };
        let ok = check(&file, &here, None, best).unwrap();
        assert_eq!((ok.cpus, ok.warnings.len()), (vec![5, 1], 2));
    }

    #[test]
    fn cpus_outside_the_allocation_are_refused_unless_forced() {
        let here = tdmap_topo::from_synthetic("core:2").unwrap();
        let file = made_on("core:2", &[0, 1]);
        let ok = check(&file, &here, Some(&[0, 1]), Leniency::default()).unwrap();
        assert_eq!((ok.cpus, ok.warnings), (vec![0, 1], vec![]));
        let err = check(&file, &here, Some(&[1]), Leniency::default()).unwrap_err();
        assert_eq!(
            err,
            FitError::Outside {
                cpus: vec![0],
                allowed: vec![1]
            }
        );
        let force = Leniency {
            force: true,
            best_effort: false,
        };
        assert_eq!(
            check(&file, &here, Some(&[1]), force)
                .unwrap()
                .warnings
                .len(),
            1
        );
    }

    #[test]
    fn a_version_1_mapping_is_applied_with_a_warning() {
        let here = tdmap_topo::from_synthetic("core:2").unwrap();
        let mut file = made_on("core:2", &[1]);
        file.fingerprint = None;
        file.version = 1;
        let ok = check(&file, &here, None, Leniency::default()).unwrap();
        assert!(
            ok.warnings[0].contains("no machine fingerprint"),
            "{:?}",
            ok.warnings
        );
    }
}
