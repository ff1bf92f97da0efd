//! `tdmap trace --model-only`: the sharing model fed while the program runs, for programs
//! too large to trace (issue 5: "feeds the sharing model and writes the matrix and the
//! page vectors").
//!
//! The model does not run inside the program: the runtime only counts each thread's
//! accesses per line (`tdmap_rt`'s aggregate.rs; lock-free, async-signal-safe, one
//! `write` per chunk, as when tracing) and appends raw chunks of counted records to its
//! scratch file; this process follows that file as it grows, feeds each chunk's accesses
//! to the model exactly as `tdmap analyze` feeds a trace's (a counted record as many
//! accesses, which gives the same model: aggregate.rs says why), and frees the disk
//! blocks it has read. First touches are not fed: `tdmap analyze` skips an access trace's faults
//! (`SharingModel::from_trace`: each repeats an access already there, and fed as one it
//! makes the page's first line shared with its first toucher); here they only tell each
//! page's first toucher and each thread's node. Memory is the model's (per touched page)
//! plus one chunk; no access is kept.

use super::follow::Follow;
use super::raw::{wire, RawEvent, RawReader};
use super::{check_hello, status_of, Args, Control, Decoder, Scratch};
use anyhow::{Context, Result};
use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::time::Instant;
use tdmap_sharing::Sharers;
use tdmap_sharing::{
    AnalyzeReport, Metric, ModelFile, ModelPage, ModelThread, SharingModel, TableConfig,
};
use tdmap_trace::{Fault, Header, TraceStatus};
use wire::Counted;

/// Runs the program and the model beside it; writes `output` and returns the exit code.
pub(super) fn run(args: &Args, output: &Path, scratch: &Scratch, has_runtime: bool) -> Result<i32> {
    let started = Instant::now();
    let (mut child, _fwd) = super::start(args, scratch)?;
    let topo = this_machine()?;
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
    let mut feed = Feed::new(&topo, header.line_size as u64, args.sharers)?;
    let mut follow = Follow::new(&scratch.data, &mut child);
    let torn = feed
        .consume(&mut follow)
        .with_context(|| format!("reading {}", scratch.data.display()))?;
    let (peak_buffer, seen) = (follow.peak, follow.status);
    drop(follow);
    let status = match seen {
        Some(s) => s,
        None => child.wait().context("waiting for the program")?,
    };
    let ctl = Control::read(&scratch.ctl);
    check_hello(&ctl, args, scratch, has_runtime)?;
    let trace_status = status_of(&ctl, &status, torn);
    let sum = super::Summary {
        exit_code: status.code(),
        ..super::Summary::default()
    };
    super::explain(&sum, &ctl, &status, true);
    let events = feed.model.events();
    if events == 0 {
        anyhow::bail!("the program recorded no accesses, so no model was written");
    }
    let header = Header {
        status: trace_status,
        threads: feed.threads.len() as u32,
        ..header
    };
    let records = feed.records;
    let file = feed.finish(&topo, &header, &status, started.elapsed().as_secs_f64())?;
    write_json(output, &file)?;
    let summary = serde_json::json!({
        "output": output,
        "status": file.status,
        "exit_code": file.exit_code,
        "signal": file.signal,
        "threads": file.threads.len(),
        "events": events,
        "records": records,
        "pages": file.pages.len(),
        "model_bytes": file.model_bytes,
        "scratch": scratch.data,
        "peak_buffer_bytes": peak_buffer,
        "run_seconds": file.run_seconds,
    });
    if !super::print_summary(&summary, args)? {
        eprintln!(
            "tdmap: {events} events, {} threads, {} pages, model {} KiB, {} -> {}",
            file.threads.len(),
            file.pages.len(),
            file.model_bytes / 1024,
            file.status,
            output.display()
        );
    }
    Ok(super::exit_code(&ctl, &status))
}

fn this_machine() -> Result<tdmap_topo::Topology> {
    tdmap_topo::MachineSpec::parse("")
        .load(None)
        .map_err(|e| anyhow::anyhow!("cannot read this machine's topology: {e}"))
}

fn write_json(output: &Path, file: &ModelFile) -> Result<()> {
    crate::paths::replace_with(output, |w| {
        serde_json::to_writer(&mut *w, file)?;
        writeln!(w)
    })
    .with_context(|| format!("writing {}", output.display()))
}

/// The model and what it needs besides the chunks.
struct Feed {
    model: SharingModel,
    dec: Decoder,
    threads: Vec<ModelThread>,
    /// Node of each thread: where it ran at its first first touch (0 until then).
    nodes: Vec<u32>,
    known_node: Vec<bool>,
    first: HashMap<u64, (u32, u32)>,
    filtered: u64,
    /// Access records read: fewer than the accesses when the runtime aggregated them.
    records: u64,
}

impl Feed {
    /// A model shaped as `tdmap analyze` shapes one for an access trace: per cache line,
    /// every sharer kept unless `sharers` says otherwise; sized for one thread, grown as
    /// threads register.
    fn new(topo: &tdmap_topo::Topology, line: u64, sharers: Option<Sharers>) -> Result<Feed> {
        let page = 4096;
        let mut cfg = TableConfig {
            sub_block: line.clamp(1, page),
            ..TableConfig::all_sharers(topo.num_nodes().max(1), 1)
        };
        if let Some(s) = sharers {
            cfg = cfg.keeping(s);
        }
        cfg.page_size = page;
        Ok(Feed {
            model: SharingModel::new(cfg, 1, &[])?,
            dec: Decoder::new(tdmap_sys::page_size() as u64),
            threads: Vec::new(),
            nodes: vec![0],
            known_node: vec![false],
            first: HashMap::new(),
            filtered: 0,
            records: 0,
        })
    }

    /// Feeds every chunk until the program has exited and the file is read; returns
    /// whether it ended inside a chunk.
    fn consume(&mut self, src: &mut Follow) -> Result<bool> {
        let mut rd = RawReader::new(BufReader::with_capacity(1 << 20, src));
        let (mut faults, mut repeats) = (Vec::new(), Vec::new());
        let (mut addrs, mut counts) = (Vec::new(), Vec::new());
        while let Some(ev) = rd.next_event()? {
            match ev {
                RawEvent::Thread { id, os_tid, .. } => {
                    self.threads.push(ModelThread { id, os_tid });
                    self.grow(id)?;
                }
                RawEvent::End { filtered, .. } => self.filtered += filtered,
                RawEvent::Counted { thread, words, .. } => {
                    self.counted(thread, &words, &mut addrs, &mut counts, &mut faults)?
                }
                RawEvent::Accesses(mut c) => {
                    let t = c.thread;
                    self.grow(t)?;
                    // The model takes a word per access (the reader checked the words).
                    c.expand()?;
                    // A collapsed run of reads feeds the model once, as `tdmap analyze`
                    // reads it from a trace (docs/formats.md "Collapsed reads"); a record
                    // the runtime aggregated, as many times as its count.
                    let split = self.dec.side(&c, &mut faults, &mut repeats).accesses;
                    Decoder::counted(&c, &mut addrs, &mut counts);
                    self.batch(t, &addrs, &counts, split, &faults)?;
                }
            }
        }
        Ok(rd.torn)
    }

    /// Feeds a counted chunk of thread `t` (`tdmap_wire::raw::walk_counted`) as an
    /// access chunk with the same records and counts would be fed: each first touch an
    /// access of its own, and the accesses up to the first one counted on the node the
    /// thread had before it.
    fn counted(
        &mut self,
        t: u32,
        words: &[u64],
        addrs: &mut Vec<u64>,
        counts: &mut Vec<u32>,
        faults: &mut Vec<Fault>,
    ) -> Result<()> {
        self.grow(t)?;
        addrs.clear();
        counts.clear();
        faults.clear();
        // A word holds at most 4 lines' counts (a block's tag and bits take 2 more).
        addrs.reserve(4 * words.len());
        counts.reserve(4 * words.len());
        let mut split = None;
        let mut firsts = Vec::new();
        // The reader checked the words. Inlined, so that a line costs two stores.
        let _ = wire::walk_counted(
            words,
            #[inline(always)]
            |e| match e {
                Counted::Line { addr, count } => {
                    addrs.push(addr);
                    counts.push(count);
                }
                Counted::First { record, cpu } => {
                    let addr = wire::unpack(record).addr;
                    addrs.push(addr);
                    counts.push(1);
                    split.get_or_insert(addrs.len());
                    firsts.push((addr, cpu));
                }
            },
        );
        for (addr, cpu) in firsts {
            faults.push(self.dec.fault(t, addr, cpu.unwrap_or(u32::MAX)));
        }
        self.batch(t, addrs, counts, split.unwrap_or(addrs.len()), faults)
    }

    /// Feeds one chunk's counted accesses of thread `t`: those up to `split` (the
    /// first first touch included) on the node the thread had, then its first touches
    /// `faults`, which may tell its node, then the rest.
    fn batch(
        &mut self,
        t: u32,
        addrs: &[u64],
        counts: &[u32],
        split: usize,
        faults: &[Fault],
    ) -> Result<()> {
        self.records += addrs.len() as u64;
        self.model
            .accesses_counted(t, &addrs[..split], &counts[..split])?;
        if !faults.is_empty() {
            self.first_touches(t, faults)?;
            self.model
                .accesses_counted(t, &addrs[split..], &counts[split..])?;
        }
        Ok(())
    }

    /// Remembers a chunk's first touches (not fed to the model: see the module doc); the
    /// first one tells the thread's node, which the accesses after it count on.
    fn first_touches(&mut self, t: u32, faults: &[Fault]) -> Result<()> {
        for f in faults {
            self.first.entry(f.addr).or_insert((t, f.node));
        }
        if !self.known_node[t as usize] && faults[0].cpu != u32::MAX {
            self.known_node[t as usize] = true;
            self.nodes[t as usize] = faults[0].node;
            self.model.grow(self.nodes.len(), &self.nodes)?;
        }
        Ok(())
    }

    /// Makes room for thread `t`.
    fn grow(&mut self, t: u32) -> Result<()> {
        let n = t as usize + 1;
        if n > self.nodes.len() {
            self.nodes.resize(n, 0);
            self.known_node.resize(n, false);
            self.model.grow(n, &self.nodes)?;
        }
        Ok(())
    }

    fn finish(
        mut self,
        topo: &tdmap_topo::Topology,
        header: &Header,
        status: &ExitStatus,
        run_seconds: f64,
    ) -> Result<ModelFile> {
        self.threads.sort_by_key(|t| t.id);
        let rows = |m: Metric| -> Vec<Vec<u64>> {
            let m = self.model.matrix(m);
            m.as_slice()
                .chunks(m.n().max(1))
                .map(<[u64]>::to_vec)
                .collect()
        };
        let mut pages: Vec<ModelPage> = self
            .model
            .table()
            .pages()
            .map(|(p, nv)| {
                let addr = p * self.model.table().config().page_size;
                let first = self.first.get(&addr);
                ModelPage {
                    addr,
                    nv,
                    first_thread: first.map(|f| f.0),
                    first_node: first.map(|f| f.1),
                }
            })
            .collect();
        pages.sort_by_key(|p| p.addr);
        let name = header.program.first().cloned().unwrap_or_default();
        let sizes = [4096, 2 << 20];
        let setup = crate::cmd::analyze::setup(&name, topo, &sizes, Metric::Accesses, 10);
        let mut analysis = AnalyzeReport::new(&setup, header, &self.model)?;
        analysis.set_thread_nodes(self.nodes.clone());
        let (format, version) = tdmap_format::header::<ModelFile>();
        Ok(ModelFile {
            format,
            version,
            program: header.program.clone(),
            status: format!("{:?}", header.status),
            exit_code: status.code(),
            signal: status.signal(),
            machine: header.machine.clone(),
            page_size: header.page_size as u64,
            threads: self.threads,
            filtered: self.filtered,
            model_bytes: self.model.table().memory_bytes(),
            run_seconds,
            matrix_accesses: rows(Metric::Accesses),
            matrix_amount: rows(Metric::Amount),
            pages,
            analysis,
        })
    }
}
