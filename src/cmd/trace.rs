//! `tdmap trace [-o out.trace] -- ./prog args`: runs a program built with a tdmap front and
//! writes the exact trace of its loads and stores (trace-based mapping §III-A; the
//! "oracle" of kMAF), plus which thread first touched each page (as Fault events).
//!
//! The runtime inside the program writes raw chunks to a scratch file beside the output;
//! this process compresses them into the trace format off the program's hot path: while
//! the program runs as one process with no shared mapping (`early.rs`, which keeps the
//! scratch file within `--buffer-mib`), the rest after it exits (`convert.rs`), each
//! process's stream kept meanwhile in a compressed spill (`spill.rs`) so that the raw
//! files stay within `--buffer-mib` too. A control file carries the runtime's handshake, crashes and write
//! failures. The program starts through tdmap-sys as under `tdmap run`, and signals sent
//! to tdmap go to it until the trace is written.
//!
//! Forked children are traced too, each into raw files of its own (`procs.rs`): their
//! threads become tasks numbered by process, and their pages are keyed by backing object
//! where shared (`keys.rs`), so the trace's matrix covers multi-process programs.
//!
//! With `--model-only` (for programs too large to trace) no trace is written: this
//! process reads the chunks while the program runs and feeds the sharing model (see
//! `model.rs`), so the program itself stays as thin as when tracing; it models the
//! program's own process only.

mod convert;
mod decode;
mod early;
mod follow;
mod keys;
mod model;
mod omp;
mod procs;
mod raw;
mod spill;

use crate::exit::{input, FAILED, OK};
use anyhow::{Context, Result};
use convert::{convert, Stats};
use decode::Decoder;
use procs::Control;
use raw::wire;
use serde::Serialize;
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Instant;
use tdmap_sys::{Forwarding, GatedChild, STOP_SIGNALS};
use tdmap_trace::{Header, TraceStatus, Writer};

/// Arguments of `tdmap trace`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where to write the trace. Default: PROGRAM.trace in the current directory.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    /// Overwrite the output if it exists (by default an existing file is an error).
    #[arg(long)]
    force: bool,
    /// Drop an access when the same thread's previous one was to the same cache line and
    /// of the same kind, and only count it: smaller traces, same sharing pattern.
    #[arg(long)]
    filter_lines: bool,
    /// Keep every read: by default a thread's reads of the line its previous record read
    /// (spin-waiting on a flag) collapse into that record with a count, which leaves the
    /// amount metric exact (see docs/formats.md "Collapsed reads").
    #[arg(long)]
    no_collapse: bool,
    /// Only count accesses in the callbacks and write no trace (measures their cost).
    #[arg(long)]
    count_only: bool,
    /// Record N ms of every M ms of the run (whole milliseconds, 0 < N <= M) and only
    /// count the accesses in between, as drmemtrace's burst tracing does: a long run
    /// gives a trace about N/M of its full size with the sharing pattern of its windows.
    /// Windows open at the program's start, then every M ms. The summary gives windows
    /// traced and accesses recorded against accesses made (see docs/trace-window.md).
    #[arg(long, value_name = "N:M", conflicts_with = "count_only")]
    window: Option<tdmap_wire::window::Window>,
    /// Write no trace: feed the sharing model while the program runs and write its
    /// result as JSON (header, both sharing matrices, kMAF metrics, each page's NUMA
    /// vector and first toucher) to -o (default PROGRAM.model.json), for programs too
    /// large to trace. `tdmap map --model FILE` maps from it. Memory follows the pages
    /// touched, not the number of accesses. Only the program's own process is modelled:
    /// its forked children do not record.
    #[arg(long, conflicts_with = "count_only")]
    model_only: bool,
    /// The most MiB of raw records the program may be ahead of tdmap, which converts
    /// (or, with --model-only, models) them while it runs; a thread about to write past
    /// it waits. 0: no limit. Tracing converts while it runs while the program is one
    /// process with no shared mapping; past that each process's stream is compressed
    /// into a spill beside the trace (about the trace's size) until the exit, its raw
    /// file held within the buffer. --model-only keeps the stream in memory (/dev/shm), never on the disk.
    #[arg(long, value_name = "MIB", default_value_t = 64)]
    buffer_mib: u64,
    /// With --model-only: sharers kept per cache line, a number K (kMAF's last K threads)
    /// or `all` (every thread, the trace paper's exact count; the default).
    #[arg(long, value_name = "N|all", requires = "model_only")]
    sharers: Option<tdmap_sharing::Sharers>,
    /// Print the summary as JSON on stderr (the program owns stdout).
    #[arg(long)]
    json: bool,
    /// Write the summary as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    summary: Option<PathBuf>,
    /// The program built with a tdmap front (`tdmap cc`, `tdmap gcc`, ...), then its
    /// arguments (after `--`). The processes it forks, and instrumented programs they
    /// exec, are traced too: tasks are numbered by process, then by thread, and pages
    /// shared between processes are keyed by backing object. A launcher (`sh -c
    /// './prog'`) is accepted when its arguments name an instrumented program. Its
    /// OpenMP runtime gets KMP_BLOCKTIME=0 and GOMP_SPINCOUNT=0 (idle workers sleep
    /// instead of spinning) unless one of those or OMP_WAIT_POLICY is set.
    #[arg(last = true, required = true, value_name = "PROGRAM")]
    command: Vec<OsString>,
}

/// What one traced run produced.
#[derive(Debug, Default, Serialize)]
struct Summary {
    output: Option<PathBuf>,
    status: String,
    exit_code: Option<i32>,
    signal: Option<i32>,
    threads: u32,
    processes: usize,
    accesses: u64,
    first_touch_pages: u64,
    filtered: u64,
    collapsed_reads: u64,
    trace_bytes: u64,
    bytes_per_access: f64,
    /// `--window N:M`, when given.
    window: Option<String>,
    /// Recording windows opened (1 without `--window`).
    windows: u64,
    /// Accesses the program made, recorded or not (`accesses` + `filtered` +
    /// `collapsed_reads` of them were recorded).
    accesses_made: u64,
    run_seconds: f64,
    convert_seconds: f64,
}

/// Scratch files the runtime creates; removed whatever happens.
struct Scratch {
    data: PathBuf,
    ctl: PathBuf,
}

impl Drop for Scratch {
    /// Removes the program's files and those its children and snapshots added.
    fn drop(&mut self) {
        for f in procs::scratch_files(self) {
            let _ = std::fs::remove_file(f);
        }
        let _ = std::fs::remove_file(&self.data);
        let _ = std::fs::remove_file(&self.ctl);
    }
}

/// Runs `tdmap trace`.
pub fn run(args: Args) -> Result<i32> {
    let prog = &args.command[0];
    let exe = super::cc::find_in_path(prog).ok_or_else(|| {
        input(format!(
            "program '{}' not found; check the path (or PATH)",
            prog.to_string_lossy()
        ))
    })?;
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| default_output(&exe, args.model_only));
    crate::paths::Files::new()
        .reads("the program", Some(&exe))
        .writes_trace("-o", (!args.count_only).then_some(&output))
        .writes("--summary", args.summary.as_deref())
        .check()?;
    if crate::paths::exists(&output) && !args.force && !args.count_only {
        return Err(input(format!(
            "{} exists; pass --force to overwrite it or -o to choose another file",
            output.display()
        )));
    }
    let has_runtime = check_instrumented(&exe, &args.command[1..])?;
    let scratch = scratch_files(&output, args.model_only)?;
    if args.model_only {
        return model::run(&args, &output, &scratch, has_runtime);
    }
    // The trace's header goes to the disk before the program runs, so a scratch file
    // that fills the disk cannot leave a 0-byte trace; removed again if the run fails.
    let trace = (!args.count_only)
        .then(|| open_trace(&args, &output))
        .transpose()?;
    let started = Instant::now();
    // Alive until the trace is written: a signal then neither kills tdmap nor leaves the
    // scratch files behind.
    let (mut child, fwd) = start(&args, &scratch)?;
    let early = match &trace {
        Some(t) => early::convert_while_alone(&scratch, &mut child, &t.writer)?,
        None => early::Early::none(),
    };
    // Not alone any more (or a write error): every process's stream goes to its spill
    // while the program runs, so the raw files stay within --buffer-mib.
    let spilled = match (&trace, early.status) {
        (Some(_), None) => spill::spill_while_running(&scratch, &mut child, early.from)?,
        _ => spill::Spilled::default(),
    };
    let status = match early.status.or(spilled.status) {
        Some(s) => s,
        None => child
            .wait()
            .with_context(|| format!("waiting for '{}'", args.command[0].to_string_lossy()))?,
    };
    let converted = (early.from, early.threads());
    // A signal from now on is for tdmap itself: stop converting, keep what is written.
    let at_exit = fwd.count();
    let stop = || (fwd.count() > at_exit).then(|| fwd.received()).flatten();
    let mut sum = Summary {
        run_seconds: started.elapsed().as_secs_f64(),
        ..Summary::default()
    };
    sum.exit_code = status.code();
    sum.signal = status.signal();
    let ctl = Control::read(&scratch.ctl);
    check_hello(&ctl, &args, &scratch, has_runtime)?;
    if args.count_only {
        let procs = procs::discover(&scratch, ctl, converted, &spilled);
        sum.processes = procs.len();
        sum.accesses = procs.iter().filter_map(|p| p.ctl.done).sum();
        sum.status = "counted".into();
        print_line(&sum, &args)?;
        return Ok(child_code(&status));
    }
    let t = Instant::now();
    let mut trace = trace.expect("opened unless counting");
    let mut procs = procs::discover(&scratch, ctl, converted, &spilled);
    let maps: Vec<&Path> = procs.iter().map(|p| p.maps.as_path()).collect();
    let keys = keys::Keys::read(&maps);
    let done = convert(
        &mut procs,
        &spilled,
        keys.as_ref(),
        &trace.writer,
        &status,
        early,
        stop,
    )?;
    sum.convert_seconds = t.elapsed().as_secs_f64();
    sum.output = Some(output.clone());
    sum.processes = procs.len();
    fill(&mut sum, &done.stats, &output, done.status);
    sum.window = args.window.map(|w| w.to_string());
    sum.windows = procs
        .iter()
        .map(|p| p.ctl.windows)
        .max()
        .unwrap_or(0)
        .max(1);
    sum.accesses_made = procs.iter().filter_map(|p| p.ctl.done).sum();
    print_line(&sum, &args)?;
    let ctl = &procs[0].ctl;
    // A full disk fails both the raw stream and the trace (written side by side while
    // the program runs): one line for it, the trace's.
    explain(&sum, ctl, &status, done.write_err.is_none());
    explain_children(&procs);
    if let Some(e) = done.write_err {
        trace.keep = true;
        eprintln!(
            "tdmap: {e}; the trace keeps every whole frame written before and is marked Incomplete"
        );
        return Ok(FAILED);
    }
    if let Some(sig) = done.stopped {
        trace.keep = true;
        eprintln!("tdmap: signal {sig} while writing the trace; it keeps what was written and is marked Incomplete");
        return Ok(128 + sig);
    }
    if sum.accesses == 0 {
        anyhow::bail!("the program recorded no accesses, so no trace was written");
    }
    trace.keep = true;
    Ok(exit_code(ctl, &status))
}

/// The trace being written; its file is removed on drop unless `keep` is set.
struct OpenTrace {
    writer: Writer,
    path: PathBuf,
    keep: bool,
}

impl Drop for OpenTrace {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Creates the trace and writes its header; exit 2 if that fails (before the program runs).
fn open_trace(args: &Args, output: &Path) -> Result<OpenTrace> {
    let header = Header {
        page_size: tdmap_sys::page_size() as u32,
        status: TraceStatus::Incomplete,
        ..Header::new(
            args.command
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            "local",
        )
    };
    // Opened without following a link planted at the name (O_EXCL; --force removes
    // whatever is there first, never its target).
    let opened = crate::paths::create_new(output, args.force)
        .map_err(|e| input(format!("{}: {e}; choose another -o", output.display())))?;
    match Writer::from_file(opened, output, header) {
        Ok(writer) => Ok(OpenTrace {
            writer,
            path: output.to_path_buf(),
            keep: false,
        }),
        Err(e) => {
            let _ = std::fs::remove_file(output);
            Err(input(format!("{e}; free some space or choose another -o")))
        }
    }
}

/// The program's status as a shell reports it (128 + N for a death by signal N), or 1
/// when the program exited but its trace could not be written whole.
fn exit_code(ctl: &Control, status: &ExitStatus) -> i32 {
    match status.signal() {
        Some(sig) => 128 + sig,
        None if ctl.crashed.is_some() || ctl.write_errno.is_some() => FAILED,
        None => child_code(status),
    }
}

/// The fix named when a program holds no tdmap runtime.
const REBUILD: &str = "rebuild it with `tdmap cc`/`tdmap c++` (clang) or `tdmap gcc`/`tdmap g++`/`tdmap gfortran` and trace again";

/// Fails unless the runtime answered: exit 1 if an instrumented program's runtime could
/// not start, exit 2 if the program holds no runtime at all.
fn check_hello(ctl: &Control, args: &Args, scratch: &Scratch, has_runtime: bool) -> Result<()> {
    let prog = args.command[0].to_string_lossy();
    if !ctl.hello && has_runtime {
        anyhow::bail!(
            "the tdmap runtime inside '{prog}' did not start (it must create {}); check that directory is writable",
            scratch.ctl.display()
        );
    }
    if !ctl.hello {
        return Err(input(format!(
            "'{prog}' was not built with a tdmap front (no tdmap runtime answered); {REBUILD}"
        )));
    }
    Ok(())
}

/// Refuses an ELF file without the runtime's marker before running it, unless one of its
/// arguments names an instrumented program (a launcher: `sh -c './prog 8'`, `env`,
/// `mpirun`), which the runtime's handshake then finds; true when the marker is there
/// (false for scripts and launchers, which only the handshake can tell).
fn check_instrumented(exe: &Path, args: &[OsString]) -> Result<bool> {
    let bytes =
        std::fs::read(exe).map_err(|e| input(format!("cannot read {}: {e}", exe.display())))?;
    let is_elf = bytes.starts_with(b"\x7fELF");
    if is_elf && !has_marker(&bytes) && !args.iter().any(names_instrumented) {
        return Err(input(format!(
            "{} was not built with a tdmap front (it holds no tdmap runtime, nor does a program named in its arguments); {REBUILD}",
            exe.display()
        )));
    }
    Ok(is_elf && has_marker(&bytes))
}

fn has_marker(bytes: &[u8]) -> bool {
    bytes.windows(wire::MARKER.len()).any(|w| w == wire::MARKER)
}

/// Whether a word of `arg` (split as a shell would at blanks and `;&|()`) is the path of
/// an ELF file that holds the runtime.
fn names_instrumented(arg: &OsString) -> bool {
    arg.to_string_lossy()
        .split(|c: char| c.is_whitespace() || ";&|()".contains(c))
        .filter(|w| w.contains('/'))
        .any(|w| std::fs::read(w).is_ok_and(|b| b.starts_with(b"\x7fELF") && has_marker(&b)))
}

fn default_output(exe: &Path, model: bool) -> PathBuf {
    let name = exe
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "tdmap".into());
    let ext = if model { "model.json" } else { "trace" };
    PathBuf::from(format!("{name}.{ext}"))
}

/// Where `--model-only` keeps the runtime's raw stream: memory (tmpfs), not the disk.
const MEMORY_DIR: &str = "/dev/shm";

/// Names the runtime's scratch files beside the output, after checking it can write there;
/// with `in_memory` (`--model-only`, which reads the stream as it grows), in
/// [`MEMORY_DIR`] when that is writable, so that only the model reaches the disk.
fn scratch_files(output: &Path, in_memory: bool) -> Result<Scratch> {
    let beside = scratch_in(output, None)?;
    if in_memory {
        if let Ok(s) = scratch_in(output, Some(Path::new(MEMORY_DIR))) {
            return Ok(s);
        }
    }
    Ok(beside)
}

/// The scratch names for `output` in `dir` (default: the output's folder), after
/// checking that a file can be created there.
fn scratch_in(output: &Path, dir: Option<&Path>) -> Result<Scratch> {
    let base = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = dir.unwrap_or_else(|| {
        output
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
    });
    let pid = std::process::id();
    let s = Scratch {
        data: dir.join(format!(".{base}.raw-{pid}")),
        ctl: dir.join(format!(".{base}.ctl-{pid}")),
    };
    let _ = std::fs::remove_file(&s.ctl);
    // A link planted at the probe's name is removed, never followed (O_EXCL).
    let _ = std::fs::remove_file(&s.data);
    crate::paths::create_new(&s.data, false).map_err(|e| {
        input(format!(
            "cannot write in {} ({e}); choose another -o",
            dir.display()
        ))
    })?;
    let _ = std::fs::remove_file(&s.data);
    Ok(s)
}

/// Starts the program with the runtime's environment the way `tdmap run` does (tdmap-sys:
/// tdmap's stdio and signal mask, default dispositions) and forwards signals to it.
fn start(args: &Args, scratch: &Scratch) -> Result<(GatedChild, Forwarding)> {
    let name = args.command[0].to_string_lossy();
    let flag = |on: bool| OsString::from(if on { "1" } else { "0" });
    // --model-only aggregates unless tdmap's own environment says TDMAP_RT_AGGREGATE=0
    // (the reference its exactness test compares with); a trace never does, so it only
    // overrides a value the program would inherit (and otherwise leaves the program's
    // environment, and with it its stack addresses, as before).
    let inherited = std::env::var_os(wire::ENV_AGGREGATE);
    let aggregate = args.model_only && inherited.as_ref().is_none_or(|v| v != "0");
    let mut env = vec![
        (wire::ENV_DATA.into(), scratch.data.clone().into_os_string()),
        (wire::ENV_CTL.into(), scratch.ctl.clone().into_os_string()),
        (wire::ENV_FILTER.into(), flag(args.filter_lines)),
        (wire::ENV_COLLAPSE.into(), flag(!args.no_collapse)),
        (wire::ENV_COUNT_ONLY.into(), flag(args.count_only)),
        (wire::ENV_CHILDREN.into(), flag(!args.model_only)),
    ];
    if args.model_only || inherited.is_some() {
        env.push((wire::ENV_AGGREGATE.into(), flag(aggregate)));
    }
    env.extend(omp::spin_caps(|v| std::env::var_os(v)));
    if let Some(w) = args.window {
        env.push((tdmap_wire::window::ENV_WINDOW.into(), w.to_string().into()));
    }
    if !args.count_only {
        let bytes = args.buffer_mib.saturating_mul(1 << 20);
        env.push((wire::ENV_BUFFER.into(), bytes.to_string().into()));
    }
    let mut child = tdmap_sys::spawn_gated_env(&args.command[0], &args.command[1..], &env)
        .map_err(|e| input(format!("cannot run '{name}': {e}")))?;
    let fwd = tdmap_sys::forward_signals(child.pid())?;
    child
        .release()
        .map_err(|e| input(format!("cannot run '{name}': {e}")))?;
    Ok((child, fwd))
}

/// The signal that ended the program, as the runtime or the exit status says.
fn death_signal(ctl: &Control, status: &ExitStatus) -> Option<i32> {
    ctl.crashed.map(|s| s as i32).or(status.signal())
}

/// Incomplete if the program was stopped by a signal (SIGTERM, Ctrl-C, ...), a write
/// failed or the program never reached its exit handler; Crashed if it died of another
/// signal; else Complete.
fn status_of(ctl: &Control, status: &ExitStatus, torn: bool) -> TraceStatus {
    match death_signal(ctl, status) {
        Some(sig) if STOP_SIGNALS.contains(&sig) => TraceStatus::Incomplete,
        Some(_) => TraceStatus::Crashed,
        None if torn || ctl.write_errno.is_some() || ctl.done.is_none() => TraceStatus::Incomplete,
        None => TraceStatus::Complete,
    }
}

fn fill(sum: &mut Summary, stats: &Stats, output: &Path, status: TraceStatus) {
    sum.status = format!("{status:?}");
    sum.threads = stats.threads;
    sum.accesses = stats.accesses;
    sum.first_touch_pages = stats.faults;
    sum.filtered = stats.filtered;
    sum.collapsed_reads = stats.collapsed;
    sum.trace_bytes = std::fs::metadata(output).map(|m| m.len()).unwrap_or(0);
    sum.bytes_per_access = sum.trace_bytes as f64 / (stats.accesses.max(1)) as f64;
}

fn child_code(status: &ExitStatus) -> i32 {
    status.code().unwrap_or(FAILED).max(OK)
}

/// The summary: JSON to `--summary FILE` and, with `--json`, on stderr (never on stdout,
/// which is the program's); else one line on stderr.
fn print_summary(sum: &impl Serialize, args: &Args) -> Result<bool> {
    let json = serde_json::to_string_pretty(sum)?;
    if let Some(path) = &args.summary {
        crate::paths::replace(path, format!("{json}\n").as_bytes())
            .with_context(|| format!("writing the summary to {}", path.display()))?;
    }
    if args.json {
        writeln!(std::io::stderr().lock(), "{json}")?;
    }
    Ok(args.json)
}

fn print_line(sum: &Summary, args: &Args) -> Result<()> {
    if print_summary(sum, args)? {
        return Ok(());
    }
    let to = sum
        .output
        .as_ref()
        .map(|p| format!(" -> {}", p.display()))
        .unwrap_or_default();
    eprintln!(
        "tdmap: {} accesses, {} threads in {} processes, {} first-touch pages, {} filtered, {} collapsed reads, {:.2} bytes/access, {}{to}",
        sum.accesses, sum.threads, sum.processes.max(1), sum.first_touch_pages, sum.filtered, sum.collapsed_reads, sum.bytes_per_access, sum.status
    );
    Ok(())
}

/// Names on stderr each forked child whose part of the trace is not whole.
fn explain_children(procs: &[procs::Proc]) {
    for p in &procs[1..] {
        let i = &p.info;
        let why = match (i.status, p.ctl.crashed) {
            (TraceStatus::Complete, _) => continue,
            (_, Some(sig)) => format!("died of signal {sig}"),
            (_, None) if p.ctl.write_errno.is_some() => "could not write its raw trace".into(),
            _ => "ended before its end marker (killed, or exec'd with execl)".into(),
        };
        eprintln!(
            "tdmap: process {} (pid {}) {why}; its part of the trace is marked {:?}",
            i.index, i.pid, i.status
        );
    }
}

/// Says on stderr why a trace is not Complete; the raw stream's write failure only with
/// `raw_failure` (else the trace's own failure says it).
fn explain(sum: &Summary, ctl: &Control, status: &ExitStatus, raw_failure: bool) {
    if let Some(e) = ctl.write_errno.filter(|_| raw_failure) {
        let err = std::io::Error::from_raw_os_error(e as i32);
        eprintln!("tdmap: writing the raw trace failed ({err}); the trace is marked Incomplete");
    }
    if let Some(sig) = death_signal(ctl, status) {
        let mark = if STOP_SIGNALS.contains(&sig) {
            "Incomplete"
        } else {
            "Crashed"
        };
        eprintln!(
            "tdmap: the program died of signal {sig}; the trace was flushed and marked {mark}"
        );
    } else if let Some(code) = sum.exit_code.filter(|&c| c != 0) {
        eprintln!("tdmap: the program exited with code {code}");
    }
}
