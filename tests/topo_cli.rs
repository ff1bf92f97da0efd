//! `tdmap topo`: golden outputs of every preset and of a real machine capture, and the
//! one-line errors for bad machine specs.

mod common;

use common::{assert_bad_input, golden, tdmap, test_path};

fn stdout_of(args: &[&str]) -> String {
    let out = tdmap(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn every_preset_matches_its_golden_text_and_json() {
    let list = stdout_of(&["topo", "--list-presets"]);
    let names: Vec<&str> = list
        .lines()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(names.len(), 5, "{list}");
    for name in names {
        golden(
            &format!("topo/{name}.txt"),
            &stdout_of(&["topo", "--machine", name]),
        );
        golden(
            &format!("topo/{name}.json"),
            &stdout_of(&["topo", "--machine", name, "--json"]),
        );
    }
}

#[test]
fn real_machine_capture_matches_golden() {
    // An `lstopo --of xml` export of the 2-core, 1-node development VM.
    let xml = test_path("fixtures/machines/vm-1n2c.xml");
    let text = stdout_of(&["topo", "--machine", xml.to_str().unwrap()]);
    // The name line holds the absolute path; compare the rest.
    let body: String = text.lines().skip(1).map(|l| format!("{l}\n")).collect();
    golden("topo/vm-1n2c.txt", &body);
}

#[test]
fn x7550_json_reports_the_papers_machine() {
    let v: serde_json::Value = serde_json::from_str(&stdout_of(&[
        "topo",
        "--machine",
        "xeon-x7550-4s",
        "--json",
    ]))
    .unwrap();
    let s = &v["summary"];
    assert_eq!(s["numa_nodes"], 4);
    assert_eq!(s["cores"], 32);
    assert_eq!(s["pus"], 64);
    assert_eq!(s["l3"], 4);
    assert!(v["numa_factor"].as_f64().unwrap() > 1.0);
}

#[test]
fn synthetic_json_reports_pus_and_nodes() {
    let v: serde_json::Value = serde_json::from_str(&stdout_of(&[
        "topo",
        "--machine",
        "package:2 numa:2 core:2 pu:2",
        "--json",
    ]))
    .unwrap();
    assert_eq!(v["summary"]["pus"], 16);
    assert_eq!(v["summary"]["numa_nodes"], 4);
    assert_eq!(v["nodes"][3]["pus"], serde_json::json!([12, 13, 14, 15]));
}

#[test]
fn given_distances_replace_the_assumed_ones() {
    let v: serde_json::Value = serde_json::from_str(&stdout_of(&[
        "topo",
        "--machine",
        "package:2 numa:1 core:2",
        "--distances",
        "10:21",
        "--json",
    ]))
    .unwrap();
    assert_eq!(
        v["distances"]["matrix"],
        serde_json::json!([[10, 21], [21, 10]])
    );
    assert_eq!(v["distances"]["source"], "given");
    assert!((v["numa_factor"].as_f64().unwrap() - 2.1).abs() < 1e-9);
}

#[test]
fn the_live_machine_has_at_least_one_pu_and_node() {
    let v: serde_json::Value = serde_json::from_str(&stdout_of(&["topo", "--json"])).unwrap();
    assert!(v["summary"]["pus"].as_u64().unwrap() >= 1);
    assert!(v["summary"]["numa_nodes"].as_u64().unwrap() >= 1);
}

#[test]
fn bad_specs_exit_2_with_one_line() {
    assert_bad_input(&tdmap(&["topo", "--machine", "package:x"]), "synthetic");
    assert_bad_input(
        &tdmap(&["topo", "--machine", "no-such-preset"]),
        "xeon-x7550-4s",
    );
    assert_bad_input(
        &tdmap(&["topo", "--machine", "/nonexistent/m.xml"]),
        "no such file",
    );
    let bad = std::env::temp_dir().join(format!("tdmap-corrupt-{}.xml", std::process::id()));
    std::fs::write(&bad, "<?xml version=\"1.0\"?><topology><object type=").unwrap();
    assert_bad_input(&tdmap(&["topo", "--machine", bad.to_str().unwrap()]), "XML");
    std::fs::remove_file(&bad).unwrap();
}

#[test]
fn inconsistent_distances_exit_2_with_one_line() {
    let m = "package:2 numa:1 core:2";
    assert_bad_input(
        &tdmap(&["topo", "-m", m, "--distances", "10,20;20"]),
        "not square",
    );
    assert_bad_input(
        &tdmap(&["topo", "-m", m, "--distances", "10,-20;-20,10"]),
        "positive",
    );
    assert_bad_input(
        &tdmap(&["topo", "-m", m, "--distances", "10,5;5,10"]),
        "minimum",
    );
}

/// Regression: renaming one attribute of the Machine object made hwloc 2.9 die of SIGSEGV
/// inside tdmap (no message, status 139). hwloc now reads the file in a child first.
#[test]
fn an_xml_file_that_crashes_hwloc_exits_2_with_one_line() {
    let f = test_path("fixtures/damaged/crashes-hwloc-2.9.xml");
    let out = tdmap(&["topo", "--machine", f.to_str().unwrap()]);
    assert_bad_input(&out, "(it crashed hwloc 2.9; check the file with lstopo");
    assert_bad_input(&out, "hwloc could not read");
    // The same file through another command that loads a machine.
    let dir = std::env::temp_dir().join(format!("tdmap-topo-crash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let matrix = dir.join("m.csv");
    std::fs::write(&matrix, "0,1\n1,0\n").unwrap();
    let out = tdmap(&[
        "map",
        "--machine",
        f.to_str().unwrap(),
        "--matrix",
        matrix.to_str().unwrap(),
    ]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_bad_input(&out, "hwloc could not read");
}

#[test]
fn an_xml_3_file_says_hwloc_2_cannot_read_it() {
    let dir = std::env::temp_dir().join(format!("tdmap-topo-xml3-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("master.xml");
    let v2 = std::fs::read_to_string(test_path("fixtures/machines/vm-1n2c.xml")).unwrap();
    let v3 = v2.replace("<topology version=\"2.0\">", "<topology version=\"3.0\">");
    assert_ne!(v2, v3);
    std::fs::write(&f, v3).unwrap();
    let out = tdmap(&["topo", "--machine", f.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_bad_input(&out, "XML format 3.0 of hwloc 3");
}

/// Regression: these ran at 100 % CPU for over a minute inside hwloc. The limits are
/// checked before hwloc is called, so they fail at once.
#[test]
fn synthetic_machines_over_the_limits_exit_2() {
    for spec in ["core:1000 pu:1000", "numa:1000000", "pu:4294967295"] {
        let out = tdmap(&["topo", "--machine", spec]);
        assert_bad_input(&out, "limits are 16384 PUs in total and 1024 children");
    }
}

/// A trace or model file whose recorded machine is over the limits is refused, naming the file,
/// instead of hanging (or of mapping onto this machine instead).
#[test]
fn a_trace_recording_a_huge_machine_exits_2() {
    let dir = std::env::temp_dir().join(format!("tdmap-topo-model-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("model.json");
    // A trace recorded on the huge machine: `map --trace` reads its machine the way
    // `map --model` does (MachineArgs::load_or_recorded).
    let t = dir.join("huge.trace");
    let mut h = tdmap_trace::Header::new(vec!["p".into()], "core:1000 pu:1000");
    h.threads = 2;
    let w = tdmap_trace::Writer::create(&t, h).unwrap();
    for thread in 0..2 {
        let a = tdmap_trace::Access {
            thread,
            addr: 0x1000,
            size: 8,
            write: false,
            time: u64::from(thread),
        };
        w.append_accesses(thread, &[a]).unwrap();
    }
    w.finish(tdmap_trace::TraceStatus::Complete).unwrap();
    let out = tdmap(&["map", "--trace", t.to_str().unwrap()]);
    let _ = std::fs::remove_file(&f);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_bad_input(&out, "huge.trace: the machine it records");
    assert_bad_input(&out, "1000000 PUs");
}

/// Regression: a refused matrix suggested "rows separated by ';'", which a shell cuts at
/// the ';' unless quoted. The suggestion is sized for the machine and quoted; what it
/// suggests is accepted.
#[test]
fn a_refused_distance_matrix_suggests_one_that_works() {
    let m = "package:2 numa:1 core:2";
    let out = tdmap(&["topo", "-m", m, "--distances", "10,20"]);
    assert_bad_input(&out, "--distances \"10,20;20,10\"");
    let err = String::from_utf8_lossy(&out.stderr);
    let suggested = err.rsplit_once("--distances \"").unwrap().1.trim_end();
    let suggested = suggested.trim_end_matches('"');
    let out = tdmap(&["topo", "-m", m, "--distances", suggested, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = tdmap(&["topo", "-m", m, "--distances", "10:20", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
