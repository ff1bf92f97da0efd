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
use std::io::{BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::time::Instant;
use tdmap_sharing::hash::FastMap;
use tdmap_sharing::Sharers;
use tdmap_sharing::{
    AnalyzeReport, Metric, ModelFile, ModelPage, ModelThread, SharingModel, TableConfig,
};
use tdmap_trace::{Fault, Header, TraceStatus};

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
    first: FastMap<u64, (u32, u32)>,
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
            first: FastMap::default(),
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
                    self.counted(thread, &words)?;
                    rd.recycle(words);
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

    /// Feeds a counted chunk of thread `t` (`tdmap_wire::raw::Entries`) as an access
    /// chunk with the same records and counts would be fed: each first touch an access
    /// of its own, and the accesses up to the first one counted on the node the thread
    /// had before it. The model takes the chunk's entries as its pages ([`ChunkPages`]).
    fn counted(&mut self, t: u32, words: &[u64]) -> Result<()> {
        self.grow(t)?;
        let mut pages = ChunkPages::new(words);
        self.model.accesses_paged(t, &mut pages)?;
        if let Some((addr, cpu)) = pages.first {
            let fault = self.dec.fault(t, addr, cpu.unwrap_or(u32::MAX));
            self.first_touches(t, &[fault])?;
            pages.stopped = false;
            self.model.accesses_paged(t, &mut pages)?;
            for &(addr, cpu) in &pages.later {
                let f = self.dec.fault(t, addr, cpu.unwrap_or(u32::MAX));
                self.first.entry(f.addr).or_insert((t, f.node));
            }
        }
        self.records += pages.records;
        Ok(())
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
        let table = self.model.table();
        let mut pages = Vec::with_capacity(table.tracked_pages() as usize);
        table.for_each_page(|p, nv| {
            let addr = p * table.config().page_size;
            let first = self.first.get(&addr);
            pages.push(ModelPage {
                addr,
                nv: nv.to_vec(),
                first_thread: first.map(|f| f.0),
                first_node: first.map(|f| f.1),
            });
        });
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

/// A counted chunk's entries as the model's pages (`tdmap_sharing::Pages`): a block is
/// its page's lines, a line or a first touch (one access) a page of its own. It stops
/// after the chunk's first first touch (`stopped`), whose CPU may tell the thread's node
/// for the accesses after it.
struct ChunkPages<'a> {
    entries: wire::Entries<'a>,
    /// The entry whose page `next_page` gave last.
    entry: Option<wire::Entry<'a>>,
    /// That entry's address (a first touch's record unpacked once).
    addr: u64,
    /// The first first touch: its address and CPU.
    first: Option<(u64, Option<u32>)>,
    /// The first touches after it.
    later: Vec<(u64, Option<u32>)>,
    stopped: bool,
    /// Records read: lines and first touches.
    records: u64,
}

// A block is one of the model's pages (`Feed::new`).
const _: () = assert!(wire::BLOCK_LINES * 64 == 4096);

impl<'a> ChunkPages<'a> {
    fn new(words: &'a [u64]) -> Self {
        ChunkPages {
            entries: wire::Entries::new(words),
            entry: None,
            addr: 0,
            first: None,
            later: Vec::new(),
            stopped: false,
            records: 0,
        }
    }
}

impl tdmap_sharing::Pages for ChunkPages<'_> {
    #[inline(always)]
    fn next_page(&mut self, shift: u32) -> Option<u64> {
        if self.stopped {
            return None;
        }
        // The reader checked the words (`RawReader::next_event`).
        let entry = self.entries.next_checked()?;
        let addr = match entry {
            wire::Entry::Block(b) => {
                self.records += b.lines.count_ones() as u64;
                b.base
            }
            wire::Entry::One(wire::Counted::Line { addr, .. }) => {
                self.records += 1;
                addr
            }
            wire::Entry::One(wire::Counted::First { record, cpu }) => {
                self.records += 1;
                let addr = wire::unpack(record).addr;
                if self.first.is_none() {
                    self.first = Some((addr, cpu));
                    self.stopped = true;
                } else {
                    self.later.push((addr, cpu));
                }
                addr
            }
        };
        (self.entry, self.addr) = (Some(entry), addr);
        Some(addr >> shift)
    }

    #[inline(always)]
    fn full(&mut self) -> Option<u64> {
        match self.entry {
            Some(wire::Entry::Block(b)) if b.lines == u64::MAX => Some(b.total()),
            _ => None,
        }
    }

    #[inline(always)]
    fn each(&mut self, _shift: u32, mut f: impl FnMut(u64, u64)) {
        match self.entry.take() {
            Some(wire::Entry::Block(b)) => b.each(
                #[inline(always)]
                |addr, count| f(addr, count as u64),
            ),
            Some(wire::Entry::One(wire::Counted::Line { count, .. })) => f(self.addr, count as u64),
            Some(wire::Entry::One(wire::Counted::First { .. })) => f(self.addr, 1),
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tdmap_sharing::Metric;

    /// A counted chunk of thread `t`'s: blocks narrow and wide, a line entry, first
    /// touches with and without their CPU word (a crash cuts the last one's off).
    fn chunk(t: u64, cut: bool) -> Vec<u64> {
        let mut words = Vec::new();
        let block = |base: u64, lines: &[(usize, u32)], words: &mut Vec<u64>| {
            let mut counts = [0u32; wire::BLOCK_LINES];
            lines.iter().for_each(|&(k, c)| counts[k] = c);
            let mut out = [0u64; wire::MAX_BLOCK_WORDS];
            let n = wire::pack_block(base, wire::lines_of(&counts), &counts, &mut out);
            words.extend_from_slice(&out[..n]);
        };
        let page = 0x7f00_0000 >> 12;
        // One line of the page that each thread later reads whole: its lines then share
        // with different threads (`full_page` takes them one by one).
        block(page + 1, &[(10 + t as usize, 1)], &mut words);
        block(page, &[(0, 3), (1, 1), (7, 9), (63, 2)], &mut words);
        block(page + t, &[(5, 70_000), (6, 1)], &mut words);
        block(page + 9, &[(t as usize, 4)], &mut words);
        let first = |addr: u64| wire::pack(addr, 3, true, true);
        words.extend_from_slice(&wire::pack_first(
            first((page + 20 + t) << 12),
            wire::pack_cpu(1),
        ));
        block(page, &[(2, 5), (3 + t as usize, 1)], &mut words);
        block(page + 20 + t, &[(0, 2), (1, 3)], &mut words);
        words.extend_from_slice(&wire::pack_first(
            first((page + 30 + t) << 12),
            wire::pack_cpu(0),
        ));
        // A first touch on the line that thread t + 1 reads of `page`: its access makes
        // the two share (a first touch counted on another line would not).
        words.extend_from_slice(&wire::pack_first(
            first((page << 12) + (4 + t) * 64 + 8),
            wire::pack_cpu(0),
        ));
        block(
            page + 1,
            (0..64)
                .map(|k| (k, 1 + k as u32))
                .collect::<Vec<_>>()
                .as_slice(),
            &mut words,
        );
        // Uniform blocks (one word each): a page that every thread reads whole, all its
        // lines shared alike (`full_page` takes it at once), and one whose lines are not.
        let mut out = [0u64; wire::MAX_BLOCK_WORDS];
        for (p, c) in [(page + 2, 3 + t as u16), (page + 1, 2)] {
            let n = wire::pack_full_block(p, &[c; wire::BLOCK_LINES], &mut out);
            assert_eq!(n, 1);
            words.extend_from_slice(&out[..n]);
        }
        if cut {
            words.extend_from_slice(&wire::pack_first(first((page + 40) << 12), 0)[..2]);
        }
        words
    }

    /// The chunk fed as before the pages: every line walked into slices, the accesses up
    /// to the first first touch on the thread's old node, then the first touches, then
    /// the rest.
    fn by_slices(feed: &mut Feed, t: u32, words: &[u64]) {
        feed.grow(t).unwrap();
        let (mut addrs, mut counts, mut firsts, mut split) = (vec![], vec![], vec![], None);
        wire::walk_counted(words, |e| match e {
            wire::Counted::Line { addr, count } => {
                addrs.push(addr);
                counts.push(count);
            }
            wire::Counted::First { record, cpu } => {
                addrs.push(wire::unpack(record).addr);
                counts.push(1);
                split.get_or_insert(addrs.len());
                firsts.push(
                    feed.dec
                        .fault(t, wire::unpack(record).addr, cpu.unwrap_or(u32::MAX)),
                );
            }
        })
        .unwrap();
        let split = split.unwrap_or(addrs.len());
        feed.batch(t, &addrs, &counts, split, &firsts).unwrap();
    }

    /// A feed on a machine of two nodes, CPU c on node c: a thread's first touch on
    /// CPU 1 moves its later accesses to node 1.
    fn feed() -> Feed {
        let topo = tdmap_topo::MachineSpec::parse("package:2 numa:1 core:1")
            .load(None)
            .unwrap();
        assert_eq!(topo.num_nodes(), 2);
        let mut feed = Feed::new(&topo, 64, None).unwrap();
        feed.dec = Decoder::new(4096).with_cpu_nodes(vec![0, 1]);
        feed
    }

    #[test]
    fn a_counted_chunk_fed_as_pages_gives_what_its_lines_fed_as_slices_give() {
        let (mut pages, mut slices) = (feed(), feed());
        for (t, cut) in [(0, false), (1, false), (0, false), (2, true), (1, false)] {
            let words = chunk(t as u64, cut);
            wire::check_counted(&words).unwrap();
            pages.counted(t, &words).unwrap();
            by_slices(&mut slices, t, &words);
        }
        for m in [Metric::Accesses, Metric::Amount] {
            assert_eq!(pages.model.matrix(m), slices.model.matrix(m), "{m:?}");
        }
        assert!(
            pages.model.matrix(Metric::Accesses).get(0, 1) > 0,
            "threads share"
        );
        assert_eq!(pages.model.events(), slices.model.events());
        let nv = |f: &Feed| {
            let mut p: Vec<_> = f.model.table().pages().collect();
            p.sort();
            p
        };
        assert_eq!(nv(&pages), nv(&slices));
        assert_eq!(pages.records, slices.records);
        assert_eq!(pages.first, slices.first);
        assert_eq!(
            pages.first.len(),
            8,
            "two from each thread, one page that all three first-touch, and the one cut off"
        );
        assert_eq!(pages.nodes, slices.nodes);
        assert_eq!(
            pages.nodes,
            [1, 1, 1],
            "each thread's first first touch ran on CPU 1"
        );
        assert!(
            nv(&pages).iter().any(|(_, nv)| nv[0] > 0 && nv[1] > 0),
            "a page touched from both nodes"
        );
        assert_eq!(pages.known_node, slices.known_node);
    }
}
