//! `tdmap trace [-o out.trace] -- ./prog args`: runs a program built with a tdmap front and
//! writes the exact trace of its loads and stores (trace-based mapping §III-A; the
//! "oracle" of kMAF), plus which thread first touched each page (as Fault events).
//!
//! The runtime inside the program writes raw chunks to a scratch file beside the output;
//! this process compresses them into the trace format afterwards, off the program's hot
//! path. A control file carries the runtime's handshake, crashes and write failures.
//!
//! With `--model-only` (for programs too large to trace) no trace is written: this
//! process reads the chunks while the program runs and feeds the sharing model (see
//! `model.rs`), so the program itself stays as thin as when tracing.

mod model;
mod raw;

use crate::exit::{input, FAILED, OK};
use anyhow::{Context, Result};
use raw::{wire, RawChunk, RawEvent, RawReader};
use serde::Serialize;
use std::ffi::OsString;
use std::io::{BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::Instant;
use tdmap_trace::{Access, Fault, Header, ThreadInfo, TraceStatus, Writer};

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
    /// Only count accesses in the callbacks and write no trace (measures their cost).
    #[arg(long)]
    count_only: bool,
    /// Write no trace: feed the sharing model while the program runs and write its
    /// result as JSON (header, both sharing matrices, kMAF metrics, each page's NUMA
    /// vector and first toucher) to -o (default PROGRAM.model.json), for programs too
    /// large to trace. `tdmap map --model FILE` maps from it. Memory follows the pages
    /// touched, not the number of accesses.
    #[arg(long, conflicts_with = "count_only")]
    model_only: bool,
    /// With --model-only: sharers kept per cache line, a number K (kMAF's last K threads)
    /// or `all` (every thread, the trace paper's exact count; the default).
    #[arg(long, value_name = "N|all", requires = "model_only")]
    sharers: Option<tdmap_sharing::Sharers>,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// The program built with a tdmap front (`tdmap cc`, `tdmap gcc`, ...), then its
    /// arguments (after `--`).
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
    accesses: u64,
    first_touch_pages: u64,
    filtered: u64,
    trace_bytes: u64,
    bytes_per_access: f64,
    run_seconds: f64,
    convert_seconds: f64,
}

/// Scratch files the runtime creates; removed whatever happens.
struct Scratch {
    data: PathBuf,
    ctl: PathBuf,
}

impl Drop for Scratch {
    fn drop(&mut self) {
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
        .check()?;
    if crate::paths::exists(&output) && !args.force && !args.count_only {
        return Err(input(format!(
            "{} exists; pass --force to overwrite it or -o to choose another file",
            output.display()
        )));
    }
    let has_runtime = check_instrumented(&exe)?;
    let scratch = scratch_files(&output)?;
    if args.model_only {
        return model::run(&args, &output, &scratch, has_runtime);
    }
    let started = Instant::now();
    let status = spawn(&args, &scratch)?;
    let mut sum = Summary {
        run_seconds: started.elapsed().as_secs_f64(),
        ..Summary::default()
    };
    sum.exit_code = status.code();
    sum.signal = status.signal();
    let ctl = Control::read(&scratch.ctl);
    check_hello(&ctl, &args, &scratch, has_runtime)?;
    if args.count_only {
        sum.accesses = ctl.done.unwrap_or(0);
        sum.status = "counted".into();
        print_summary(&sum, args.json)?;
        return Ok(child_code(&status));
    }
    let t = Instant::now();
    let header = Header {
        page_size: ctl.page_size as u32,
        status: TraceStatus::Incomplete,
        ..Header::new(
            args.command
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            "local",
        )
    };
    let (torn, stats) = convert(&scratch.data, &output, args.force, header, &ctl, &status)?;
    sum.convert_seconds = t.elapsed().as_secs_f64();
    sum.output = Some(output.clone());
    fill(&mut sum, &stats, &output, status_of(&ctl, &status, torn));
    print_summary(&sum, args.json)?;
    explain(&sum, &ctl, &status);
    if sum.accesses == 0 {
        let _ = std::fs::remove_file(&output);
        anyhow::bail!("the program recorded no accesses, so no trace was written");
    }
    let failed = ctl.crashed.is_some() || status.signal().is_some() || ctl.write_errno.is_some();
    Ok(if failed { FAILED } else { child_code(&status) })
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

/// Refuses an ELF file without the runtime's marker before running it; true when the
/// marker is there (false for scripts, which only the runtime's handshake can tell).
fn check_instrumented(exe: &Path) -> Result<bool> {
    let bytes =
        std::fs::read(exe).map_err(|e| input(format!("cannot read {}: {e}", exe.display())))?;
    let is_elf = bytes.starts_with(b"\x7fELF");
    if is_elf && !bytes.windows(wire::MARKER.len()).any(|w| w == wire::MARKER) {
        return Err(input(format!(
            "{} was not built with a tdmap front (it holds no tdmap runtime); {REBUILD}",
            exe.display()
        )));
    }
    Ok(is_elf)
}

fn default_output(exe: &Path, model: bool) -> PathBuf {
    let name = exe
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "tdmap".into());
    let ext = if model { "model.json" } else { "trace" };
    PathBuf::from(format!("{name}.{ext}"))
}

/// Names the runtime's scratch files beside the output, after checking it can write there.
fn scratch_files(output: &Path) -> Result<Scratch> {
    let base = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = output
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
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

fn spawn(args: &Args, scratch: &Scratch) -> Result<ExitStatus> {
    let name = args.command[0].to_string_lossy();
    let mut child = command(args, scratch)
        .spawn()
        .map_err(|e| input(format!("cannot run '{name}': {e}")))?;
    child
        .wait()
        .with_context(|| format!("waiting for '{name}'"))
}

/// The program's command line with the runtime's environment.
fn command(args: &Args, scratch: &Scratch) -> Command {
    let mut cmd = Command::new(&args.command[0]);
    cmd.args(&args.command[1..])
        .env(wire::ENV_DATA, &scratch.data)
        .env(wire::ENV_CTL, &scratch.ctl);
    cmd.env(wire::ENV_FILTER, if args.filter_lines { "1" } else { "0" });
    cmd.env(
        wire::ENV_COUNT_ONLY,
        if args.count_only { "1" } else { "0" },
    );
    cmd
}

/// What the runtime said through the control file.
#[derive(Debug, Default)]
struct Control {
    hello: bool,
    page_size: u64,
    write_errno: Option<u64>,
    crashed: Option<u32>,
    done: Option<u64>,
}

impl Control {
    fn read(path: &Path) -> Control {
        let mut c = Control {
            page_size: 4096,
            ..Control::default()
        };
        for m in wire::Msg::decode_all(&std::fs::read(path).unwrap_or_default()) {
            match m.tag {
                wire::MSG_HELLO => c.hello = true,
                wire::MSG_PAGE_SIZE => c.page_size = m.a,
                wire::MSG_WRITE_FAILED => c.write_errno = Some(m.a),
                wire::MSG_CRASHED => c.crashed = Some(m.b),
                wire::MSG_DONE => c.done = Some(m.a),
                _ => {}
            }
        }
        c
    }
}

/// Crashed if the program died of a signal; Incomplete if a write failed or the program
/// never reached its exit handler; else Complete.
fn status_of(ctl: &Control, status: &ExitStatus, torn: bool) -> TraceStatus {
    if ctl.crashed.is_some() || status.signal().is_some() {
        TraceStatus::Crashed
    } else if torn || ctl.write_errno.is_some() || ctl.done.is_none() {
        TraceStatus::Incomplete
    } else {
        TraceStatus::Complete
    }
}

/// Counts gathered while converting.
#[derive(Debug, Default)]
struct Stats {
    threads: u32,
    accesses: u64,
    faults: u64,
    filtered: u64,
}

/// Converts the raw chunks into the trace at `output`; returns whether the raw file was torn.
fn convert(
    raw: &Path,
    output: &Path,
    force: bool,
    header: Header,
    ctl: &Control,
    status: &ExitStatus,
) -> Result<(bool, Stats)> {
    let file = std::fs::File::open(raw)
        .with_context(|| format!("opening the raw trace {}", raw.display()))?;
    let mut rd = RawReader::new(BufReader::with_capacity(1 << 20, file));
    let creating = || format!("creating {}", output.display());
    let out = crate::paths::create_new(output, force).with_context(creating)?;
    // The writer's errors name the file already.
    let writer = Writer::from_file(out, output, header).context("creating the trace")?;
    let mut stats = Stats::default();
    let mut threads: Vec<ThreadInfo> = Vec::new();
    let dec = Decoder::new(ctl.page_size);
    let mut base = None;
    let (mut acc, mut faults) = (Vec::new(), Vec::new());
    while let Some(ev) = rd.next_event().context("reading the raw trace")? {
        match ev {
            RawEvent::Thread { id, os_tid, time } => {
                base.get_or_insert(time);
                threads.push(ThreadInfo {
                    id,
                    os_tid: os_tid as i32,
                    cpu: None,
                });
                stats.threads = stats.threads.max(id + 1);
            }
            RawEvent::End { filtered, .. } => stats.filtered += filtered,
            RawEvent::Accesses(mut c) => {
                c.rebase(*base.get_or_insert(c.ticks[0]));
                let split = dec.chunk(&c, &mut acc, &mut faults);
                let thread = c.thread;
                writer.append_accesses(thread, &acc[..split])?;
                if !faults.is_empty() {
                    writer.append_faults(thread, &faults)?;
                    writer.append_accesses(thread, &acc[split..])?;
                }
                stats.accesses += acc.len() as u64;
                stats.faults += faults.len() as u64;
                stats.threads = stats.threads.max(thread + 1);
            }
        }
    }
    threads.sort_by_key(|t| t.id);
    writer.set_threads(threads)?;
    writer.finish(status_of(ctl, status, rd.torn))?;
    Ok((rd.torn, stats))
}

/// Turns raw chunks into trace events.
struct Decoder {
    page_mask: u64,
    /// NUMA node (logical index) of each OS CPU number, from this machine's topology.
    cpu_node: Vec<u32>,
}

impl Decoder {
    fn new(page_size: u64) -> Decoder {
        let cpu_node = match tdmap_topo::MachineSpec::parse("").load(None) {
            Ok(topo) => {
                let n = topo.pus.iter().map(|p| p.os + 1).max().unwrap_or(0);
                let mut map = vec![0; n];
                topo.pus.iter().for_each(|p| map[p.os] = p.node as u32);
                map
            }
            Err(e) => {
                eprintln!("tdmap: cannot read this machine's topology ({e}); first touches are put on node 0");
                Vec::new()
            }
        };
        Decoder {
            page_mask: !(page_size.max(1) - 1),
            cpu_node,
        }
    }

    /// Unpacks one chunk into accesses and first-touch faults; returns how many accesses
    /// go before the faults. Every fault takes the time of the chunk's first first-touch
    /// access and is written right after it, so each thread's timeline stays ordered and
    /// a trace starts with accesses. That time is still before any other thread's access
    /// to the page, since an earlier one would have made that thread the first. A fault's
    /// CPU is where the thread ran at the first touch, its node that CPU's: where
    /// first-touch placement puts the page.
    fn chunk(&self, c: &RawChunk, acc: &mut Vec<Access>, faults: &mut Vec<Fault>) -> usize {
        acc.clear();
        faults.clear();
        let mut split = None;
        let thread = c.thread;
        let times = raw::times(&c.ticks, c.t1, c.records.len());
        for (i, (&w, time)) in c.records.iter().zip(times).enumerate() {
            if wire::unpack_cpu(w).is_some() {
                continue;
            }
            let r = wire::unpack(w);
            acc.push(Access {
                thread,
                addr: r.addr,
                size: r.size,
                write: r.write,
                time,
            });
            if r.first_touch {
                // A crash can cut the CPU word off: then the CPU is unknown (u32::MAX).
                let cpu = c
                    .records
                    .get(i + 1)
                    .and_then(|&n| wire::unpack_cpu(n))
                    .unwrap_or(u32::MAX);
                let node = self.cpu_node.get(cpu as usize).copied().unwrap_or(0);
                let addr = r.addr & self.page_mask;
                let time = acc[*split.get_or_insert(acc.len() - 1)].time;
                faults.push(Fault {
                    thread,
                    addr,
                    cpu,
                    node,
                    time,
                });
            }
        }
        split.map_or(acc.len(), |i| i + 1)
    }
}

fn fill(sum: &mut Summary, stats: &Stats, output: &Path, status: TraceStatus) {
    sum.status = format!("{status:?}");
    sum.threads = stats.threads;
    sum.accesses = stats.accesses;
    sum.first_touch_pages = stats.faults;
    sum.filtered = stats.filtered;
    sum.trace_bytes = std::fs::metadata(output).map(|m| m.len()).unwrap_or(0);
    sum.bytes_per_access = sum.trace_bytes as f64 / (stats.accesses.max(1)) as f64;
}

fn child_code(status: &ExitStatus) -> i32 {
    status.code().unwrap_or(FAILED).max(OK)
}

fn print_summary(sum: &Summary, json: bool) -> Result<()> {
    if json {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", serde_json::to_string_pretty(sum)?)?;
        return Ok(());
    }
    let to = sum
        .output
        .as_ref()
        .map(|p| format!(" -> {}", p.display()))
        .unwrap_or_default();
    eprintln!(
        "tdmap: {} accesses, {} threads, {} first-touch pages, {} filtered, {:.2} bytes/access, {}{to}",
        sum.accesses, sum.threads, sum.first_touch_pages, sum.filtered, sum.bytes_per_access, sum.status
    );
    Ok(())
}

/// Says on stderr why a trace is not Complete.
fn explain(sum: &Summary, ctl: &Control, status: &ExitStatus) {
    if let Some(e) = ctl.write_errno {
        let err = std::io::Error::from_raw_os_error(e as i32);
        eprintln!("tdmap: writing the raw trace failed ({err}); the trace is marked Incomplete");
    }
    if let Some(sig) = ctl.crashed.or(status.signal().map(|s| s as u32)) {
        eprintln!(
            "tdmap: the program died of signal {sig}; the trace was flushed and marked Crashed"
        );
    } else if let Some(code) = sum.exit_code.filter(|&c| c != 0) {
        eprintln!("tdmap: the program exited with code {code}");
    }
}
