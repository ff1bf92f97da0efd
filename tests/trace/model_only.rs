//! `tdmap trace --model-only`: the model fed while the program runs gives what `tdmap
//! trace` then `tdmap analyze` give for the same run shape, `tdmap map --model` maps from
//! it, the model's memory does not grow with the number of accesses, and bad input is
//! handled as `tdmap trace` handles it.

use super::{analyze_pairs, built, compile, run, scratch, traced, workloads, TDMAP};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `tdmap trace --model-only --force -o SCRATCH/out -- prog args`.
fn model_to(out: &str, prog: &Path, args: &[String]) -> (PathBuf, Output) {
    std::fs::create_dir_all(scratch()).unwrap();
    let json = scratch().join(out);
    let mut cmd = Command::new(TDMAP);
    cmd.args(["trace", "--model-only", "--force", "-o"])
        .arg(&json)
        .arg("--")
        .arg(prog)
        .args(args);
    (json.clone(), run(&mut cmd))
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Runs workload `name` at `t` threads under `--model-only`; the JSON and the stdout.
fn modelled(name: &str, t: usize) -> (PathBuf, serde_json::Value, String) {
    let w = workloads::ALL.iter().find(|w| w.name == name).unwrap();
    let prog = built().join("tdmap").join(name);
    let args = [t.to_string(), w.size.to_string()];
    let (path, out) = model_to(&format!("{name}-{t}.model.json"), &prog, &args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "--model-only {name} {t}: {err}");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (path.clone(), read_json(&path), stdout)
}

fn matrix(json: &serde_json::Value, key: &str) -> Vec<Vec<f64>> {
    json[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r.as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect()
        })
        .collect()
}

#[test]
fn model_only_gives_the_matrices_of_trace_then_analyze() {
    let t = 8;
    for name in ["pairs", "stencil1d"] {
        let (path, json, stdout) = modelled(name, t);
        let w = workloads::ALL.iter().find(|w| w.name == name).unwrap();
        let tr = traced(name, w.size, t);
        assert_eq!(stdout, tr.stdout, "{name}: the checksum changed");
        assert_eq!(
            (&json["format"], &json["version"]),
            (&"tdmap-model".into(), &1.into())
        );
        let text = std::fs::read_to_string(&path).unwrap();
        let file = tdmap_format::from_str::<tdmap_sharing::ModelFile>(&text, &path);
        assert_eq!(
            file.unwrap().n(),
            t,
            "{name}: the typed model reads what was written"
        );
        assert_eq!(json["status"], "Complete");
        let threads = json["threads"].as_array().unwrap();
        let ids: Vec<u64> = threads.iter().map(|t| t["id"].as_u64().unwrap()).collect();
        assert_eq!(ids, (0..t as u64).collect::<Vec<_>>(), "{name}: thread ids");
        assert!(threads.iter().all(|t| t["os_tid"].as_u64().unwrap() > 0));
        for (metric, key) in [("amount", "matrix_amount"), ("accesses", "matrix_accesses")] {
            let (want, _) = analyze_pairs(&tr.trace, t, metric);
            let got = matrix(&json, key);
            let score = workloads::similarity(&got, &want, 1.0);
            assert!(
                score >= 0.99,
                "{name} {metric}: correlation {score:.4}\nmodel {got:?}\nanalyze {want:?}"
            );
        }
        let pages = json["pages"].as_array().unwrap();
        assert!(!pages.is_empty());
        let nodes = json["analysis"]["nodes"].as_u64().unwrap() as usize;
        for p in pages {
            assert_eq!(p["addr"].as_u64().unwrap() % 4096, 0);
            assert_eq!(p["nv"].as_array().unwrap().len(), nodes);
        }
        assert!(pages.iter().any(|p| p["first_thread"].is_u64()));
        assert_eq!(json["analysis"]["threads"], t);
        assert!(json["analysis"]["accesses"].is_object(), "kMAF metrics");
    }
}

/// `tdmap map --machine xeon-x7550-4s --json --model FILE`.
fn map_model(model: &Path) -> Output {
    Command::new(TDMAP)
        .args(["map", "--machine", "xeon-x7550-4s", "--json", "--model"])
        .arg(model)
        .output()
        .unwrap()
}

#[test]
fn tdmap_map_maps_pairs_from_a_model_file() {
    let (path, _, _) = modelled("pairs", 8);
    let out = map_model(&path);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let map = json["mapping"].as_array().unwrap();
    assert_eq!(map.len(), 8);
    for i in 0..4 {
        assert_eq!(
            map[i]["core"],
            map[7 - i]["core"],
            "thread {i} and its pair share data: {map:?}"
        );
    }
    let bad = scratch().join("not-a-model.json");
    std::fs::write(&bad, "{\"format\": \"something else\"}").unwrap();
    let refused = map_model(&bad);
    assert_eq!(refused.status.code(), Some(2));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(
        err.trim_end(),
        format!(
            "tdmap: {}: format \"something else\" no version, expected \"tdmap-model\" version 1; write it with tdmap trace --model-only -o FILE -- PROGRAM",
            bad.display()
        )
    );
    // A mapping is not a model: the message names both formats.
    let mapping = scratch().join("mapping.json");
    std::fs::write(&mapping, &out.stdout).unwrap();
    let refused = map_model(&mapping);
    assert_eq!(refused.status.code(), Some(2));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("format \"tdmap-mapping\" version 2, expected \"tdmap-model\" version 1"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn the_models_memory_does_not_grow_with_the_accesses() {
    let exe = compile(
        "sweep.c",
        "#include <stdlib.h>\n#include <stdio.h>\nvolatile long a[1 << 14];\n\
         int main(int c, char **v){ long s = 0; int k = atoi(v[1]);\n\
         for (int r = 0; r < k; r++) for (int i = 0; i < (1 << 14); i++) s += a[i]++;\n\
         printf(\"%ld\\n\", s); return 0; }\n",
    );
    let mut seen = Vec::new();
    for reps in [1, 40] {
        let (path, out) = model_to("sweep.model.json", &exe, &[reps.to_string()]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let json = read_json(&path);
        let events = json["analysis"]["events"].as_u64().unwrap();
        // Stack pages left out: where ASLR puts the stack, main's frame straddles a page
        // boundary or not (34 or 35 pages in all, at random, for the same program).
        let pages = json["pages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["addr"].as_u64().unwrap() < 0x7ff0_0000_0000)
            .count();
        seen.push((events, json["model_bytes"].as_u64().unwrap(), pages));
    }
    let ((e1, b1, p1), (e40, b40, p40)) = (seen[0], seen[1]);
    assert!(e40 > 30 * e1, "40 sweeps count {e40} events vs {e1}");
    assert_eq!(p1, p40, "the same pages are touched");
    // Where the address layout puts the array against the table's 64-page groups can
    // change a group or two; 40 times the accesses must not change more.
    assert!(
        b40 < 2 * b1,
        "the model grew with the accesses: {b1} -> {b40} bytes"
    );
}

#[test]
fn model_only_refuses_bad_input_as_trace_does() {
    std::fs::create_dir_all(scratch()).unwrap();
    let out_path = scratch().join("true.model.json");
    let out = Command::new(TDMAP)
        .args(["trace", "--model-only", "-o"])
        .arg(&out_path)
        .args(["--", "/bin/true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!out_path.exists());
    let keep = scratch().join("keep.model.json");
    std::fs::write(&keep, b"precious").unwrap();
    let out = Command::new(TDMAP)
        .args(["trace", "--model-only", "-o"])
        .arg(&keep)
        .arg("--")
        .arg(built().join("tdmap").join("ep"))
        .arg("2")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read(&keep).unwrap(), b"precious");
}

#[test]
fn a_crash_under_model_only_is_flushed_and_marked() {
    let exe = compile(
        "crash-model.c",
        "#include <stdlib.h>\nvolatile long a[4096];\nint main(void){ for (int i = 0; i < 4096; i++) a[i] = i; abort(); }\n",
    );
    let (path, out) = model_to("crash.model.json", &exe, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    // The program's status, as a shell reports it: 128 + SIGABRT (issue 17 item 7).
    assert_eq!(out.status.code(), Some(134), "{err}");
    let json = read_json(&path);
    assert_eq!(json["status"], "Crashed");
    assert!(
        json["analysis"]["events"].as_u64().unwrap() >= 4096,
        "not flushed"
    );
    assert_eq!(json["signal"], 6);
}

/// Runs `setarch -R tdmap trace FLAGS --force -o SCRATCH/out --summary SCRATCH/out.sum --
/// prog args` with `TDMAP_RT_AGGREGATE=agg` in tdmap's environment: with the address
/// space not randomised, and the program's environment the same length in every run,
/// each run puts the same data at the same addresses. Returns the output, the summary.
fn unrandomised(out: &str, flags: &[&str], agg: &str, prog: &Path) -> (PathBuf, serde_json::Value) {
    std::fs::create_dir_all(scratch()).unwrap();
    let (path, sum) = (scratch().join(out), scratch().join(format!("{out}.sum")));
    let mut cmd = Command::new("setarch");
    cmd.args(["-R", TDMAP, "trace"])
        .args(flags)
        .args(["--force", "-o"])
        .arg(&path)
        .arg("--summary")
        .arg(&sum)
        .args(["--", prog.to_str().unwrap(), "4"])
        .env(tdmap_wire::raw::ENV_AGGREGATE, agg);
    let out = run(&mut cmd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (path, read_json(&sum))
}

/// The model's result does not depend on the order of one thread's accesses within a
/// chunk (`tdmap_sharing::SharingModel::accesses_counted`), so with threads that run one
/// after another, the runtime's aggregation (`crates/rt/src/aggregate.rs`) gives what
/// one record per access gives, but for the one rule it does not share: a line's reads
/// go through the spin collapse only once the line is hot (`aggregate::HOT` accesses in
/// the batch), so a polled flag counts up to that many reads more per batch. So: the
/// amount matrix, which the collapse never changes, and every page's first toucher
/// exactly; the events within that bound; the access matrix as a trace analysed, at a
/// correlation of 0.99 or more.
#[test]
fn aggregated_records_give_the_model_of_one_record_per_access() {
    // aggregate::HOT; each of the 4 threads polls one line in at most a few batches.
    const HOT: u64 = 256;
    let exe = compile("sequential.c", include_str!("sequential.c"));
    let [(on, on_sum), (off, off_sum)] = ["1", "0"].map(|agg| {
        let model = &["--model-only"][..];
        let (path, sum) = unrandomised(&format!("seq-agg{agg}.json"), model, agg, &exe);
        (read_json(&path), sum)
    });
    let events = on["analysis"]["events"].as_u64().unwrap();
    let off_events = off["analysis"]["events"].as_u64().unwrap();
    assert!(events > 380_000, "{events} events");
    assert!(
        off_events <= events && events <= off_events + 4 * 4 * HOT,
        "{events} events aggregated, {off_events} not"
    );
    assert_eq!(on["matrix_amount"], off["matrix_amount"]);
    let first = |m: &serde_json::Value| -> Vec<(u64, serde_json::Value)> {
        m["pages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["addr"].as_u64().unwrap(), p["first_thread"].clone()))
            .collect()
    };
    assert_eq!(
        first(&on),
        first(&off),
        "the pages and their first touchers"
    );
    // Aggregation did happen: far fewer records than accesses.
    let records = |s: &serde_json::Value| s["records"].as_u64().unwrap();
    assert!(
        records(&on_sum) * 3 < records(&off_sum),
        "records {} aggregated, {} not",
        records(&on_sum),
        records(&off_sum)
    );
    // Asked for, and still not aggregated: a trace keeps every access.
    let (trace, _) = unrandomised("seq-agg.trace", &[], "1", &exe);
    // Both metrics, as `tdmap analyze` gives them from the trace. This needs the trace's
    // frames in time order: a thread's last frame, left open until the end of the
    // conversion, put its last accesses after those of the threads run later (the
    // access metric 80293 against the model's 72831 for threads 1 and 2).
    for metric in ["accesses", "amount"] {
        let (want, json) = analyze_pairs(&trace, 5, metric);
        let mut got = matrix(&on, &format!("matrix_{metric}"));
        // The main thread and its 4 workers; analyze gives the pairs, not the diagonal.
        (0..5).for_each(|i| got[i][i] = 0.0);
        if metric == "amount" {
            assert_eq!(got, want, "{metric}: model, then trace + analyze");
        } else {
            let score = workloads::similarity(&got, &want, 1.0);
            assert!(
                score >= 0.99,
                "{metric}: correlation {score:.4}\nmodel {got:?}\nanalyze {want:?}"
            );
        }
        // First touches are accesses the model already has: it does not count them
        // again, as analyze does not (a run may make a few accesses more or fewer in
        // libc); the flag's hot reads are the rest.
        let traced = json["events"].as_u64().unwrap();
        assert!(
            traced <= events + 20 && events <= traced + 4 * 4 * HOT,
            "{events} events, {traced} traced"
        );
    }
}
