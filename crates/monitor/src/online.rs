//! `tdmap run`'s real-time loop: drain the fault source whenever it wakes (so rings do not
//! overflow between periods), feed the [`Engine`], and every period let it plan and act;
//! stop when the program has ended and its last samples are in. Generic over the fault
//! source (perf rings, or a replay in tests), the actuator, the program and the clock.
//!
//! Processes: the program may be several (forked children, a shell's or `mpirun`'s).
//! Samples of every process it follows ([`Program::follows`]) are used; tasks are
//! (process, thread), numbered by tid as one set (tids are unique across processes), and
//! pages get the actuator's keys ([`Actuator::key`]), which are shared between processes
//! that map the same object. A process that is not the user's is left alone
//! ([`crate::ProcessTable`]).

use crate::actuator::Actuator;
use crate::engine::{Engine, Times};
use crate::error::MonitorError;
use crate::monitor::Fault;
use crate::outcome::{HandlerReport, Outcome, Period, SampleCounts};
use crate::procs::ProcessTable;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};
use tdmap_sharing::{data_metrics, thread_metrics, Metric};
use tdmap_sys::perf::{FaultSample, FaultSource};
use tdmap_sys::procs::ProcessInfo;

/// How long one wait for samples lasts at most when the program has no pidfd, so that its
/// end is noticed within this delay.
pub const TICK: Duration = Duration::from_millis(20);

/// How long samples are held for the inject runtime to announce its handler thread before
/// tdmap goes on without (a static program never loads the runtime).
pub const ANNOUNCE_WAIT: Duration = Duration::from_secs(1);

/// The program under watch.
pub trait Program {
    /// Its process id.
    fn pid(&self) -> i32;
    /// Its exit code once it has ended (128 + signal number if a signal ended it).
    fn try_wait(&mut self) -> Result<Option<i32>, MonitorError>;
    /// A descriptor that becomes readable when it ends (a pidfd), if there is one.
    fn exit_fd(&self) -> Option<BorrowedFd<'_>>;
    /// Its live threads' tids, ascending (creation order).
    fn tasks(&mut self) -> Vec<u32>;
    /// Whether samples of process `pid` are the program's: by default, of its first
    /// process only.
    fn follows(&mut self, pid: u32) -> bool {
        pid == self.pid() as u32
    }
    /// Learns a fork or an mmap the fault source reported (a child forked by a process
    /// followed is followed, even once it has gone).
    fn learn(&mut self, t: &tdmap_sys::perf::Task) {
        let _ = t;
    }
    /// What process `pid` runs, and whether it is the user's (see [`ProcessTable`]); a
    /// process that has gone counts as the user's (nothing can be done to it any more,
    /// and its samples were taken while it was followed).
    fn describe(&mut self, pid: u32) -> (ProcessInfo, bool) {
        let info = ProcessInfo {
            pid,
            ..ProcessInfo::default()
        };
        (info, true)
    }
    /// The live tasks of every process followed, as (pid, tid), ascending by tid.
    fn all_tasks(&mut self) -> Vec<(u32, u32)> {
        let pid = self.pid() as u32;
        self.tasks().into_iter().map(|t| (pid, t)).collect()
    }
    /// Called after each period: extra faults made from outside (soft-dirty, kMAF
    /// §3.1.2) go here.
    fn after_period(&mut self) {}
}

/// Time since the loop started.
pub trait Clock {
    /// Time elapsed since the start.
    fn now(&self) -> Duration;
}

/// The system's monotonic clock.
#[derive(Debug, Clone, Copy)]
pub struct SystemClock(Instant);

impl SystemClock {
    /// A clock that starts now.
    pub fn start() -> SystemClock {
        SystemClock(Instant::now())
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.0.elapsed()
    }
}

/// What the inject runtime said about its handler thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Announce {
    /// Nothing yet.
    Pending,
    /// The handler thread's tid: never one of the program's threads.
    Handler(u32),
    /// The runtime runs no handler (it said so, or closed the channel without a word).
    NoHandler,
}

/// The channel through which the inject runtime announces its handler thread before the
/// program's main starts.
pub trait Announcer {
    /// Reads what has arrived, without blocking.
    fn poll(&mut self) -> Announce;
}

/// The loop's settings.
pub struct LoopSettings<'a> {
    /// The decision period (kMAF: 100 ms).
    pub period: Duration,
    /// The inject runtime's announcements, when it is preloaded: until the handler is
    /// known, samples are held, so that it is never numbered as a program thread.
    pub announcer: Option<&'a mut dyn Announcer>,
}

/// The handler thread as known so far.
struct Handler<'a> {
    chan: Option<&'a mut dyn Announcer>,
    state: Announce,
    samples: u64,
}

impl Handler<'_> {
    /// Whether thread numbering may start: the handler is known, or there is none.
    fn settled(&mut self, now: Duration) -> bool {
        if self.state == Announce::Pending {
            self.state = match self.chan.as_deref_mut() {
                None => Announce::NoHandler,
                Some(c) => c.poll(),
            };
            if self.state == Announce::Pending && now >= ANNOUNCE_WAIT {
                self.state = Announce::NoHandler;
            }
        }
        self.state != Announce::Pending
    }

    fn tid(&self) -> Option<u32> {
        match self.state {
            Announce::Handler(t) => Some(t),
            _ => None,
        }
    }
}

/// Watches `prog` until it ends, feeding `engine` from `src` and acting through `act`.
pub fn run(
    engine: &mut Engine,
    src: &mut impl FaultSource,
    act: &mut impl Actuator,
    prog: &mut impl Program,
    clock: &impl Clock,
    s: LoopSettings<'_>,
) -> Result<Outcome, MonitorError> {
    let pid = prog.pid() as u32;
    let mut handler = Handler {
        state: if s.announcer.is_some() {
            Announce::Pending
        } else {
            Announce::NoHandler
        },
        chan: s.announcer,
        samples: 0,
    };
    let mut procs = ProcessTable::default();
    let (info, _) = prog.describe(pid);
    // The started process is always process 0: actions on it wait while it is not the
    // user's (Actuator::permitted), its samples are used.
    procs.add(info, true);
    let mut thread_pid: HashMap<u32, u32> = HashMap::new();
    let mut untracked = BTreeSet::new();
    let mut tasks = Vec::new();
    let mut pages = HashSet::new();
    let mut n = SampleCounts::default();
    let (mut buf, mut held, mut faults) = (Vec::new(), Vec::<FaultSample>::new(), Vec::new());
    let mut per_thread: Vec<u64> = Vec::new();
    let mut next = s.period;
    let mut periods = 0;
    let mut timeline = Vec::new();
    let mut last = (0, engine.counts().clone());
    let mut close = |engine: &Engine, taken: u64, at: Duration| {
        let now = (taken, engine.counts().clone());
        let ms = at.as_millis() as u64;
        timeline.push(Period::between(ms, (last.0, &last.1), (now.0, &now.1)));
        last = now;
    };
    let exit_code = loop {
        let ended = prog.try_wait()?;
        let until_next = next.saturating_sub(clock.now());
        let timeout = if prog.exit_fd().is_some() {
            until_next
        } else {
            TICK.min(until_next)
        };
        src.wait(timeout, prog.exit_fd())?;
        let t0 = Instant::now();
        buf.clear();
        let d = src.drain(&mut buf)?;
        src.take_tasks(&mut tasks);
        for t in tasks.drain(..) {
            prog.learn(&t);
            act.learn(&t);
            if let tdmap_sys::perf::Task::Exit { tid, .. } = t {
                engine.retire(tid);
            }
            if let tdmap_sys::perf::Task::Fork { pid, ppid, .. } = t {
                procs.forked(pid, ppid);
            }
            if let tdmap_sys::perf::Task::Exec { pid, name, .. } = t {
                let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
                procs.executed(prog.describe(pid).0, &String::from_utf8_lossy(&name[..end]));
            }
        }
        (n.taken, n.lost, n.other_process) = (
            n.taken + d.samples,
            n.lost + d.lost,
            n.other_process + d.foreign,
        );
        // Rings are per CPU: merge them in fault order, so thread indexes follow the
        // order in which threads first faulted.
        buf.sort_by_key(|x| x.time);
        let before = buf.len();
        buf.retain(|x| prog.follows(x.pid));
        n.other_process += (before - buf.len()) as u64;
        for x in &buf {
            if !procs.knows(x.pid) {
                let (info, owned) = prog.describe(x.pid);
                procs.add(info, owned);
            }
        }
        buf.retain(|x| procs.admit(x.pid));
        held.append(&mut buf);
        // Held until the inject handler is known (or there is none): the announcement is
        // written before the program's main starts, so every sample of a program thread
        // drained so far was taken after it, and is read after it here.
        let settled = handler.settled(clock.now()) || ended.is_some();
        if settled {
            if let Some(h) = handler.tid() {
                let before = held.len();
                held.retain(|x| x.tid != h);
                handler.samples += (before - held.len()) as u64;
            }
            faults.clear();
            for x in held.drain(..) {
                thread_pid.entry(x.tid).or_insert(x.pid);
                match act.key(x.pid, x.addr) {
                    Some(key) => faults.push(fault(x, key)),
                    None => n.unkeyed += 1,
                }
            }
            n.repeat += faults
                .iter()
                .filter(|f| !pages.insert(f.addr >> 12))
                .count() as u64;
            n.huge_page += faults
                .iter()
                .filter(|f| engine.monitor().on_huge_page(f))
                .count() as u64;
            if engine.monitor().has_new_threads(&faults) {
                // Threads created before this one but not seen faulting yet come first.
                let mut tasks = prog.all_tasks();
                tasks.retain(|&(p, t)| Some(t) != handler.tid() && procs.admit_quiet(p));
                for &(p, t) in &tasks {
                    thread_pid.entry(t).or_insert(p);
                }
                let tids: Vec<u32> = tasks.iter().map(|x| x.1).collect();
                engine.register_threads(&tids);
            }
            engine.times_mut().sampling += t0.elapsed();
            engine.ingest(&faults, act)?;
            count_threads(engine, &faults, &mut per_thread);
            let index = engine.monitor().threads();
            for f in faults.iter().filter(|f| !index.contains(f.tid)) {
                untracked.insert((thread_pid.get(&f.tid).copied().unwrap_or(0), f.tid));
            }
        } else {
            engine.times_mut().sampling += t0.elapsed();
        }
        if let Some(code) = ended {
            close(engine, n.taken, clock.now());
            break code;
        }
        if engine.wants_task_names() {
            engine.name_tasks(&task_names(
                engine.monitor().threads().tids(),
                &thread_pid,
                &procs,
            ));
        }
        engine.pin_fixed(act);
        if clock.now() >= next {
            engine.period(act)?;
            close(engine, n.taken, clock.now());
            let t = Instant::now();
            prog.after_period();
            // A process may have executed another program: a set-user-ID one is left
            // alone from now on, and the report names what each one runs.
            for p in procs.followed() {
                let (info, owned) = prog.describe(p);
                if p != pid && !owned {
                    procs.leave_alone(info);
                } else {
                    procs.refresh(info);
                }
            }
            engine.times_mut().sampling += t.elapsed();
            periods += 1;
            next += s.period;
        }
    };
    n.ignored_threads = engine.monitor().ignored();
    let times: Times = *engine.times_mut();
    let mon = engine.monitor();
    let matrix = mon.total_matrix(Metric::Accesses);
    let tids = mon.threads().tids();
    Ok(Outcome {
        exit_code,
        wall: clock.now(),
        periods,
        samples: n,
        threads: tids.iter().copied().zip(per_thread).collect(),
        thread_pids: tids
            .iter()
            .map(|t| thread_pid.get(t).copied().unwrap_or(pid))
            .collect(),
        processes: procs.list().to_vec(),
        untracked: untracked.into_iter().collect(),
        keying: act.keying().into(),
        amount: mon.total_matrix(Metric::Amount),
        metrics: thread_metrics(&matrix),
        matrix,
        data: data_metrics(mon.table(), 4096).ok(),
        actions: engine.counts().clone(),
        handler: HandlerReport {
            tid: handler.tid(),
            samples: handler.samples,
        },
        times,
        timeline,
    })
}

/// Each thread's task name for `--mapping`: (its process's MPI world rank, else the
/// process's index; its number among its process's threads, by tid: creation order).
fn task_names(tids: &[u32], pid_of: &HashMap<u32, u32>, procs: &ProcessTable) -> Vec<(u32, u32)> {
    tids.iter()
        .map(|t| {
            let pid = pid_of.get(t).copied().unwrap_or(0);
            let p = procs.list().iter().find(|p| p.pid == pid);
            let process = p.and_then(|p| p.rank.or(p.index)).unwrap_or(u32::MAX);
            let thread = tids
                .iter()
                .filter(|&&o| o < *t && pid_of.get(&o) == Some(&pid))
                .count() as u32;
            (process, thread)
        })
        .collect()
}

/// The monitor's fault for sample `x`, whose page has key `key`.
fn fault(x: FaultSample, key: u64) -> Fault {
    Fault {
        tid: x.tid,
        addr: key,
        cpu: x.cpu,
        page_size: x.page_size,
        page_node: None,
    }
}

fn count_threads(engine: &Engine, faults: &[Fault], per: &mut Vec<u64>) {
    let tids = engine.monitor().threads().tids();
    per.resize(tids.len(), 0);
    for f in faults {
        if let Some(k) = tids.iter().position(|&t| t == f.tid) {
            per[k] += 1;
        }
    }
}
