//! One fuzz target per parser a user can feed, driven by the harness in `src/lib.rs`.
//! Every target asserts that the parser returns (no panic, no hang: inputs are small, so
//! each case is bounded) and that a refusal is an `Err` with a one-line message.
//!
//! `cargo test` runs a short pass ([`tdmap_fuzz::DEFAULT_CASES`] cases per target);
//! `make fuzz FUZZ_SECONDS=60` (or `FUZZ_CASES=N`) runs a long one in release mode.

use std::path::Path;
use std::sync::OnceLock;
use tdmap_format::Versioned;
use tdmap_fuzz::{fuzz, Target};

/// Tokens for the text formats: separators, literals, numbers at the limits.
fn text_tokens() -> Vec<Vec<u8>> {
    [
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        "\"",
        "null",
        "true",
        "false",
        "-",
        "1e308",
        "-1e308",
        "1e999",
        "NaN",
        "Infinity",
        "18446744073709551616",
        "-1",
        "0.0",
        "\\u0000",
        "\\n",
        "\n",
        "#",
        ";",
        " ",
        "\t",
        "0x",
        "pu:",
        "core:",
        "numa:",
        "package:",
        "[numa]",
        "(memory=4GiB)",
        "l3:1(size=18MiB)",
    ]
    .iter()
    .map(|t| t.as_bytes().to_vec())
    .collect()
}

/// `"key":` for every key of a JSON document, so that mutations move fields around.
fn json_keys(doc: &str) -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = doc
        .split('"')
        .collect::<Vec<_>>()
        .windows(2)
        .filter(|w| w[1].starts_with(':'))
        .map(|w| format!("\"{}\": ", w[0]).into_bytes())
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// A refusal is one line (messages go to stderr as `tdmap: ...`, one line each).
fn one_line(err: &impl std::fmt::Display) {
    let msg = err.to_string();
    assert!(!msg.contains('\n'), "a message on several lines: {msg:?}");
    assert!(!msg.is_empty(), "an empty message");
}

fn pairs_topo() -> &'static tdmap_topo::Topology {
    static T: OnceLock<tdmap_topo::Topology> = OnceLock::new();
    T.get_or_init(|| tdmap_topo::preset("xeon-x7550-4s").unwrap())
}

// ---------------------------------------------------------------------------------------
// The trace reader (folds in crates/trace/tests/fuzz.rs's sample).

fn trace_sample(threads: u32, events: u64) -> Vec<u8> {
    use tdmap_trace::*;
    let p = std::env::temp_dir().join(format!(
        "tdmap-fuzz-{}-{threads}-{events}.trace",
        std::process::id()
    ));
    let mut h = Header::new(vec!["a".into(), "2".into()], "package:2 core:2");
    h.threads = threads;
    let w = Writer::create(&p, h).unwrap();
    for t in 0..threads {
        let a: Vec<Access> = (0..events)
            .map(|i| Access {
                thread: t,
                addr: (i % 7) * 64 + u64::from(t) * 4096,
                size: 4,
                write: i % 2 == 1,
                time: i,
            })
            .collect();
        w.append_accesses(t, &a).unwrap();
        let f = [Fault {
            thread: t,
            addr: 4096,
            cpu: t,
            node: 0,
            time: events + 10,
        }];
        w.append_faults(t, &f).unwrap();
    }
    w.set_threads(
        (0..threads)
            .map(|id| ThreadInfo {
                id,
                os_tid: 100 + id as i32,
                cpu: Some(id),
            })
            .collect(),
    )
    .unwrap();
    w.finish(TraceStatus::Complete).unwrap();
    let b = std::fs::read(&p).unwrap();
    let _ = std::fs::remove_file(&p);
    b
}

#[test]
fn trace() {
    static SEEDS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    let seeds = SEEDS
        .get_or_init(|| vec![trace_sample(2, 50), trace_sample(1, 3), trace_sample(3, 20)])
        .clone();
    let mut dict = vec![b"TDMAPTRC".to_vec(), tdmap_trace::MAGIC.to_vec()];
    dict.extend(text_tokens());
    let max_len = 4 * seeds.iter().map(Vec::len).max().unwrap();
    fuzz(
        Target {
            name: "trace",
            seeds,
            dict,
            max_len,
        },
        |b| {
            let len = b.len() as u64;
            let r =
                tdmap_trace::Reader::with_source(std::io::Cursor::new(b.to_vec()), "fuzz".into());
            let res = r.and_then(|mut r| {
                let mut n = 0;
                while let Some(c) = r.next_chunk()? {
                    n += c.len();
                }
                Ok(n)
            });
            if let Err(e) = &res {
                one_line(e);
                let off = e.offset();
                assert!(
                    off.is_some_and(|o| o <= len),
                    "error without an offset in the file: {e}"
                );
            }
            let report = tdmap_trace::check_bytes(b.to_vec());
            // A valid trace cut anywhere is never Complete to the checker.
            if SEEDS
                .get()
                .unwrap()
                .iter()
                .any(|s| b.len() < s.len() && s.starts_with(b))
            {
                assert!(!report.ok(), "a cut at byte {len} passed the checker");
            }
            res.is_ok() && report.ok()
        },
    );
}

// ---------------------------------------------------------------------------------------
// The runtime's wire formats (crates/wire).

use tdmap_wire::raw::{self, ChunkHeader, Msg};

fn chunk_stream() -> Vec<u8> {
    let mut b = Vec::new();
    let head = |kind, thread, count, extra| ChunkHeader {
        magic: raw::MAGIC,
        kind,
        thread,
        count,
        t0: 1000,
        t1: 2000,
        extra,
    };
    b.extend(head(raw::KIND_THREAD, 0, 0, 4242).encode());
    let records: Vec<u64> = vec![
        raw::pack(0x1000, 2, false, false),
        raw::pack(0x2008, 3, true, true),
        raw::pack_cpu(3),
        raw::pack(0x1004, 2, true, false),
    ];
    b.extend(head(raw::KIND_ACCESS, 0, records.len() as u32, 0).encode());
    for t in 0..raw::TICKS as u64 {
        b.extend((1000 + t).to_ne_bytes());
    }
    for r in records {
        b.extend(r.to_ne_bytes());
    }
    // A predicted chunk (wire version 7): two records, a run of 6, a first touch with its
    // CPU word, a repeat word naming access 1.
    let words: Vec<u64> = vec![
        raw::pack(0x1000, 3, false, false),
        raw::pack(0x1008, 3, false, false),
        raw::pack_run(6),
        raw::pack(0x2000, 3, true, true),
        raw::pack_cpu(1),
        raw::pack_repeat(1, 5),
    ];
    b.extend(head(raw::KIND_PREDICTED, 0, words.len() as u32, 11).encode());
    for t in 0..raw::TICKS as u64 {
        b.extend((1000 + t).to_ne_bytes());
    }
    for w in words {
        b.extend(w.to_ne_bytes());
    }
    b.extend(head(raw::KIND_END, 0, 0, 7).encode());
    b
}

#[test]
fn wire_chunks() {
    let seeds = vec![chunk_stream(), chunk_stream()[..raw::HEADER_BYTES].to_vec()];
    fuzz(
        Target {
            name: "wire-chunks",
            seeds,
            dict: vec![
                raw::MAGIC.to_ne_bytes().to_vec(),
                8192u32.to_ne_bytes().to_vec(),
            ],
            max_len: 4096,
        },
        |b| {
            // As `tdmap trace` reads the data file: header, body, records.
            let mut at = 0;
            while at < b.len() {
                let h = match ChunkHeader::decode(&b[at..]).and_then(|h| Ok((h, h.body_bytes()?))) {
                    Ok(hb) => hb,
                    Err(e) => {
                        one_line(&e);
                        return false;
                    }
                };
                assert_eq!(h.0.encode()[..], b[at..at + raw::HEADER_BYTES]);
                at += raw::HEADER_BYTES;
                let Some(body) = b.get(at..at + h.1) else {
                    return false;
                };
                let words: Vec<u64> = (body.chunks_exact(8).skip(raw::TICKS))
                    .map(|w| u64::from_ne_bytes(w.try_into().unwrap()))
                    .collect();
                for &w in &words {
                    let r = raw::unpack(w);
                    assert!(r.size.is_power_of_two() && r.size <= 128);
                    let _ = raw::unpack_cpu(w);
                }
                // A predicted chunk expands to its header's word count, or is refused.
                if h.0.kind == raw::KIND_PREDICTED {
                    let mut out = Vec::new();
                    match raw::expand(&words, h.0.extra, &mut out) {
                        Ok(()) => assert_eq!(out.len() as u64, h.0.extra),
                        Err(e) => one_line(&e),
                    }
                }
                at += h.1;
            }
            true
        },
    );
}

#[test]
fn wire_control() {
    let msgs = [
        Msg {
            tag: raw::MSG_HELLO,
            b: raw::VERSION,
            a: 4242,
        },
        Msg {
            tag: raw::MSG_PAGE_SIZE,
            b: 0,
            a: 4096,
        },
        Msg {
            tag: raw::MSG_WRITE_FAILED,
            b: 0,
            a: 28,
        },
        Msg {
            tag: raw::MSG_CRASHED,
            b: 11,
            a: 0,
        },
        Msg {
            tag: raw::MSG_DONE,
            b: 0,
            a: 3,
        },
    ];
    let seed: Vec<u8> = msgs.iter().flat_map(|m| m.encode()).collect();
    fuzz(
        Target {
            name: "wire-control",
            seeds: vec![seed],
            dict: vec![],
            max_len: 1024,
        },
        |b| {
            let all = Msg::decode_all(b);
            assert_eq!(all.len(), b.len() / raw::MSG_BYTES);
            for (m, bytes) in all.iter().zip(b.chunks_exact(raw::MSG_BYTES)) {
                assert_eq!(m.encode()[..], bytes[..]);
            }
            match Msg::decode(b) {
                Ok(_) => true,
                Err(e) => {
                    one_line(&e);
                    false
                }
            }
        },
    );
}

#[test]
fn inject_settings() {
    use tdmap_wire::inject::Settings;
    let s = |announce_fd| Settings {
        period_ms: 100,
        fraction: 0.05,
        pages: 20,
        monitor: 4242,
        announce_fd,
    };
    let seeds = vec![
        s(Some(5)).encode().into_bytes(),
        s(None).encode().into_bytes(),
    ];
    fuzz(
        Target {
            name: "inject",
            seeds,
            dict: text_tokens(),
            max_len: 256,
        },
        |b| match Settings::decode(&String::from_utf8_lossy(b)) {
            Ok(s) => {
                assert_eq!(Settings::decode(&s.encode()).unwrap(), s, "round trip");
                true
            }
            Err(e) => {
                one_line(&e);
                false
            }
        },
    );
}

#[test]
fn announcement() {
    use tdmap_wire::{Announcement, AnnouncementReader};
    let seeds = vec![
        Announcement::Handler { pid: 42, tid: 43 }.encode().to_vec(),
        Announcement::NoHandler { pid: 42, errno: 38 }
            .encode()
            .to_vec(),
    ];
    fuzz(
        Target {
            name: "announce",
            seeds,
            dict: vec![],
            max_len: 64,
        },
        |b| {
            let whole = Announcement::decode(b);
            // The pipe may deliver the bytes in any pieces: the same answer.
            let mut r = AnnouncementReader::new();
            let mut fed = None;
            for piece in b.chunks(1 + b.len() % 5) {
                fed = r.feed(piece);
            }
            let end = r.finish();
            if let Err(e) = &end {
                one_line(e);
            }
            if b.len() >= 16 {
                assert_eq!(
                    fed.map(|x| x.map_err(|e| e.to_string())),
                    Some(whole.clone().map_err(|e| e.to_string()))
                );
                assert_eq!(
                    end.map_err(|e| e.to_string()),
                    whole.clone().map_err(|e| e.to_string())
                );
            } else {
                assert!(fed.is_none() && end.is_err());
            }
            whole.is_ok()
        },
    );
}

// ---------------------------------------------------------------------------------------
// The JSON formats (all read through tdmap_format::from_str).

/// Fuzzes the reader of `T` on mutations of `docs`; `then` uses an accepted value as the
/// command that reads it would.
fn json_target<T: Versioned>(name: &str, docs: Vec<String>, then: impl Fn(&T)) {
    let mut dict = text_tokens();
    for d in &docs {
        dict.extend(json_keys(d));
    }
    let max_len = 3 * docs.iter().map(String::len).max().unwrap_or(0) + 64;
    let path = Path::new("fuzz.json");
    fuzz(
        Target {
            name,
            seeds: docs.into_iter().map(String::into_bytes).collect(),
            dict,
            max_len,
        },
        |b| {
            // `tdmap_format::read` refuses bytes that are not UTF-8 before parsing.
            let Ok(text) = std::str::from_utf8(b) else {
                return false;
            };
            match tdmap_format::from_str::<T>(text, path) {
                Ok(v) => {
                    let again = tdmap_format::to_string(&v);
                    assert!(!again.is_empty());
                    then(&v);
                    true
                }
                Err(e) => {
                    one_line(&e);
                    assert!(e.to_string().starts_with("fuzz.json: "), "{e}");
                    false
                }
            }
        },
    );
}

fn analyze_report(threads: u32) -> tdmap_sharing::AnalyzeReport {
    use tdmap_sharing::*;
    let nodes: Vec<u32> = (0..threads).map(|t| t % 2).collect();
    let mut cfg = TableConfig::exact(2);
    cfg.nodes = 2;
    let mut model = SharingModel::new(cfg, threads as usize, &nodes).unwrap();
    for t in 0..threads {
        model
            .accesses(t, &[0x1000, 0x1000 + u64::from(t) * 64])
            .unwrap();
        model.accesses(t, &[0x9000 * u64::from(t + 1)]).unwrap();
    }
    let setup = ReportSetup {
        trace: "t.trace",
        machine: "package:2 core:2",
        cache_bytes: 1 << 20,
        page_sizes: &[4096, 2 << 20],
        metric: Metric::Amount,
        top: 3,
    };
    let h = tdmap_trace::Header::new(vec!["prog".into(), threads.to_string()], "local");
    AnalyzeReport::new(&setup, &h, &model).unwrap()
}

#[test]
fn json_analyze() {
    let docs = vec![analyze_report(3).to_json(), analyze_report(1).to_json()];
    json_target::<tdmap_sharing::AnalyzeReport>("analyze-json", docs, |r| {
        let _ = r.text();
        // `tdmap run --reference` compares a detection with its matrix.
        let _ = tdmap_sharing::similarity(&r.matrix, &r.matrix);
    });
}

fn model_file(threads: usize) -> tdmap_sharing::ModelFile {
    use tdmap_sharing::*;
    let (format, version) = tdmap_format::header::<ModelFile>();
    let m = |k: u64| {
        (0..threads)
            .map(|i| {
                (0..threads)
                    .map(|j| if i == j { 0 } else { k * (i + j) as u64 })
                    .collect()
            })
            .collect()
    };
    ModelFile {
        format,
        version,
        program: vec!["prog".into(), threads.to_string()],
        status: "Complete".into(),
        exit_code: Some(0),
        signal: None,
        machine: "package:2 core:2".into(),
        page_size: 4096,
        threads: (0..threads as u32)
            .map(|id| ModelThread {
                id,
                os_tid: 42 + u64::from(id),
            })
            .collect(),
        filtered: 0,
        model_bytes: 100,
        run_seconds: 0.5,
        matrix_accesses: m(3),
        matrix_amount: m(64),
        pages: vec![ModelPage {
            addr: 4096,
            nv: vec![3, 0],
            first_thread: Some(0),
            first_node: None,
        }],
        analysis: analyze_report(threads as u32),
    }
}

#[test]
fn json_model() {
    let docs = vec![
        tdmap_format::to_string(&model_file(3)),
        tdmap_format::to_string(&model_file(1)),
    ];
    json_target::<tdmap_sharing::ModelFile>("model-json", docs, |f| {
        // `tdmap map --model`: the matrix, mapped and costed (machine from the file is
        // a synthetic target of its own; the preset keeps each case fast).
        map_and_cost(&f.accesses_f64(), f.n());
    });
}

#[test]
fn json_mapping() {
    let topo = pairs_topo();
    let how = |costs| tdmap_map::Provenance {
        algorithm: "greedy".into(),
        distance: "hops".into(),
        seed: 7,
        costs,
    };
    let docs = vec![
        tdmap_map::MappingFile::new(topo, &[3, 0, 17, 40], how([10.0, 20.0, 15.5])).to_json(),
        tdmap_map::MappingFile::new(topo, &[0], how([0.0, 0.0, 0.0])).to_json(),
    ];
    json_target::<tdmap_map::MappingFile>("mapping-json", docs, |m| {
        // `tdmap run --mapping` and libmai pin thread k on os_cpus()[k].
        assert_eq!(m.os_cpus().len(), m.threads);
    });
}

fn sim_report(policy: &str, cycles: u64, remote: u64) -> tdmap_sim::SimReport {
    tdmap_sim::SimReport {
        policy: policy.into(),
        accesses: 100,
        cycles_max: cycles,
        cycles_total: 2 * cycles,
        thread_cycles: vec![cycles, cycles],
        mem: tdmap_sim::MemStats {
            mem_local: 10,
            mem_remote: remote,
            ..Default::default()
        },
        tlb_misses: 3,
        faults: 2,
        fault_cycles: 100,
        thread_migrations: 1,
        ticks: 4,
        ..Default::default()
    }
}

#[test]
fn json_sim() {
    use tdmap_sim::*;
    let setup = ComparisonSetup {
        trace: "t.trace".into(),
        machine: "xeon-x7550-4s".into(),
        threads: 2,
        accesses: 100,
        complete: true,
        period_cycles: 1000,
        energy: EnergyModel::for_machine(
            &Machine::new(
                &tdmap_topo::preset("xeon-x7550-4s").unwrap(),
                &SimConfig::default(),
            )
            .unwrap(),
            4096,
        ),
    };
    let reports = vec![
        sim_report("os", 200, 10),
        sim_report("kmaf", 150, 0),
        sim_report("oracle", 120, 20),
    ];
    let mut c = Comparison::new(setup, &SimConfig::default(), reports);
    let docs = vec![c.to_json()];
    c.results[1].normalised.interchip = f64::INFINITY;
    let docs = [docs, vec![c.to_json()]].concat();
    json_target::<Comparison>("sim-json", docs, |_| {});
}

fn run_report(threads: usize) -> tdmap_monitor::report::RunReport {
    use tdmap_monitor::report::{RunReport, RunSetup};
    let mut m = tdmap_sharing::SharingMatrix::new(threads);
    for i in 1..threads {
        m.add(i - 1, i, 5);
    }
    let o = tdmap_monitor::Outcome {
        exit_code: 0,
        wall: std::time::Duration::from_millis(1500),
        periods: 15,
        samples: Default::default(),
        threads: (0..threads as u32).map(|t| (100 + t, 6)).collect(),
        thread_pids: vec![100; threads],
        processes: Vec::new(),
        untracked: Vec::new(),
        keying: "virtual addresses".into(),
        matrix: m.clone(),
        amount: m.clone(),
        metrics: tdmap_sharing::thread_metrics(&m),
        data: None,
        actions: Default::default(),
        handler: Default::default(),
        times: Default::default(),
        timeline: Vec::new(),
    };
    let setup = RunSetup {
        program: "p".into(),
        sampler: "kernel".into(),
        events: "system-wide".into(),
        soft_dirty: false,
        inject: None,
        mai_auto: false,
        dry_run: true,
        fixed_mapping: false,
        rules: "run".into(),
        cfg: tdmap_monitor::Config::default(),
        period_ms: 100,
        ring_pages: 128,
        reference: None,
    };
    RunReport::new(pairs_topo(), setup, &o)
}

#[test]
fn json_run_report() {
    use tdmap_monitor::report::RunReport;
    let docs = vec![
        tdmap_format::to_string(&run_report(4)),
        tdmap_format::to_string(&run_report(1)),
    ];
    json_target::<RunReport>("run-json", docs, |r| {
        let _ = r.lost_share();
        let _ = tdmap_sharing::similarity(&r.matrix, &r.matrix_amount);
    });
}

// ---------------------------------------------------------------------------------------
// The matrix CSV of `tdmap map --matrix`.

/// What `tdmap map` does with a matrix: map it (greedy, and a baseline) and cost it. A
/// cost is finite or an error (never `null` in JSON).
fn map_and_cost(m: &[f64], n: usize) {
    let topo = pairs_topo();
    let opts = tdmap_map::Options {
        seed: 1,
        oversubscribe: true,
    };
    for algo in [tdmap_map::Algorithm::Greedy, tdmap_map::Algorithm::Compact] {
        match tdmap_map::map_threads(algo, topo, m, n, &opts) {
            Ok(map) => {
                assert_eq!(map.len(), n);
                assert!(map.iter().all(|&p| p < topo.num_pus()));
                match tdmap_map::cost(topo, m, n, &map, tdmap_map::Distance::Hops) {
                    Ok(c) => assert!(c.is_finite() && c >= 0.0, "cost {c}"),
                    Err(e) => one_line(&e),
                }
            }
            Err(e) => one_line(&e),
        }
    }
}

#[test]
fn matrix_csv() {
    let seeds = vec![
        b"# two threads\n0, 5\n5 0\n".to_vec(),
        b"0,1,9,1\n1,0,1,9\n9,1,0,1\n1,9,1,0\n".to_vec(),
        b"0;2.5;1e3\n2.5;0;0\n1e3;0;0\n".to_vec(),
        b"0\n".to_vec(),
    ];
    fuzz(
        Target {
            name: "matrix-csv",
            seeds,
            dict: text_tokens(),
            // 64 threads at most fit a few hundred bytes of short cells; this keeps
            // mapping each accepted matrix fast.
            max_len: 1024,
        },
        |b| match tdmap_map::parse_csv(&String::from_utf8_lossy(b)) {
            Ok((m, n)) => {
                assert_eq!(m.len(), n * n);
                tdmap_map::validate(&m, n).unwrap();
                map_and_cost(&m, n);
                true
            }
            Err(e) => {
                one_line(&e);
                false
            }
        },
    );
}

// ---------------------------------------------------------------------------------------
// Machine descriptions: synthetic strings and distance specs (crates/topo).

/// hwloc builds only machines the size check accepts and counts at most this many PUs,
/// which keeps each case to milliseconds; a check that undercounts shows as a bigger
/// machine (or a slow case, which the harness reports as a hang).
const BUILD_AT_MOST: u64 = 256;

#[test]
fn synthetic() {
    let seeds: Vec<Vec<u8>> = [
        "package:2 numa:2 core:4 pu:2",
        "pack:4 [numa(memory=32GiB)] l3:1(size=18MiB) core:8 pu:2",
        "package:2 [numa] core:2",
        "numa:2 core:2",
        "core:1",
        "xeon-x7550-4s",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    fuzz(
        Target {
            name: "synthetic",
            seeds,
            dict: text_tokens(),
            max_len: 128,
        },
        |b| {
            let spec = String::from_utf8_lossy(b);
            // The classifier looks at the text (and whether a file exists).
            let _ = tdmap_topo::MachineSpec::parse(&spec);
            match tdmap_topo::check_synthetic(&spec) {
                Ok(pus) if pus <= BUILD_AT_MOST => match tdmap_topo::from_synthetic(&spec) {
                    Ok(t) => {
                        assert!(
                            t.num_pus() as u64 <= pus.max(1),
                            "{spec:?}: the check counted {pus} PUs, hwloc built {}",
                            t.num_pus()
                        );
                        true
                    }
                    Err(e) => {
                        one_line(&e);
                        false
                    }
                },
                Ok(_) => true,
                Err(e) => {
                    one_line(&e);
                    false
                }
            }
        },
    );
}

#[test]
fn distances() {
    let seeds: Vec<Vec<u8>> = [
        "\x0210:21",
        "\x0210,21;21,10",
        "\x0410,20,30,40;20,10,20,30;30,20,10,20;40,30,20,10",
        "\x0110",
        "\x0210 21\n21 10\n",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    fuzz(
        Target {
            name: "distances",
            seeds,
            dict: text_tokens(),
            max_len: 512,
        },
        |b| {
            // The first byte is the machine's node count (1 to 16), the rest the spec.
            let n = 1 + usize::from(b.first().copied().unwrap_or(0) % 16);
            let text = String::from_utf8_lossy(b.get(1..).unwrap_or_default());
            match tdmap_topo::Distances::parse(&text, n) {
                Ok(d) => {
                    assert_eq!((d.n, d.values.len()), (n, n * n));
                    assert!(d.numa_factor().is_finite() && d.numa_factor_min().is_finite());
                    true
                }
                Err(e) => {
                    one_line(&e);
                    let _ = tdmap_topo::Distances::suggestion(n);
                    false
                }
            }
        },
    );
}
