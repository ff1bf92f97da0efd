//! Threads for bind_block and thread binding: which OS CPU each of the program's threads
//! runs on. By default OMP_NUM_THREADS (or one per CPU) threads placed compactly; or set
//! from a `tdmap map --format json` file, which is how the trace-based mapping paper
//! applied its thread mapping through Minas.

use crate::error::{MaiError, Result};
use crate::machine::{machine, Machine};
use std::sync::Mutex;
use tdmap_sys::{LinuxSys, Sys};

static THREAD_CPUS: Mutex<Option<Vec<usize>>> = Mutex::new(None);

fn lock() -> std::sync::MutexGuard<'static, Option<Vec<usize>>> {
    THREAD_CPUS.lock().unwrap_or_else(|e| e.into_inner())
}

/// `n` threads placed compactly: thread t on the t-th CPU in logical order.
pub fn compact(m: &Machine, n: usize) -> Vec<usize> {
    (0..n).map(|t| m.cpus[t % m.cpus.len()]).collect()
}

/// The OS CPU of each thread.
pub fn thread_cpus() -> Result<Vec<usize>> {
    if let Some(c) = lock().clone() {
        return Ok(c);
    }
    let m = machine()?;
    let n = std::env::var("OMP_NUM_THREADS")
        .ok()
        .and_then(|v| v.split(',').next()?.trim().parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or(m.cpus.len());
    Ok(compact(m, n))
}

/// The logical node of each thread (bind_block's input).
pub fn thread_nodes() -> Result<Vec<usize>> {
    let m = machine()?;
    thread_cpus()?
        .iter()
        .map(|&c| m.logical_node(m.node_of_cpu(c as i64)? as i64))
        .collect()
}

/// Sets the OS CPU of each thread, checking that each CPU exists.
pub fn set_thread_cpus(cpus: Vec<usize>) -> Result<()> {
    if cpus.is_empty() {
        return Err(MaiError::Invalid("zero threads".into()));
    }
    let m = machine()?;
    for &c in &cpus {
        m.node_of_cpu(c as i64)?;
    }
    *lock() = Some(cpus);
    Ok(())
}

/// Pins the calling thread to thread `t`'s CPU.
pub fn bind_thread(t: i64) -> Result<usize> {
    let cpus = thread_cpus()?;
    let cpu = usize::try_from(t)
        .ok()
        .and_then(|t| cpus.get(t).copied())
        .ok_or_else(|| MaiError::Invalid(format!("thread {t} of {}", cpus.len())))?;
    LinuxSys.set_affinity(0, &[cpu])?;
    Ok(cpu)
}

/// Pins the calling thread to OS CPU `cpu`.
pub fn bind_cpu(cpu: i64) -> Result<()> {
    machine()?.node_of_cpu(cpu)?;
    LinuxSys.set_affinity(0, &[cpu as usize])?;
    Ok(())
}

/// Reads the thread -> OS CPU mapping of a `tdmap map --format json` file: format
/// `tdmap-mapping` of a version this libmai reads (see `docs/formats.md`), checked
/// against this machine as `tdmap exec` checks it (tdmap-map's `check_fit`: a mapping
/// made for another machine is EINVAL). The allocation is not checked: libmai pins only
/// when asked, and the pin's own error says it.
pub fn load_map_file(path: &str) -> Result<Vec<usize>> {
    let file = tdmap_map::MappingFile::read(std::path::Path::new(path))?;
    let here = tdmap_topo::live().map_err(|e| MaiError::Topology(e.to_string()))?;
    let fitted = tdmap_map::check_fit(&file, &here, None, tdmap_map::Leniency::default())
        .map_err(|e| MaiError::Invalid(format!("{path}: {e}")))?;
    Ok(fitted.cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_mapping_that_tdmap_map_writes() {
        let dir = crate::temp_dir::TempDir::new("mai-map");
        let topo = tdmap_topo::live().unwrap();
        let last = topo.num_pus() - 1;
        let how = tdmap_map::Provenance {
            algorithm: "greedy".into(),
            distance: "hops".into(),
            seed: 0,
            costs: [0.0; 3],
        };
        let good = dir.join("good.json");
        let file = tdmap_map::MappingFile::new(&topo, &[last, 0], how.clone());
        std::fs::write(&good, file.to_json()).unwrap();
        let os = |pu: usize| topo.pus[pu].os;
        assert_eq!(
            load_map_file(good.to_str().unwrap()).unwrap(),
            vec![os(last), os(0)]
        );
        // Made for another machine: EINVAL, naming it.
        let xeon = tdmap_topo::preset("xeon-x7550-4s").unwrap();
        let foreign = dir.join("foreign.json");
        let file = tdmap_map::MappingFile::new(&xeon, &[0], how);
        std::fs::write(&foreign, file.to_json()).unwrap();
        let err = load_map_file(foreign.to_str().unwrap()).unwrap_err();
        assert_eq!(err.errno(), libc::EINVAL);
        assert!(err.to_string().contains("made for xeon-x7550-4s"), "{err}");
        let bad = dir.join("bad.json");
        std::fs::write(&bad, r#"{"mapping": [{"thread": 0, "os": 0}]}"#).unwrap();
        let err = load_map_file(bad.to_str().unwrap()).unwrap_err();
        assert_eq!(err.errno(), libc::EINVAL);
        assert!(err.to_string().contains("no \"format\" field"), "{err}");
        let err = load_map_file("/nonexistent/map.json").unwrap_err();
        assert_eq!(err.errno(), libc::ENOENT);
        assert!(err.to_string().contains("/nonexistent/map.json"), "{err}");
    }

    #[test]
    fn compact_wraps_around_the_cpus() {
        let m = Machine::from_topology(&tdmap_topo::from_synthetic("package:2 core:2").unwrap());
        let c = compact(&m, 6);
        assert_eq!(c.len(), 6);
        assert_eq!(c[4], c[0]);
    }
}
