//! Replaying one stream under several policies: the stream is decoded once, chunk by
//! chunk, and every chunk is handed to each policy's [`Simulator`]. Simulators run on
//! worker threads of their own (one per available core at most), so the policies of a
//! `tdmap sim` run share the decoding and advance in parallel; memory stays bounded, as
//! only a few chunks are alive at a time. Each simulator sees the same chunks in the same
//! order whichever thread runs it, so the reports do not depend on the thread count.
//! Static policies that place threads alike share one simulator (see `shared`).

use crate::access::SimAccess;
use crate::config::SimConfig;
use crate::error::SimError;
use crate::lockstep::{alone_on_cores, Lockstep, MAX_LANES};
use crate::machine::Machine;
use crate::policy::{Policy, PolicyCtx};
use crate::sim::Simulator;
use crate::stats::SimReport;
use std::collections::VecDeque;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use tdmap_topo::Topology;

/// Accesses per chunk when a whole stream is replayed: bounded memory, however long.
pub const CHUNK: usize = 1 << 16;

/// Chunks queued per worker beyond the one it replays: enough to hide the decoder's
/// jitter, few enough to bound memory (a chunk is 1 MiB).
const QUEUED: usize = 2;

/// Runs one policy over a whole stream, chunk by chunk.
pub fn simulate<I>(
    topo: &Topology,
    cfg: SimConfig,
    policy: Box<dyn Policy>,
    threads: usize,
    stream: I,
) -> Result<SimReport, SimError>
where
    I: IntoIterator<Item = SimAccess>,
{
    let ok = stream.into_iter().map(Ok::<_, SimError>);
    let mut reports = simulate_many(topo, &cfg, vec![policy], threads, ok)?;
    Ok(reports.remove(0))
}

/// Runs several policies over one pass of a fallible stream (a trace file being read):
/// each chunk is read once and replayed under every policy, on up to as many threads as
/// there are cores. Reports come in the order of `policies`. The first error, of the
/// stream or of a simulator, stops the run.
pub fn simulate_many<I, E>(
    topo: &Topology,
    cfg: &SimConfig,
    policies: Vec<Box<dyn Policy>>,
    threads: usize,
    stream: I,
) -> Result<Vec<SimReport>, E>
where
    I: IntoIterator<Item = Result<SimAccess, E>>,
    E: From<SimError>,
{
    let mut stream = stream.into_iter();
    let next = move |buf: &mut Vec<SimAccess>| fill(&mut stream, buf);
    simulate_chunks(topo, cfg, policies, threads, next)
}

/// [`simulate_many`] on a stream read chunk by chunk: `next` appends up to [`CHUNK`]
/// accesses to the empty buffer it is given, none at the end (as
/// [`crate::TraceInput::fill`] does, without a call per access).
pub fn simulate_chunks<E>(
    topo: &Topology,
    cfg: &SimConfig,
    policies: Vec<Box<dyn Policy>>,
    threads: usize,
    next: impl FnMut(&mut Vec<SimAccess>) -> Result<(), E>,
) -> Result<Vec<SimReport>, E>
where
    E: From<SimError>,
{
    let n = policies.len();
    let sims = share(topo, cfg, policies, threads)
        .into_iter()
        .map(|(at, lanes)| Ok((at, Replay::new(topo, cfg, lanes, threads)?)))
        .collect::<Result<Vec<_>, SimError>>()?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = cores.min(sims.len());
    if workers <= 1 {
        return inline(sims, next, n);
    }
    // Simulator k goes to worker k % workers; reports are put back in the policies' order.
    let mut groups: Vec<Vec<Sim>> = (0..workers).map(|_| Vec::new()).collect();
    for (k, sim) in sims.into_iter().enumerate() {
        groups[k % workers].push(sim);
    }
    std::thread::scope(|scope| {
        let mut senders = Vec::with_capacity(workers);
        let mut handles = Vec::with_capacity(workers);
        for group in groups {
            let (tx, rx) = sync_channel::<Arc<Vec<SimAccess>>>(QUEUED);
            senders.push(tx);
            handles.push(scope.spawn(move || worker(group, rx)));
        }
        let fed = feed(next, &senders);
        drop(senders);
        let mut reports: Vec<Option<SimReport>> = (0..n).map(|_| None).collect();
        let mut failed = None;
        for h in handles {
            match h.join().expect("a simulator thread panicked") {
                Ok(done) => put(&mut reports, done),
                Err(e) => failed = failed.or(Some(e)),
            }
        }
        fed?;
        if let Some(e) = failed {
            return Err(E::from(e));
        }
        Ok(every(reports))
    })
}

/// A replay and the indexes, in the list of policies, of the policies it replays.
type Sim<'t> = (Vec<usize>, Replay<'t>);

/// The policies of one thread mapping replayed by a simulator of their own (maybe
/// shared), or several mappings' in a lockstep group.
// A run holds a dozen replays at most: their size does not matter.
#[allow(clippy::large_enum_variant)]
enum Replay<'t> {
    One(Simulator<'t>),
    Group(Lockstep<'t>),
}

impl<'t> Replay<'t> {
    /// A simulator for one group of policies, a lockstep group for several.
    fn new(
        topo: &'t Topology,
        cfg: &SimConfig,
        mut lanes: Vec<Vec<Box<dyn Policy>>>,
        threads: usize,
    ) -> Result<Replay<'t>, SimError> {
        if lanes.len() == 1 {
            let ps = lanes.remove(0);
            return Ok(Replay::One(Simulator::shared(
                topo,
                cfg.clone(),
                ps,
                threads,
            )?));
        }
        Ok(Replay::Group(Lockstep::new(topo, cfg, lanes, threads)?))
    }

    fn run_chunk(&mut self, chunk: &[SimAccess]) -> Result<(), SimError> {
        match self {
            Replay::One(s) => s.run_chunk(chunk),
            Replay::Group(g) => g.run_chunk(chunk),
        }
    }

    /// The replays that split from this one since the last call, each with its
    /// policies' indexes, taken out of `at`: a shared replay's followers, or a lockstep
    /// group's lanes that left (each lane's lead, then its followers).
    fn take_forks(&mut self, at: &mut Vec<usize>) -> Vec<Sim<'t>> {
        let one = |k: usize| vec![k];
        match self {
            Replay::One(s) => {
                let forks = s.take_forks();
                if forks.is_empty() {
                    return Vec::new();
                }
                let rest = at.split_off(1).into_iter().map(one);
                rest.zip(forks.into_iter().map(Replay::One)).collect()
            }
            Replay::Group(g) => {
                let mut out = Vec::new();
                for (start, sim, forks) in g.take_left() {
                    let mut lane: Vec<usize> = at.drain(start..start + 1 + forks.len()).collect();
                    let rest = lane.split_off(1).into_iter().map(one);
                    out.push((lane, Replay::One(sim)));
                    out.extend(rest.zip(forks.into_iter().map(Replay::One)));
                }
                out
            }
        }
    }

    fn finish_all(self) -> Vec<SimReport> {
        match self {
            Replay::One(s) => s.finish_all(),
            Replay::Group(g) => g.finish_all(),
        }
    }
}

/// The policies grouped into replays: each static or quiet policy with those of the same
/// thread mapping ([`Policy::static_mapping`], [`Policy::quiet_mapping`]), every other
/// policy alone; then the groups whose threads each have a core of their own
/// (`lockstep::alone_on_cores`) as lanes of lockstep groups. Each replay comes with its
/// policies' indexes in the list (lane after lane), first where the first of them was.
#[allow(clippy::type_complexity)]
pub(crate) fn share(
    topo: &Topology,
    cfg: &SimConfig,
    policies: Vec<Box<dyn Policy>>,
    threads: usize,
) -> Vec<(Vec<usize>, Vec<Vec<Box<dyn Policy>>>)> {
    // A machine the simulator cannot model: every policy alone, for Simulator::new to
    // report why, as it would without sharing.
    let Ok(machine) = Machine::new(topo, cfg) else {
        let alone = policies.into_iter().enumerate();
        return alone.map(|(k, p)| (vec![k], vec![vec![p]])).collect();
    };
    let ctx = PolicyCtx::before_run(topo, &machine, threads);
    let mut groups: Vec<Group> = Vec::new();
    for (k, p) in policies.into_iter().enumerate() {
        let key = p.static_mapping(&ctx).or_else(|| p.quiet_mapping(&ctx));
        let same = key
            .as_ref()
            .and_then(|key| groups.iter().position(|g| g.key.as_ref() == Some(key)));
        match same {
            Some(g) => {
                groups[g].at.push(k);
                groups[g].policies.push(p);
            }
            None => groups.push(Group {
                lockstep: key
                    .as_ref()
                    .is_some_and(|m| m.len() == threads && alone_on_cores(&machine, m)),
                key,
                at: vec![k],
                policies: vec![p],
            }),
        }
    }
    let mut out: Vec<(Vec<usize>, Vec<Vec<Box<dyn Policy>>>)> = Vec::new();
    let steps = groups.iter().filter(|g| g.lockstep).count();
    // Where the lockstep group being filled is in `out`.
    let mut filling: Option<usize> = None;
    for g in groups {
        if !g.lockstep || steps < 2 {
            out.push((g.at, vec![g.policies]));
            continue;
        }
        match filling {
            Some(i) if out[i].1.len() < MAX_LANES => {
                out[i].0.extend(g.at);
                out[i].1.push(g.policies);
            }
            _ => {
                filling = Some(out.len());
                out.push((g.at, vec![g.policies]));
            }
        }
    }
    out
}

/// Policies of one thread mapping, while `share` groups them.
struct Group {
    key: Option<Vec<usize>>,
    /// Whether each thread has a core of its own (every policy is static or quiet).
    lockstep: bool,
    at: Vec<usize>,
    policies: Vec<Box<dyn Policy>>,
}

/// Replays a chunk under each simulator; the forks of a shared replay that split join
/// the list, each with its policy's index.
fn run<'t>(sims: &mut Vec<Sim<'t>>, chunk: &[SimAccess]) -> Result<(), SimError> {
    let mut born = Vec::new();
    for (at, sim) in sims.iter_mut() {
        sim.run_chunk(chunk)?;
        born.extend(sim.take_forks(at));
    }
    sims.extend(born);
    Ok(())
}

/// Puts a worker's reports where their policies are in the list.
fn put(reports: &mut [Option<SimReport>], done: Vec<(Vec<usize>, Vec<SimReport>)>) {
    for (at, rs) in done {
        for (k, r) in at.into_iter().zip(rs) {
            reports[k] = Some(r);
        }
    }
}

/// The reports in the policies' order, once every simulator has put its own.
fn every(reports: Vec<Option<SimReport>>) -> Vec<SimReport> {
    reports
        .into_iter()
        .map(|r| r.expect("every simulator reports"))
        .collect()
}

/// One thread replays everything: no worker to feed.
fn inline<E>(
    mut sims: Vec<Sim>,
    mut next: impl FnMut(&mut Vec<SimAccess>) -> Result<(), E>,
    n: usize,
) -> Result<Vec<SimReport>, E>
where
    E: From<SimError>,
{
    let mut buf = Vec::with_capacity(CHUNK);
    loop {
        buf.clear();
        next(&mut buf)?;
        if buf.is_empty() {
            break;
        }
        run(&mut sims, &buf)?;
    }
    let mut reports: Vec<Option<SimReport>> = (0..n).map(|_| None).collect();
    let done = sims.into_iter().map(|(at, s)| (at, s.finish_all()));
    put(&mut reports, done.collect());
    Ok(every(reports))
}

/// Decodes the stream chunk by chunk and sends each chunk to every worker. A worker that
/// hung up has failed: feeding stops, and its error is reported when it is joined. A
/// chunk every worker is done with is filled again: a fresh megabyte per chunk cost more
/// in page faults than the replay of a policy.
fn feed<E>(
    mut next: impl FnMut(&mut Vec<SimAccess>) -> Result<(), E>,
    senders: &[SyncSender<Arc<Vec<SimAccess>>>],
) -> Result<(), E> {
    // The chunks sent, oldest first: bounded, as the channels are.
    let mut sent: VecDeque<Arc<Vec<SimAccess>>> = VecDeque::new();
    loop {
        let mut buf = match sent.pop_front().map(Arc::try_unwrap) {
            Some(Ok(done)) => done,
            Some(Err(busy)) => {
                sent.push_front(busy);
                Vec::with_capacity(CHUNK)
            }
            None => Vec::with_capacity(CHUNK),
        };
        buf.clear();
        next(&mut buf)?;
        if buf.is_empty() {
            return Ok(());
        }
        let chunk = Arc::new(buf);
        for tx in senders {
            if tx.send(Arc::clone(&chunk)).is_err() {
                return Ok(());
            }
        }
        sent.push_back(chunk);
    }
}

/// Appends up to [`CHUNK`] accesses of `stream` to `buf`.
fn fill<I, E>(stream: &mut I, buf: &mut Vec<SimAccess>) -> Result<(), E>
where
    I: Iterator<Item = Result<SimAccess, E>>,
{
    for a in stream.by_ref().take(CHUNK) {
        buf.push(a?);
    }
    Ok(())
}

/// A worker: replays every chunk it receives under each of its simulators.
#[allow(clippy::type_complexity)]
fn worker(
    mut group: Vec<Sim>,
    rx: Receiver<Arc<Vec<SimAccess>>>,
) -> Result<Vec<(Vec<usize>, Vec<SimReport>)>, SimError> {
    for chunk in rx {
        run(&mut group, &chunk)?;
    }
    Ok(group
        .into_iter()
        .map(|(at, s)| (at, s.finish_all()))
        .collect())
}
