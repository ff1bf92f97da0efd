//! `tdmap run`'s real-time loop (tdmap-monitor `online`) on a replayed fault source, a
//! fake clock and a fake program: the inject runtime's handler thread is never numbered as
//! a program thread, whenever its announcement arrives (issue 16 item 5; the regression:
//! 1 run in 15 numbered it as thread 1, when it was found by its name after the fact).

use std::cell::Cell;
use std::os::fd::BorrowedFd;
use std::time::Duration;
use tdmap_monitor::live::SysActuator;
use tdmap_monitor::online::{self, Announce, Announcer, Clock, LoopSettings, Program};
use tdmap_monitor::{Config, Engine, MonitorError};
use tdmap_sys::fake::RecordingSys;
use tdmap_sys::perf::{Drained, FaultSample, FaultSource, ReplaySource};

const PID: u32 = 300;
const HANDLER: u32 = 301;
const PERIOD: Duration = Duration::from_millis(100);

struct FakeClock(Cell<Duration>);

impl Clock for FakeClock {
    fn now(&self) -> Duration {
        self.0.get()
    }
}

/// One batch per wait; each wait lasts its whole timeout.
struct Source<'c> {
    inner: ReplaySource,
    clock: &'c FakeClock,
}

impl FaultSource for Source<'_> {
    fn drain(&mut self, out: &mut Vec<FaultSample>) -> Result<Drained, tdmap_sys::SysError> {
        self.inner.drain(out)
    }
    fn wait(&mut self, t: Duration, _: Option<BorrowedFd<'_>>) -> Result<(), tdmap_sys::SysError> {
        self.clock.0.set(self.clock.0.get() + t);
        Ok(())
    }
}

/// Ends after `waits` calls to try_wait; its threads: main, the handler, two workers.
struct Prog {
    waits: Cell<u32>,
}

impl Program for Prog {
    fn pid(&self) -> i32 {
        PID as i32
    }
    fn try_wait(&mut self) -> Result<Option<i32>, MonitorError> {
        let left = self.waits.get();
        self.waits.set(left.saturating_sub(1));
        Ok((left == 0).then_some(0))
    }
    fn exit_fd(&self) -> Option<BorrowedFd<'_>> {
        None
    }
    fn tasks(&mut self) -> Vec<u32> {
        vec![PID, HANDLER, 302, 303]
    }
}

/// Announces the handler after `after` polls (never with None).
struct Late {
    polls: u32,
    after: Option<u32>,
}

impl Announcer for Late {
    fn poll(&mut self) -> Announce {
        self.polls += 1;
        match self.after {
            Some(a) if self.polls > a => Announce::Handler(HANDLER),
            _ => Announce::Pending,
        }
    }
}

fn s(tid: u32, addr: u64, time: u64) -> FaultSample {
    FaultSample {
        pid: PID,
        tid,
        addr,
        cpu: 0,
        time,
        page_size: 0,
    }
}

/// Every thread faults in the first batch, the handler among the first.
fn run(after: Option<u32>) -> (Vec<u32>, u64, u64) {
    let o = outcome(after);
    let tids = o.threads.iter().map(|t| t.0).collect();
    (tids, o.handler.samples, o.samples.taken)
}

/// The run of [`run`], whole.
fn outcome(after: Option<u32>) -> tdmap_monitor::Outcome {
    let topo = tdmap_topo::preset("xeon-x7550-4s").unwrap();
    let clock = FakeClock(Cell::new(Duration::ZERO));
    let first = vec![
        s(PID, 0x1000, 1),
        s(HANDLER, 0x2000, 2),
        s(302, 0x3000, 3),
        s(303, 0x3008, 4),
    ];
    let later: Vec<(Vec<FaultSample>, u64)> = (0..60)
        .map(|k| (vec![s(302, 0x3000, 10 + k), s(HANDLER, 0x2000, 10 + k)], 0))
        .collect();
    let mut src = Source {
        inner: ReplaySource::new(std::iter::once((first, 0)).chain(later)),
        clock: &clock,
    };
    let sys = RecordingSys::new();
    let mut act = SysActuator::new(&sys, PID as i32, &topo);
    let mut prog = Prog {
        waits: Cell::new(60),
    };
    let mut late = Late { polls: 0, after };
    let mut engine = Engine::new(&topo, Config::default(), true).unwrap();
    let settings = LoopSettings {
        period: PERIOD,
        announcer: Some(&mut late),
    };
    online::run(&mut engine, &mut src, &mut act, &mut prog, &clock, settings).unwrap()
}

#[test]
fn the_handler_is_never_a_program_thread_however_late_it_is_announced() {
    for after in [0, 1, 5, 30] {
        let (tids, handler, _) = run(Some(after));
        assert_eq!(tids, vec![PID, 302, 303], "announced after {after} polls");
        assert!(handler >= 1, "its samples are counted apart");
    }
}

#[test]
fn without_an_announcement_the_samples_are_used_after_the_wait() {
    let (tids, handler, taken) = run(None);
    // A program that never loads the runtime (static) has no handler: after
    // ANNOUNCE_WAIT every thread it shows is the program's.
    assert_eq!(tids, vec![PID, HANDLER, 302, 303]);
    assert_eq!((handler, taken), (0, 124));
}

/// `tdmap report`'s timeline: one row per period and one for the cut-short last one,
/// whose counts add up to the run's totals.
#[test]
fn the_timeline_has_every_period_and_adds_up_to_the_totals() {
    let o = outcome(Some(0));
    assert_eq!(o.timeline.len() as u64, o.periods + 1, "{:?}", o.timeline);
    assert!(o.periods >= 2);
    let sum = |f: fn(&tdmap_monitor::Period) -> u64| o.timeline.iter().map(f).sum::<u64>();
    assert_eq!(sum(|p| p.samples), o.samples.taken);
    assert_eq!(sum(|p| p.pins), o.actions.threads_pinned);
    assert_eq!(sum(|p| p.pins_planned), o.actions.pins_planned);
    assert_eq!(sum(|p| p.moves_planned), o.actions.moves_planned);
    assert!(o.actions.pins_planned > 0, "the workers were mapped");
    assert!(o.timeline.windows(2).all(|w| w[0].end_ms < w[1].end_ms));
    assert_eq!(o.timeline[0].end_ms, PERIOD.as_millis() as u64);
}

/// Issue 19: tasks beyond the task limit are named in the outcome, with their process,
/// and their samples are not used; a sample of a process the program does not follow
/// is counted apart.
#[test]
fn tasks_beyond_the_limit_are_named_untracked() {
    let topo = tdmap_topo::preset("xeon-x7550-4s").unwrap();
    let clock = FakeClock(Cell::new(Duration::ZERO));
    let mut foreign = s(900, 0x5000, 5);
    foreign.pid = 900;
    let batch = vec![
        s(PID, 0x1000, 1),
        s(302, 0x3000, 2),
        s(303, 0x3008, 3),
        foreign,
    ];
    let mut src = Source {
        inner: ReplaySource::new([(batch, 0)]),
        clock: &clock,
    };
    let sys = RecordingSys::new();
    let mut act = SysActuator::new(&sys, PID as i32, &topo);
    let mut prog = Prog {
        waits: Cell::new(3),
    };
    let cfg = Config {
        max_threads: 2,
        ..Config::default()
    };
    let mut engine = Engine::new(&topo, cfg, true).unwrap();
    let settings = LoopSettings {
        period: PERIOD,
        announcer: None,
    };
    let o = online::run(&mut engine, &mut src, &mut act, &mut prog, &clock, settings).unwrap();
    // The live tasks are numbered in tid order (PID, 301, 302, 303): two fit.
    let tids: Vec<u32> = o.threads.iter().map(|t| t.0).collect();
    assert_eq!(tids, vec![PID, HANDLER]);
    assert_eq!(o.untracked, vec![(PID, 302), (PID, 303)]);
    assert_eq!(o.samples.other_process, 1);
    assert_eq!(o.processes.len(), 1);
    assert_eq!(o.thread_pids, vec![PID, PID]);
}
