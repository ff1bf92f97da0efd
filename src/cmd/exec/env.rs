//! The program's environment under `tdmap exec`: OpenMP places for OpenMP runtimes, and
//! the tdmap runtime preloaded with the CPU list for threads in creation order, plus the
//! file it reports its pins in. Settings that would silently override ours are refused.

use super::Args;
use crate::cmd::run::preload;
use crate::exit::input;
use anyhow::{Context, Result};
use std::ffi::OsString;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use tdmap_sys::Preload;
use tdmap_wire::pin as wire;

/// OpenMP runtimes' own affinity settings, which take precedence over `OMP_PLACES` in
/// libomp (both) or are an alias of its `KMP_AFFINITY` (GOMP_CPU_AFFINITY).
const OVERRIDING: [&str; 2] = ["KMP_AFFINITY", "GOMP_CPU_AFFINITY"];

/// What the program gets.
pub struct Plan {
    /// Variables set or replaced in its environment.
    pub vars: Vec<(OsString, OsString)>,
    /// The file the runtime writes its pin records to; None with --omp-only, or when
    /// the runtime cannot be preloaded (--best-effort).
    pub log: Option<PinLog>,
}

/// A private folder holding the record file, removed when dropped.
pub struct PinLog {
    dir: PathBuf,
    /// The record file.
    pub file: PathBuf,
}

impl Drop for PinLog {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The environment that pins thread k on `cpus[k]`.
pub fn threads(args: &Args, cpus: &[usize]) -> Result<Plan> {
    let mut vars = Vec::new();
    for var in OVERRIDING {
        if let Some(v) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            let msg = format!(
                "{var}={} is set, and OpenMP runtimes would follow it rather than the mapping; unset it (env -u {var} tdmap exec ...)",
                v.to_string_lossy()
            );
            if !args.best_effort {
                return Err(input(format!("{msg}, or pass --best-effort")));
            }
            eprintln!("tdmap: {msg} (going on: --best-effort)");
        }
    }
    for (var, value) in tdmap_map::format::omp_env(cpus) {
        match std::env::var_os(var) {
            // The thread count is the program's choice; threads beyond the places wrap.
            Some(_) if var == "OMP_NUM_THREADS" => continue,
            Some(old) if old != value.as_str() => eprintln!(
                "tdmap: {var}={} replaced by the mapping's {var}={value}",
                old.to_string_lossy()
            ),
            _ => {}
        }
        vars.push((var.into(), value.into()));
    }
    let log = if args.omp_only {
        None
    } else {
        preload_runtime(args, cpus, &mut vars)?
    };
    Ok(Plan { vars, log })
}

/// Adds the runtime and its settings to `vars`; None when it cannot be preloaded into
/// the program and --best-effort lets it run anyway.
fn preload_runtime(
    args: &Args,
    cpus: &[usize],
    vars: &mut Vec<(OsString, OsString)>,
) -> Result<Option<PinLog>> {
    let prog = &args.command[0];
    let path = tdmap_sys::find_program(prog).ok_or_else(|| {
        input(format!(
            "cannot run {}: no such executable program; check its name, its x bit and PATH",
            prog.to_string_lossy()
        ))
    })?;
    let why = match tdmap_sys::preloadable(&path) {
        Ok(Preload::Yes) => None,
        Ok(Preload::Static) => Some("is statically linked, so the runtime that pins its threads cannot be preloaded; an OpenMP program can take --omp-only (its own runtime pins by OMP_PLACES)"),
        Ok(Preload::SetId) => Some("is set-user-id or set-group-id, so the loader ignores LD_PRELOAD and its threads cannot be pinned"),
        Err(e) => return Err(input(format!("cannot read {}: {e}", path.display()))),
    };
    if let Some(why) = why {
        let msg = format!("{} {why}", path.display());
        if !args.best_effort {
            return Err(input(format!(
                "{msg}; or pass --best-effort to run it unpinned"
            )));
        }
        eprintln!("tdmap: {msg} (going on unpinned: --best-effort)");
        return Ok(None);
    }
    let so = preload::runtime()?;
    let log = pin_log()?;
    let settings = wire::Settings {
        parent: std::process::id() as i32,
        cycle: args.cycle,
        cpus: cpus.iter().map(|&c| c as u32).collect(),
    };
    if let Some(p) = preload::ld_preload(&[so.as_path()], std::env::var_os("LD_PRELOAD")) {
        vars.push(("LD_PRELOAD".into(), p));
    }
    vars.push((wire::ENV.into(), settings.encode().into()));
    vars.push((wire::ENV_LOG.into(), log.file.clone().into()));
    Ok(Some(log))
}

/// A new, empty record file in a folder only this user can enter.
fn pin_log() -> Result<PinLog> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let dir = std::env::temp_dir().join(format!("tdmap-exec-{}-{nanos}", std::process::id()));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .with_context(|| format!("cannot create {}", dir.display()))?;
    let log = PinLog {
        file: dir.join("pins"),
        dir,
    };
    create(&log.file)?;
    Ok(log)
}

fn create(path: &Path) -> Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    Ok(())
}
