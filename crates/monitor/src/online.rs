//! `tdmap run`'s real-time loop: drain the fault source whenever it wakes (so rings do not
//! overflow between periods), feed the [`Engine`], and every period let it plan and act;
//! stop when the program has ended and its last samples are in. Generic over the fault
//! source (perf rings, or a replay in tests), the actuator, the program and the clock.

use crate::actuator::Actuator;
use crate::engine::{Engine, Times};
use crate::error::MonitorError;
use crate::monitor::Fault;
use crate::outcome::{HandlerReport, Outcome, Period, SampleCounts};
use std::collections::HashSet;
use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};
use tdmap_sharing::{data_metrics, thread_metrics, Metric};
use tdmap_sys::perf::{FaultSample, FaultSource};

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
        (n.taken, n.lost, n.other_process) = (
            n.taken + d.samples,
            n.lost + d.lost,
            n.other_process + d.foreign,
        );
        // Rings are per CPU: merge them in fault order, so thread indexes follow the
        // order in which threads first faulted.
        buf.sort_by_key(|x| x.time);
        let before = buf.len();
        buf.retain(|x| x.pid == pid);
        n.other_process += (before - buf.len()) as u64;
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
            faults.extend(held.drain(..).map(fault));
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
                let mut tids = prog.tasks();
                tids.retain(|&t| Some(t) != handler.tid());
                engine.register_threads(&tids);
            }
            engine.times_mut().sampling += t0.elapsed();
            engine.ingest(&faults, act)?;
            count_threads(engine, &faults, &mut per_thread);
        } else {
            engine.times_mut().sampling += t0.elapsed();
        }
        if let Some(code) = ended {
            close(engine, n.taken, clock.now());
            break code;
        }
        engine.pin_fixed(act);
        if clock.now() >= next {
            engine.period(act)?;
            close(engine, n.taken, clock.now());
            let t = Instant::now();
            prog.after_period();
            engine.times_mut().sampling += t.elapsed();
            periods += 1;
            next += s.period;
        }
    };
    n.ignored_threads = engine.monitor().ignored();
    let times: Times = *engine.times_mut();
    let mon = engine.monitor();
    let matrix = mon.total_matrix(Metric::Accesses);
    Ok(Outcome {
        exit_code,
        wall: clock.now(),
        periods,
        samples: n,
        threads: mon
            .threads()
            .tids()
            .iter()
            .copied()
            .zip(per_thread)
            .collect(),
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

fn fault(x: FaultSample) -> Fault {
    Fault {
        tid: x.tid,
        addr: x.addr,
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
