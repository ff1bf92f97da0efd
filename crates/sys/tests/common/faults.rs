//! A child process that touches memory on cue, and a driver that attaches the perf
//! page-fault sampler to it before it starts: shared by `tests/perf_faults.rs`,
//! `examples/fault_check.rs` (the VM guest) and `benches/sampler.rs` through `#[path]`.
//! The includer also includes `region.rs` at its crate root.
//!
//! The child is the includer's own executable re-run with `--toucher MODE ARGS...`. It
//! reads one line from stdin before each phase (the gate, so that the sampler is attached
//! before the first fault) and reports on stdout in lines starting with `toucher: `.

use crate::region::{page_size, Region};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};
use tdmap_sys::perf::{Drained, FaultSample, FaultSource, PerfSampler, SamplerConfig, Scope};
use tdmap_sys::{FsRoot, LinuxSys, Sys};

/// The prefix of the child's report lines.
pub const PREFIX: &str = "toucher: ";

fn gettid() -> u32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as u32 }
}

fn gate() {
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).expect("gate line");
}

fn say(what: std::fmt::Arguments) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{PREFIX}{what}").expect("stdout");
    out.flush().expect("stdout");
}

/// A fresh region of `pages` pages without transparent huge pages, so that each 4 KiB
/// page faults on its own (guest kernels default THP to "always").
fn region(pages: usize) -> Region {
    let r = Region::new(pages);
    // SAFETY: madvise on exactly the live mapping of `r` only changes its THP policy.
    let rc = unsafe {
        libc::madvise(
            r.addr() as *mut libc::c_void,
            r.len(),
            libc::MADV_NOHUGEPAGE,
        )
    };
    assert_eq!(rc, 0, "madvise(MADV_NOHUGEPAGE) failed");
    r
}

fn arg(args: &[String], i: usize) -> usize {
    args.get(i)
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("toucher: argument {i} of {args:?} is not a number"))
}

/// Writes one byte to each page of `pages`, pinned to `cpu` first if given; returns the tid.
fn touch_pages(pages: Vec<usize>, cpu: Option<usize>) -> u32 {
    if let Some(c) = cpu {
        LinuxSys.set_affinity(0, &[c]).expect("pin");
    }
    for a in pages {
        // SAFETY: `a` is a page of a live, writable Region owned by the caller.
        unsafe { std::ptr::write_volatile(a as *mut u8, 1) };
    }
    gettid()
}

/// The child's body; `args` follow `--toucher`. Modes:
/// - `first-touch THREADS PAGES`: THREADS threads each touch PAGES fresh pages, at once.
/// - `rewrite PAGES`: touch PAGES pages; report `touched`; on the next gate write them again.
/// - `two-regions PAGES`: pinned to its CPU, touch PAGES pages; report `touched`; on the
///   next gate touch PAGES other fresh pages.
/// - `remote PAGES INIT_CPU USE_CPU MILLIS`: a thread on INIT_CPU touches the pages, then
///   a thread on USE_CPU writes them over and over for MILLIS ms.
/// - `bench PAGES ROUNDS`: time each first touch of ROUNDS x PAGES fresh pages.
pub fn child_main(args: &[String]) {
    let mode = args.first().map(String::as_str).unwrap_or("");
    gate();
    match mode {
        "first-touch" => {
            let (threads, pages) = (arg(args, 1), arg(args, 2));
            let r = region(threads * pages);
            say(format_args!("region {} {}", r.addr(), r.len()));
            let all = r.pages();
            let handles: Vec<_> = all
                .chunks(pages)
                .map(|c| {
                    let c = c.to_vec();
                    std::thread::spawn(move || touch_pages(c, None))
                })
                .collect();
            for h in handles {
                say(format_args!("tid {}", h.join().expect("thread")));
            }
        }
        "rewrite" => {
            let r = region(arg(args, 1));
            say(format_args!("region {} {}", r.addr(), r.len()));
            r.touch();
            say(format_args!("touched"));
            gate();
            r.touch();
        }
        "two-regions" => {
            // One CPU, so one ring: the loss of phase 1 is reported by phase 2's records.
            let cpu = LinuxSys.current_cpu().expect("sched_getcpu");
            LinuxSys.set_affinity(0, &[cpu]).expect("pin");
            let a = region(arg(args, 1));
            say(format_args!("region {} {}", a.addr(), a.len()));
            a.touch();
            say(format_args!("touched"));
            gate();
            region(arg(args, 1)).touch();
        }
        "remote" => remote(args),
        "cow-huge" => cow_huge(),
        "bench" => bench(arg(args, 1), arg(args, 2)),
        _ => panic!("toucher: unknown mode {mode:?}"),
    }
    say(format_args!("tid {}", gettid()));
    say(format_args!("done"));
}

/// Touches 4 MiB, 2 MiB-aligned and advised huge (two transparent huge pages where THP
/// is on, base pages where not), reports how much of it is huge, then at the gate forks
/// a child that holds the memory copy-on-write and writes every page again: each write
/// then faults on a page that is mapped, so its sample carries the page's size.
fn cow_huge() {
    const HUGE: usize = 2 << 20;
    let r = Region::new(3 * HUGE / page_size());
    let start = (r.addr() + HUGE - 1) & !(HUGE - 1);
    let len = 2 * HUGE;
    // SAFETY: madvise on part of the live mapping of `r` only changes its THP policy; a
    // kernel without THP refuses it, and the pages are then base pages.
    unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE) };
    let pages: Vec<usize> = (start..start + len).step_by(page_size()).collect();
    touch_pages(pages.clone(), None);
    say(format_args!("region {start} {len}"));
    say(format_args!("huge-kb {}", anon_huge_kb(start)));
    say(format_args!("touched"));
    gate();
    let mut pipe = [0i32; 2];
    // SAFETY: `pipe` has room for the two descriptors pipe() writes.
    assert_eq!(unsafe { libc::pipe(pipe.as_mut_ptr()) }, 0, "pipe");
    // SAFETY: this process is single-threaded here (every toucher thread was joined), so
    // the child may run any code; it only reads the pipe and exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let mut b = 0u8;
        // SAFETY: the child waits for the parent's end of the pipe to close, then exits
        // without running the parent's destructors.
        unsafe {
            libc::close(pipe[1]);
            libc::read(pipe[0], (&mut b as *mut u8).cast(), 1);
            libc::_exit(0);
        }
    }
    touch_pages(pages, None);
    // SAFETY: closing the write end lets the child's read return; waitpid reaps it.
    unsafe {
        libc::close(pipe[1]);
        libc::waitpid(pid, std::ptr::null_mut(), 0);
    }
}

/// AnonHugePages (kB) of the mapping of this process that holds `addr`, from
/// /proc/self/smaps.
fn anon_huge_kb(addr: usize) -> u64 {
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
    let mut inside = false;
    for line in smaps.lines() {
        if let Some((range, _)) = line.split_once(' ') {
            if let Some((a, b)) = range.split_once('-') {
                if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                {
                    inside = (a..b).contains(&addr);
                    continue;
                }
            }
        }
        if inside {
            if let Some(v) = line.strip_prefix("AnonHugePages:") {
                return v.trim().trim_end_matches("kB").trim().parse().unwrap_or(0);
            }
        }
    }
    0
}

fn remote(args: &[String]) {
    let (pages, init, use_cpu, ms) = (arg(args, 1), arg(args, 2), arg(args, 3), arg(args, 4));
    let r = region(pages);
    say(format_args!("region {} {}", r.addr(), r.len()));
    let pages_of_r = r.pages();
    let t0 = std::thread::spawn(move || touch_pages(pages_of_r, Some(init)))
        .join()
        .expect("first-touch thread");
    say(format_args!("tid {t0}"));
    say(format_args!("touched"));
    let all = r.pages();
    let (tid, passes) = std::thread::spawn(move || {
        LinuxSys.set_affinity(0, &[use_cpu]).expect("pin");
        let end = Instant::now() + Duration::from_millis(ms as u64);
        let mut passes = 0u64;
        while Instant::now() < end {
            for &a in &all {
                // SAFETY: `a` is a page of the live Region `r`, which outlives this thread.
                unsafe { std::ptr::write_volatile(a as *mut u8, passes as u8) };
            }
            passes += 1;
        }
        (gettid(), passes)
    })
    .join()
    .expect("remote thread");
    say(format_args!("tid {tid}"));
    say(format_args!("passes {passes}"));
    // Where the pages ended up: NUMA balancing may have moved them to USE_CPU's node.
    let status = LinuxSys
        .move_pages(0, &r.pages(), None)
        .expect("move_pages query");
    let mut per_node = vec![0usize; 1 + status.iter().copied().max().unwrap_or(0).max(0) as usize];
    for n in status.into_iter().filter(|&n| n >= 0) {
        per_node[n as usize] += 1;
    }
    let counts: Vec<String> = per_node.iter().map(usize::to_string).collect();
    say(format_args!("pages_per_node {}", counts.join(" ")));
}

fn bench(pages: usize, rounds: usize) {
    let mut ns: Vec<u64> = Vec::with_capacity(pages * rounds);
    for _ in 0..rounds {
        let r = region(pages);
        for a in r.pages() {
            let t = Instant::now();
            // SAFETY: `a` is a page of the live Region `r`.
            unsafe { std::ptr::write_volatile(a as *mut u8, 1) };
            ns.push(t.elapsed().as_nanos() as u64);
        }
    }
    ns.sort_unstable();
    let mean = ns.iter().sum::<u64>() as f64 / ns.len() as f64;
    say(format_args!(
        "bench faults {} median_ns {} p90_ns {} mean_ns {mean:.0}",
        ns.len(),
        ns[ns.len() / 2],
        ns[ns.len() * 9 / 10]
    ));
}

/// What a sampled child run produced.
#[derive(Debug, Default)]
pub struct Run {
    /// The child's pid.
    pub pid: u32,
    /// The child's report lines, prefix removed.
    pub lines: Vec<String>,
    /// Every sample drained, in drain order.
    pub samples: Vec<FaultSample>,
    /// Lost and other counts.
    pub drained: Drained,
    /// The CPUs sampled.
    pub cpus: Vec<usize>,
    /// The scope the sampler's events were opened in.
    pub scope: Option<Scope>,
    /// Time spent draining the rings (copy and parse), in nanoseconds.
    pub drain_ns: u128,
}

impl Run {
    /// The numbers on report lines `KEY N...`.
    pub fn values(&self, key: &str) -> Vec<u64> {
        self.lines
            .iter()
            .filter_map(|l| l.strip_prefix(key)?.strip_prefix(' '))
            .flat_map(|v| v.split(' ').filter_map(|n| n.parse().ok()).take(1))
            .collect()
    }

    /// The child's region, `[start, end)`.
    pub fn region(&self) -> (u64, u64) {
        let l = self.lines.iter().find_map(|l| l.strip_prefix("region "));
        let v: Vec<u64> = l
            .expect("region line")
            .split(' ')
            .map(|n| n.parse().unwrap())
            .collect();
        (v[0], v[0] + v[1])
    }

    /// The samples whose address lies in the region.
    pub fn in_region(&self) -> Vec<FaultSample> {
        let (a, b) = self.region();
        self.samples
            .iter()
            .filter(|s| s.addr >= a && s.addr < b)
            .copied()
            .collect()
    }

    /// The number of distinct pages among `samples`.
    pub fn distinct_pages(samples: &[FaultSample]) -> usize {
        let ps = page_size() as u64;
        let mut p: Vec<u64> = samples.iter().map(|s| s.addr / ps).collect();
        p.sort_unstable();
        p.dedup();
        p.len()
    }
}

/// A gated child with the sampler (or not) attached.
pub struct Session {
    child: Child,
    stdin: ChildStdin,
    rx: Receiver<String>,
    sampler: Option<PerfSampler>,
    draining: bool,
    /// What was collected so far.
    pub run: Run,
}

impl Session {
    /// Starts `exe --toucher ARGS...` held at its gate, and attaches the sampler to it
    /// when `cfg` is given. The error is the sampler's own message.
    pub fn start(
        exe: &std::path::Path,
        args: &[&str],
        cfg: Option<&SamplerConfig>,
    ) -> Result<Session, String> {
        let mut child = Command::new(exe)
            .arg("--toucher")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
        let pid = child.id();
        let sampler = cfg
            .map(|c| PerfSampler::open(&FsRoot::default(), pid as i32, c))
            .transpose();
        let sampler = match sampler {
            Ok(s) => s,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(e.to_string());
            }
        };
        let stdin = child.stdin.take().expect("piped stdin");
        let out = child.stdout.take().expect("piped stdout");
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if let Some(l) = l.strip_prefix(PREFIX) {
                    let _ = tx.send(l.to_string());
                }
            }
        });
        let cpus = sampler.as_ref().map(PerfSampler::cpus).unwrap_or_default();
        let run = Run {
            pid,
            cpus,
            scope: sampler.as_ref().map(PerfSampler::scope),
            ..Run::default()
        };
        Ok(Session {
            child,
            stdin,
            rx,
            sampler,
            draining: true,
            run,
        })
    }

    /// Opens the child's next gate.
    pub fn go(&mut self) {
        writeln!(self.stdin, "go").expect("child stdin");
    }

    /// The child's pid.
    pub fn pid(&self) -> u32 {
        self.run.pid
    }

    /// Stops or restarts draining the rings while waiting (stopped, a small ring fills).
    pub fn set_draining(&mut self, on: bool) {
        self.draining = on;
    }

    fn pump(&mut self) -> Result<(), String> {
        match &mut self.sampler {
            Some(s) if self.draining => {
                s.wait(Duration::from_millis(5), None)
                    .map_err(|e| e.to_string())?;
                let t = Instant::now();
                let d = s.drain(&mut self.run.samples).map_err(|e| e.to_string())?;
                self.run.drain_ns += t.elapsed().as_nanos();
                self.run.drained.add(d);
            }
            _ => std::thread::sleep(Duration::from_millis(5)),
        }
        self.run.lines.extend(self.rx.try_iter());
        Ok(())
    }

    /// Drains samples until the child reports `line`, for at most `limit`.
    pub fn until(&mut self, line: &str, limit: Duration) -> Result<(), String> {
        let end = Instant::now() + limit;
        while !self.run.lines.iter().any(|l| l == line) {
            if Instant::now() > end {
                return Err(format!("child did not report {line:?} within {limit:?}"));
            }
            self.pump()?;
        }
        // A pump drains before it reads lines, so the faults taken just before `line`
        // can still sit in the rings; the kernel wrote them before the child printed.
        self.pump()
    }

    /// Drains samples until the child exits (killing it after `limit`), then once more.
    pub fn finish(mut self, limit: Duration) -> Result<Run, String> {
        let end = Instant::now() + limit;
        let status: ExitStatus = loop {
            if let Some(st) = self.child.try_wait().map_err(|e| e.to_string())? {
                break st;
            }
            if Instant::now() > end {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Err(format!("child did not finish within {limit:?}"));
            }
            self.pump()?;
        };
        self.until("done", Duration::from_secs(5))?;
        self.pump()?;
        if !status.success() {
            return Err(format!("child failed: {status}"));
        }
        Ok(self.run)
    }
}
