//! The mapping file: what `tdmap map --format json` writes, and what `tdmap run
//! --mapping` and libmai (`mai_init(file)`) read back to pin thread k on its OS CPU.
//! Format `tdmap-mapping`, described in `docs/formats.md`.

use serde::{Deserialize, Serialize};
use std::path::Path;
use tdmap_format::{FormatError, Versioned};
use tdmap_topo::Topology;

/// A thread mapping as a file: the machine, how it was chosen, its cost next to the
/// baselines', and where each thread goes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MappingFile {
    /// Always `tdmap-mapping`.
    pub format: String,
    /// [`MappingFile::VERSION`].
    pub version: u32,
    /// The machine's name (a preset, a synthetic string, an XML file or `local`).
    pub machine: String,
    /// The algorithm that chose the mapping (`greedy`, `drb`, ...).
    pub algorithm: String,
    /// Number of threads.
    pub threads: usize,
    /// The distance the costs use: `hops` or `latency`.
    pub distance: String,
    /// Seed of the random algorithm and of the random reference cost.
    pub seed: u64,
    /// Cost of this mapping (Σ sharing × distance over pairs).
    pub cost: f64,
    /// Cost of the compact mapping.
    pub compact_cost: f64,
    /// Cost of a random mapping.
    pub random_cost: f64,
    /// Where each thread goes, one entry per thread.
    pub mapping: Vec<Placement>,
    /// For a mapping made from a trace: whether the trace was whole (false: made from
    /// what could be read of it). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complete: Option<bool>,
    /// When the machine was this one seen through the CPUs tdmap could use: their OS
    /// numbers (`--whole-machine` maps onto all). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restricted: Option<Vec<usize>>,
    /// The fingerprint of the machine the mapping was made for (version 2; absent in
    /// version 1 files, which are read unchecked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<tdmap_topo::Fingerprint>,
    /// The OS numbers of the NUMA nodes of the mapped PUs, ascending: where the data of
    /// threads placed so should live (`numactl --membind`). Version 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub membind: Option<Vec<usize>>,
    /// What the entries are: threads (in creation order) or MPI ranks (by local rank).
    /// Version 2; absent means threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<Unit>,
}

/// What a mapping's entries stand for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// Threads of one process, main first, then in creation order.
    Thread,
    /// MPI ranks on one host, by local rank.
    Rank,
}

/// Where one thread goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// The thread (0..threads, creation order).
    pub thread: usize,
    /// hwloc logical index of the PU.
    pub pu: usize,
    /// OS CPU number of the PU: what `sched_setaffinity` takes.
    pub os: usize,
    /// Logical index of the PU's core.
    pub core: usize,
    /// Logical index of the PU's package.
    pub package: usize,
    /// Logical index of the PU's NUMA node.
    pub node: usize,
    /// The host's name, on a cluster (`cluster:` or `--hosts`). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The task this entry places, for a program of several processes (`tdmap run
    /// --mapping`): then `thread` is only the entry's number. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskName>,
}

/// A task of a program of several processes, as a mapping file names it: its process
/// (the MPI world rank when the processes have one, else the process's index: 0 for the
/// one started, then in the order tdmap first saw them) and its thread in that process
/// (0 for the first, in creation order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TaskName {
    /// World rank, or process index.
    pub process: u32,
    /// Thread number within the process.
    pub thread: u32,
}

/// How a mapping was chosen and what it costs, for [`MappingFile::new`].
#[derive(Debug, Clone, PartialEq)]
pub struct Provenance {
    /// The algorithm's name.
    pub algorithm: String,
    /// `hops` or `latency`.
    pub distance: String,
    /// The seed.
    pub seed: u64,
    /// Costs of this mapping, of compact and of random.
    pub costs: [f64; 3],
}

impl Versioned for MappingFile {
    const FORMAT: &'static str = "tdmap-mapping";
    /// 1: the first versioned mapping (the fields of the unversioned one, plus the header).
    /// 2: adds `fingerprint` (required: the machine the mapping is for), `membind` and
    /// `unit`. Version 1 files are still read, without a fingerprint.
    const VERSION: u32 = 2;
    const OLDEST: u32 = 1;
    const WRITER: &'static str = "tdmap map --format json";

    fn check(&self) -> Result<(), String> {
        if self.mapping.is_empty() {
            return Err("\"mapping\" is empty".into());
        }
        let mut seen = vec![false; self.mapping.len()];
        for p in &self.mapping {
            match seen.get_mut(p.thread) {
                Some(s) if !*s => *s = true,
                Some(_) => return Err(format!("thread {} is mapped twice", p.thread)),
                None => {
                    return Err(format!(
                        "thread {} beyond the {} entries: threads are numbered 0..n",
                        p.thread,
                        seen.len()
                    ))
                }
            }
        }
        if self.version >= 2 && self.fingerprint.is_none() {
            return Err("\"fingerprint\" missing (required from version 2)".into());
        }
        if self.threads != self.mapping.len() {
            return Err(format!(
                "\"threads\" is {} but \"mapping\" has {} entries",
                self.threads,
                self.mapping.len()
            ));
        }
        Ok(())
    }
}

impl MappingFile {
    /// The file of `mapping` (thread → logical PU of `topo`).
    pub fn new(topo: &Topology, mapping: &[usize], how: Provenance) -> MappingFile {
        let (format, version) = tdmap_format::header::<MappingFile>();
        let [cost, compact_cost, random_cost] = how.costs;
        MappingFile {
            format,
            version,
            machine: topo.name.clone(),
            algorithm: how.algorithm,
            threads: mapping.len(),
            distance: how.distance,
            seed: how.seed,
            cost,
            compact_cost,
            random_cost,
            mapping: mapping
                .iter()
                .enumerate()
                .map(|(thread, &pu)| {
                    let p = &topo.pus[pu];
                    Placement {
                        thread,
                        pu,
                        os: p.os,
                        core: p.core,
                        package: p.package,
                        node: p.node,
                        host: topo.is_cluster().then(|| topo.host_name(pu).to_string()),
                        task: None,
                    }
                })
                .collect(),
            complete: None,
            restricted: topo.restricted.as_ref().map(|r| r.allowed.clone()),
            fingerprint: Some(topo.fingerprint()),
            membind: Some(membind(topo, mapping)),
            unit: None,
        }
    }

    /// Reads and checks a mapping file: its header, every field, and threads numbered
    /// 0..n once each. Errors are one line naming the file and the field.
    pub fn read(path: &Path) -> Result<MappingFile, FormatError> {
        tdmap_format::read(path)
    }

    /// Parses a mapping file's text; `path` only names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<MappingFile, FormatError> {
        tdmap_format::from_str(text, path)
    }

    /// The OS CPU of each task, when every entry names a task (see [`TaskName`]).
    pub fn task_cpus(&self) -> Option<Vec<(TaskName, usize)>> {
        self.mapping.iter().map(|p| Some((p.task?, p.os))).collect()
    }

    /// The OS CPU of each thread, in thread order (thread k at index k).
    pub fn os_cpus(&self) -> Vec<usize> {
        let mut cpus = vec![0; self.mapping.len()];
        for p in &self.mapping {
            cpus[p.thread] = p.os;
        }
        cpus
    }

    /// True when the entries are MPI ranks rather than threads.
    pub fn is_ranks(&self) -> bool {
        self.unit == Some(Unit::Rank)
    }

    /// The file as pretty JSON, header first.
    pub fn to_json(&self) -> String {
        tdmap_format::to_string(self)
    }
}

/// The OS numbers of the NUMA nodes holding the PUs of `mapping`, ascending.
pub fn membind(topo: &Topology, mapping: &[usize]) -> Vec<usize> {
    let mut nodes: Vec<usize> = mapping
        .iter()
        .map(|&pu| topo.node_os_index(topo.pus[pu].node))
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    nodes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> MappingFile {
        let topo = tdmap_topo::from_synthetic("package:2 core:2").unwrap();
        let how = Provenance {
            algorithm: "greedy".into(),
            distance: "hops".into(),
            seed: 7,
            costs: [10.0, 20.0, 15.5],
        };
        MappingFile::new(&topo, &[3, 0, 1], how)
    }

    fn parse(text: &str) -> Result<MappingFile, FormatError> {
        MappingFile::parse(text, Path::new("m.json"))
    }

    #[test]
    fn a_mapping_file_round_trips() {
        let m = sample();
        let text = m.to_json();
        assert!(text.contains("\"format\": \"tdmap-mapping\""), "{text}");
        assert!(text.contains("\"version\": 2"), "{text}");
        assert_eq!(parse(&text).unwrap(), m);
        assert_eq!(m.os_cpus(), vec![3, 0, 1]);
        assert_eq!(m.mapping[0].package, 1);
    }

    #[test]
    fn os_cpus_follow_thread_numbers_not_entry_order() {
        let mut m = sample();
        m.mapping.reverse();
        assert_eq!(parse(&m.to_json()).unwrap().os_cpus(), vec![3, 0, 1]);
    }

    #[test]
    fn a_model_or_a_newer_mapping_is_refused_naming_both_formats() {
        let model = r#"{"format": "tdmap-model", "version": 1, "threads": []}"#;
        assert_eq!(
            parse(model).unwrap_err().to_string(),
            "m.json: format \"tdmap-model\" version 1, expected \"tdmap-mapping\" version 2; write it with tdmap map --format json"
        );
        let newer = sample()
            .to_json()
            .replace("\"version\": 2", "\"version\": 99");
        let err = parse(&newer).unwrap_err().to_string();
        assert!(
            err.contains("version 99, expected \"tdmap-mapping\" version 2"),
            "{err}"
        );
    }

    #[test]
    fn gaps_repeats_and_missing_fields_are_named() {
        let mut m = sample();
        m.mapping[2].thread = 0;
        let err = parse(&m.to_json()).unwrap_err().to_string();
        assert!(err.contains("thread 0 is mapped twice"), "{err}");
        m.mapping[2].thread = 5;
        let err = parse(&m.to_json()).unwrap_err().to_string();
        assert!(err.contains("thread 5 beyond the 3 entries"), "{err}");
        let no_os = sample().to_json().replacen("\"os\": 3,", "", 1);
        let err = parse(&no_os).unwrap_err().to_string();
        assert!(err.starts_with("m.json: field \"os\": missing"), "{err}");
    }

    #[test]
    fn version_2_carries_the_machine_and_the_memory_nodes() {
        let topo = tdmap_topo::from_synthetic("package:2 [numa] core:2").unwrap();
        let how = Provenance {
            algorithm: "greedy".into(),
            distance: "hops".into(),
            seed: 0,
            costs: [0.0; 3],
        };
        let m = MappingFile::new(&topo, &[3, 2], how);
        assert_eq!(m.membind, Some(vec![1]));
        assert_eq!(m.fingerprint, Some(topo.fingerprint()));
        let no_print = m
            .to_json()
            .replacen("\"fingerprint\"", "\"fingerprint_gone\"", 1);
        let err = parse(&no_print).unwrap_err().to_string();
        assert!(err.contains("\"fingerprint\" missing"), "{err}");
    }

    /// A version 1 file, as tdmap map wrote them before fingerprints, still reads.
    #[test]
    fn a_version_1_mapping_still_reads_without_a_fingerprint() {
        let v1 = r#"{"format": "tdmap-mapping", "version": 1, "machine": "this machine",
            "algorithm": "greedy", "threads": 2, "distance": "hops", "seed": 0, "cost": 1.0,
            "compact_cost": 1.0, "random_cost": 1.0, "mapping": [
            {"thread": 0, "pu": 1, "os": 1, "core": 1, "package": 0, "node": 0},
            {"thread": 1, "pu": 0, "os": 0, "core": 0, "package": 0, "node": 0}]}"#;
        let m = parse(v1).unwrap();
        assert_eq!((m.version, m.fingerprint.is_none()), (1, true));
        assert_eq!(m.os_cpus(), vec![1, 0]);
    }
}
