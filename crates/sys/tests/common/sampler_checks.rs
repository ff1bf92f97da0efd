//! Checks of the perf page-fault sampler on a live kernel, each returning a detail line
//! or what went wrong: run on this machine by `tests/perf_faults.rs` and in the VM guest
//! by `examples/fault_check.rs`. The includer also includes `faults.rs` and `region.rs`.

use crate::faults::{Run, Session};
use std::collections::HashSet;
use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;
use tdmap_sys::perf::FaultSource;
use tdmap_sys::perf::{PerfSampler, SamplerConfig, Scope};
use tdmap_sys::{inject_soft_dirty_faults, soft_dirty_available, spawn_gated, FsRoot};

/// The result of one check: a detail line, or what mismatched.
pub type Outcome = Result<String, String>;

const LIMIT: Duration = Duration::from_secs(60);

fn start(exe: &Path, args: &[&str]) -> Result<Session, String> {
    start_in(exe, args, Scope::Auto)
}

fn start_in(exe: &Path, args: &[&str], scope: Scope) -> Result<Session, String> {
    let cfg = SamplerConfig {
        scope,
        ..SamplerConfig::default()
    };
    Session::start(exe, args, Some(&cfg))
        .map_err(|e| format!("the perf sampler could not attach to a child: {e}"))
}

fn ensure(ok: bool, why: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(why())
    }
}

/// Every sample is the child's, from one of its threads, on a sampled CPU; none lost.
fn all_samples_are_the_childs(run: &Run, tids: &HashSet<u32>) -> Result<(), String> {
    ensure(run.drained.lost == 0, || {
        format!("samples were lost: {:?}", run.drained)
    })?;
    for s in &run.samples {
        ensure(s.pid == run.pid, || {
            format!("sample of another process: {s:?}")
        })?;
        ensure(tids.contains(&s.tid), || {
            format!("sample of tid {} not in {tids:?}", s.tid)
        })?;
        ensure(run.cpus.contains(&(s.cpu as usize)), || {
            format!("CPU {} not sampled", s.cpu)
        })?;
    }
    Ok(())
}

/// Two threads touch `pages` fresh pages each: every page's first touch is sampled, by
/// the thread that touched it.
/// In `scope`: Auto as `tdmap run` opens it; Process and System each forced, System
/// (CPU-wide events, every process's faults) keeping only the child's samples.
pub fn first_touch(exe: &Path, pages: usize, scope: Scope) -> Outcome {
    let mut s = start_in(exe, &["first-touch", "2", &pages.to_string()], scope)?;
    s.go();
    let run = s.finish(LIMIT)?;
    let opened = run.scope.ok_or("no sampler")?;
    ensure(scope == Scope::Auto || opened == scope, || {
        format!("asked for {} events, got {}", scope.name(), opened.name())
    })?;
    let detail = verify_first_touch(&run, pages)?;
    Ok(format!(
        "{} events ({} samples of other processes dropped): {detail}",
        opened.name(),
        run.drained.foreign
    ))
}

/// Whether this process runs as root: it may then open CPU-wide events (as may
/// CAP_PERFMON or perf_event_paranoid <= 0, which these checks do not look for), and
/// watch other users' processes.
pub fn is_root() -> bool {
    // SAFETY: geteuid only reads the caller's credentials.
    unsafe { libc::geteuid() == 0 }
}

/// The samples of a `first-touch 2 PAGES` child: see [`first_touch`].
fn verify_first_touch(run: &Run, pages: usize) -> Outcome {
    let tids: HashSet<u32> = run.values("tid").into_iter().map(|t| t as u32).collect();
    let workers: HashSet<u32> = tids.iter().copied().filter(|&t| t != run.pid).collect();
    ensure(workers.len() == 2, || {
        format!("child reported {:?}", run.lines)
    })?;
    all_samples_are_the_childs(run, &tids)?;
    let mine = run.in_region();
    let distinct = Run::distinct_pages(&mine);
    ensure(distinct == 2 * pages, || {
        format!(
            "{distinct} of {} touched pages sampled ({} samples)",
            2 * pages,
            mine.len()
        )
    })?;
    let by: HashSet<u32> = mine.iter().map(|s| s.tid).collect();
    ensure(by == workers, || {
        format!("region faults from {by:?}, workers {workers:?}")
    })?;
    let ordered = mine
        .windows(2)
        .filter(|w| w[0].cpu == w[1].cpu)
        .all(|w| w[0].time <= w[1].time);
    ensure(ordered, || {
        "samples of one CPU ring out of time order".into()
    })?;
    Ok(format!(
        "{} samples, {} in the region ({} pages by 2 threads), CPUs {:?}",
        run.samples.len(),
        mine.len(),
        2 * pages,
        run.cpus
    ))
}

/// A one-page ring, not drained while a child first-touches `pages` pages, overflows.
/// The kernel reports the loss (`PERF_RECORD_LOST`) with its next record, once the ring
/// has room: here when the child faults again after a drain. The samples kept still
/// parse and belong to the child.
pub fn overflow(exe: &Path, pages: usize) -> Outcome {
    let cfg = SamplerConfig {
        ring_pages: 1,
        ..SamplerConfig::default()
    };
    let mut s = Session::start(exe, &["two-regions", &pages.to_string()], Some(&cfg))?;
    s.set_draining(false);
    s.go();
    s.until("touched", LIMIT)?;
    s.set_draining(true);
    s.go();
    let run = s.finish(LIMIT)?;
    let d = run.drained;
    ensure(d.lost > 0, || {
        format!("a one-page ring lost nothing: {d:?}")
    })?;
    ensure(d.samples + d.lost >= pages as u64, || {
        format!(
            "kept + lost = {} < {pages} first-phase faults",
            d.samples + d.lost
        )
    })?;
    let tids: HashSet<u32> = run.values("tid").into_iter().map(|t| t as u32).collect();
    ensure(
        run.samples
            .iter()
            .all(|s| s.pid == run.pid && tids.contains(&s.tid)),
        || "a kept sample is not the child's".into(),
    )?;
    Ok(format!(
        "1-page rings: {} samples kept, {} reported lost, for {} first touches",
        d.samples,
        d.lost,
        2 * pages
    ))
}

/// A child touches `pages` pages, its soft-dirty bits are cleared from outside, and it
/// writes them again: each rewrite faults exactly when the kernel has soft-dirty tracking.
/// With `require`, a kernel without it is a failure.
pub fn soft_dirty(exe: &Path, pages: usize, require: bool) -> Outcome {
    let available = soft_dirty_available(&FsRoot::default()).map_err(|e| e.to_string())?;
    ensure(available || !require, || {
        "soft-dirty injection unavailable (kernel without CONFIG_MEM_SOFT_DIRTY)".into()
    })?;
    let mut s = start(exe, &["rewrite", &pages.to_string()])?;
    s.go();
    s.until("touched", LIMIT)?;
    let before = s.run.in_region().len();
    inject_soft_dirty_faults(&FsRoot::default(), s.pid() as i32).map_err(|e| e.to_string())?;
    s.go();
    let run = s.finish(LIMIT)?;
    let extra = run.in_region().len() - before;
    ensure(before >= pages, || {
        format!("{before} first-touch samples for {pages} pages")
    })?;
    if available {
        ensure(extra >= pages, || {
            format!("soft-dirty on, but {extra} extra faults for {pages} rewritten pages")
        })?;
    } else {
        ensure(extra == 0, || {
            format!("soft-dirty off, yet {extra} extra faults on present pages")
        })?;
    }
    Ok(format!(
        "available={available}: {extra} extra write faults after clear_refs 4 on {pages} pages"
    ))
}

/// A fault on a page that is mapped says the page's size: a child writes 4 MiB again
/// after a fork made it copy-on-write. First touches say 0 (nothing mapped yet); the
/// rewrites say 2 MiB for the first write to each transparent huge page (the kernel then
/// splits it for copy-on-write), 4 KiB for the others and for base pages. Needs Linux
/// 5.11 (`PERF_SAMPLE_DATA_PAGE_SIZE`); on older kernels every sample says 0.
pub fn page_size(exe: &Path) -> Outcome {
    const HUGE: u64 = 2 << 20;
    let mut s = start(exe, &["cow-huge"])?;
    s.go();
    s.until("touched", LIMIT)?;
    let first = s.run.in_region();
    s.go();
    let run = s.finish(LIMIT)?;
    let rewrites = &run.in_region()[first.len()..];
    let huge_kb = run
        .values("huge-kb")
        .first()
        .copied()
        .ok_or("no huge-kb line")?;
    ensure(first.iter().all(|f| f.page_size == 0), || {
        format!(
            "a first touch with a page size: {:?}",
            first.iter().find(|f| f.page_size != 0)
        )
    })?;
    ensure(!rewrites.is_empty(), || "no copy-on-write faults".into())?;
    ensure(
        rewrites.iter().all(|f| [4096, HUGE].contains(&f.page_size)),
        || {
            format!(
                "a copy-on-write fault with page size {:?}",
                rewrites
                    .iter()
                    .find(|f| ![4096, HUGE].contains(&f.page_size))
            )
        },
    )?;
    let on_huge = rewrites.iter().filter(|f| f.page_size == HUGE).count() as u64;
    let want = huge_kb * 1024 / HUGE;
    ensure(on_huge == want, || {
        format!("{on_huge} faults on 2 MiB pages, but {want} huge pages mapped ({huge_kb} kB)")
    })?;
    Ok(format!(
        "{} first touches say 0; of {} copy-on-write faults {on_huge} say 2 MiB ({huge_kb} kB in huge pages)",
        first.len(),
        rewrites.len()
    ))
}

/// Attaching to a pid that cannot exist fails with the syscall, the errno and the fix.
pub fn missing_pid() -> Outcome {
    // pid_max is at most 2^22.
    let err = PerfSampler::open(&FsRoot::default(), (1 << 22) + 1, &SamplerConfig::default())
        .err()
        .ok_or("attached to a pid that cannot exist")?;
    let msg = err.to_string();
    ensure(
        msg.contains("perf_event_open") && msg.contains("exited"),
        || msg.clone(),
    )?;
    Ok(msg)
}

/// The way `tdmap run` starts a program that knows nothing of tdmap: fork, attach the
/// sampler to the child's pid, then let it exec. Here the program is `sh`, which execs
/// the toucher without a gate (stdin is /dev/null) and its report goes to a file: every
/// fault from the first instruction on is seen, both processes' images sharing the pid.
pub fn gated_exec(exe: &Path, pages: usize) -> Outcome {
    let report = std::env::temp_dir().join(format!("tdmap-gated-{}", std::process::id()));
    let script = r#"exec "$0" --toucher first-touch 2 "$1" </dev/null >"$2""#;
    let args: Vec<OsString> = [
        exe.as_os_str(),
        pages.to_string().as_ref(),
        report.as_os_str(),
    ]
    .iter()
    .map(|a| a.to_os_string())
    .collect();
    let argv = [vec![OsString::from("-c"), script.into()], args].concat();
    let mut child = spawn_gated("sh".as_ref(), &argv).map_err(|e| e.to_string())?;
    let pid = child.pid();
    let mut sampler = PerfSampler::open(&FsRoot::default(), pid, &SamplerConfig::default())
        .map_err(|e| format!("the perf sampler could not attach to a child: {e}"))?;
    child.release().map_err(|e| e.to_string())?;
    let mut run = Run {
        pid: pid as u32,
        cpus: sampler.cpus(),
        ..Run::default()
    };
    let status = loop {
        sampler
            .wait(Duration::from_millis(5), None)
            .map_err(|e| e.to_string())?;
        run.drained
            .add(sampler.drain(&mut run.samples).map_err(|e| e.to_string())?);
        if let Some(st) = child.try_wait().map_err(|e| e.to_string())? {
            break st;
        }
    };
    run.drained
        .add(sampler.drain(&mut run.samples).map_err(|e| e.to_string())?);
    let text = std::fs::read_to_string(&report).map_err(|e| e.to_string());
    let _ = std::fs::remove_file(&report);
    ensure(status.success(), || {
        format!("sh + toucher ended with {status}")
    })?;
    run.lines = text?
        .lines()
        .filter_map(|l| l.strip_prefix(crate::faults::PREFIX))
        .map(String::from)
        .collect();
    let detail = verify_first_touch(&run, pages)?;
    // sh's own start-up faults prove the sampler was there before the program ran.
    let first_touch = run.in_region().iter().map(|s| s.time).min().unwrap_or(0);
    let startup = run.samples.iter().filter(|s| s.time < first_touch).count();
    ensure(startup > 0, || {
        "no fault of sh's start-up was sampled".into()
    })?;
    Ok(format!(
        "sh then the toucher: {startup} start-up faults before the first touch; {detail}"
    ))
}

/// Attaching to a process of another user (pid 1, root's) without privilege is refused,
/// naming the syscall, the errno and the fix. As root, the attempt runs in a copy of this
/// executable started as `nobody` through setpriv(1), `--try-open 1`.
pub fn foreign_pid(exe: &Path) -> Outcome {
    let msg = if is_root() {
        let dir = std::env::temp_dir().join(format!("tdmap-foreign-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let copy = dir.join("probe");
        let out = std::fs::copy(exe, &copy)
            .and_then(|_| {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))?;
                std::process::Command::new("setpriv")
                    .args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
                    .arg(&copy)
                    .args(["--try-open", "1"])
                    .output()
            })
            .map_err(|e| format!("cannot run setpriv (util-linux) as nobody: {e}"));
        let _ = std::fs::remove_dir_all(&dir);
        String::from_utf8_lossy(&out?.stdout).trim().to_string()
    } else {
        try_open(1)
    };
    let named = msg.contains("perf_event_open") && msg.contains("os error 13");
    ensure(named && msg.contains("CAP_PERFMON"), || {
        format!("got: {msg:?}")
    })?;
    Ok(msg)
}

/// The error (or "attached") of opening the sampler on `pid`, for `--try-open`.
pub fn try_open(pid: i32) -> String {
    match PerfSampler::open(&FsRoot::default(), pid, &SamplerConfig::default()) {
        Ok(_) => "attached".into(),
        Err(e) => e.to_string(),
    }
}
