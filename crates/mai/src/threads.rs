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

/// Reads the thread -> OS CPU mapping of a `tdmap map --format json` file.
pub fn load_map_file(path: &str) -> Result<Vec<usize>> {
    let bad = |why: String, errno: i32| MaiError::Config {
        path: path.to_string(),
        why,
        errno,
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        bad(
            format!("{e}; write it with `tdmap map --format json > FILE`"),
            e.raw_os_error().unwrap_or(libc::EIO),
        )
    })?;
    parse_map(&text).map_err(|why| bad(why, libc::EINVAL))
}

/// Parses `{"mapping": [{"thread": t, "os": cpu}, ...]}` into CPUs by thread.
pub fn parse_map(text: &str) -> std::result::Result<Vec<usize>, String> {
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| format!("not JSON from `tdmap map --format json`: {e}"))?;
    let entries = v["mapping"]
        .as_array()
        .ok_or("no \"mapping\" array (expected `tdmap map --format json` output)")?;
    let mut cpus = vec![None; entries.len()];
    for e in entries {
        let (t, os) = (e["thread"].as_u64(), e["os"].as_u64());
        let (t, os) = t
            .zip(os)
            .ok_or("a mapping entry lacks \"thread\" or \"os\"")?;
        let slot = cpus
            .get_mut(t as usize)
            .ok_or(format!("thread {t} beyond the {} entries", entries.len()))?;
        *slot = Some(os as usize);
    }
    cpus.into_iter()
        .collect::<Option<Vec<_>>>()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| "threads missing from the mapping (or no threads)".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_mapping_that_tdmap_map_writes() {
        let json = r#"{"machine":"m","mapping":[{"thread":1,"pu":0,"os":0,"node":0},
            {"thread":0,"pu":3,"os":6,"node":1}]}"#;
        assert_eq!(parse_map(json), Ok(vec![6, 0]));
        assert!(parse_map("{}").unwrap_err().contains("mapping"));
        assert!(parse_map("nope").unwrap_err().contains("JSON"));
        let gap = r#"{"mapping":[{"thread":1,"os":0},{"thread":1,"os":2}]}"#;
        assert!(parse_map(gap).unwrap_err().contains("missing"));
        let err = load_map_file("/nonexistent/map.json").unwrap_err();
        assert_eq!(err.errno(), libc::ENOENT);
        assert!(err.to_string().contains("tdmap map"), "{err}");
    }

    #[test]
    fn compact_wraps_around_the_cpus() {
        let m = Machine::from_topology(&tdmap_topo::from_synthetic("package:2 core:2").unwrap());
        let c = compact(&m, 6);
        assert_eq!(c.len(), 6);
        assert_eq!(c[4], c[0]);
    }
}
