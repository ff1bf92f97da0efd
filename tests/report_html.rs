//! `tdmap report` end to end (issue 22 item 5): the page made from the fixture trace's
//! analysis, simulation and mapping on xeon-x7550-4s and a committed run report
//! (`tests/fixtures/reports/run-pairs-8t.json`, written by `tdmap run --json --report FILE
//! -- workloads/build/gcc/pairs 8 4096 600` on a one-node machine) is loaded in Debian's
//! headless Chromium (scripts/setup.sh installs it): no console message, no script
//! error, every section in the DOM, and a screenshot at
//! target/tmp/report-tests/report.png. Bad inputs exit 2 with one line.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const TDMAP: &str = env!("CARGO_BIN_EXE_tdmap");
const TRACE: &str = "tests/fixtures/traces/pairs-8t.trace";
const RUN: &str = "tests/fixtures/reports/run-pairs-8t.json";
const MACHINE: &str = "xeon-x7550-4s";

fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("report-tests")
        .join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn tdmap(args: &[&str]) -> Output {
    Command::new(TDMAP).args(args).output().unwrap()
}

/// Runs tdmap and writes its stdout to `out`.
fn to_file(args: &[&str], out: &Path) {
    let o = tdmap(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::write(out, &o.stdout).unwrap();
}

/// The four inputs: analysis, simulation, mapping (all of the fixture trace) and run.
fn inputs(dir: &Path) -> Vec<PathBuf> {
    let (a, s, m) = (dir.join("a.json"), dir.join("s.json"), dir.join("m.json"));
    to_file(&["analyze", TRACE, "--machine", MACHINE, "--json"], &a);
    to_file(&["sim", TRACE, "--machine", MACHINE, "--json"], &s);
    let map = [
        "map",
        "--trace",
        TRACE,
        "--machine",
        MACHINE,
        "--format",
        "json",
    ];
    to_file(&map, &m);
    vec![a, s, m, PathBuf::from(RUN)]
}

/// Loads `page` in headless Chromium: its DOM after the scripts ran, and the console
/// lines (messages and uncaught errors) Chromium logged. Writes a screenshot at `shot`.
fn chromium(page: &Path, shot: &Path) -> (String, Vec<String>) {
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    // A profile of its own, so that no other Chromium (or test run) holds it.
    let profile = page.with_extension("profile");
    let o = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
        ])
        .args(["--v=0", "--window-size=1280,6000"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", shot.display()))
        .args(["--dump-dom", &url])
        .output()
        .expect("chromium: run scripts/setup.sh (it installs Debian's chromium)");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let console = String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .map(str::to_string)
        .collect();
    (String::from_utf8_lossy(&o.stdout).into_owned(), console)
}

#[test]
fn the_page_loads_in_chromium_with_every_section_and_no_console_error() {
    let dir = scratch("full");
    let page = dir.join("report.html");
    let mut args: Vec<String> = vec!["report".into(), "--json".into(), "-o".into()];
    args.push(page.display().to_string());
    args.extend(inputs(&dir).iter().map(|p| p.display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = tdmap(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let said: Value = serde_json::from_slice(&o.stdout).unwrap();
    let sections = ["machine", "sharing", "exclusivity", "simulated", "timeline"];
    assert_eq!(said["sections"], serde_json::json!(sections));
    assert_eq!(said["inputs"].as_array().unwrap().len(), 4);

    let html = std::fs::read_to_string(&page).unwrap();
    let external = ["src=\"http", "href=\"http", "url(http", "@import"];
    assert!(
        !external.iter().any(|e| html.contains(e)),
        "the page needs the network"
    );

    let shot = dir.parent().unwrap().join("report.png");
    let (dom, console) = chromium(&page, &shot);
    assert!(console.is_empty(), "console: {console:#?}");
    assert!(
        dom.contains("data-ready=\"yes\""),
        "the page's script did not run to its end"
    );
    assert!(
        dom.contains("data-sections=\"5\""),
        "the script counted another number of sections"
    );
    for id in sections.iter().chain(&[
        "machine-boxes",
        "heatmap-trace",
        "heatmap-run",
        "exclusivity-trace-4096",
        "top-pairs-trace",
        "sim-chart",
        "timeline-chart",
        "timeline-migrations",
    ]) {
        assert!(dom.contains(&format!("id=\"{id}\"")), "no #{id} in the DOM");
    }
    // Each of the mapping's 8 threads drawn once, in its PU.
    let boxes =
        &dom[dom.find("id=\"machine-boxes\"").unwrap()..dom.find("id=\"sharing\"").unwrap()];
    assert_eq!(boxes.matches("class=\"thread\"").count(), 8);
    assert!(dom.contains("SIMULATED"));
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.len() > 10_000 && png.starts_with(b"\x89PNG"),
        "screenshot {}",
        shot.display()
    );
}

#[test]
fn a_run_report_alone_makes_a_page_with_its_timeline() {
    let dir = scratch("run");
    let page = dir.join("r.html");
    let o = tdmap(&["report", RUN, "-o", page.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let said: Value = serde_json::from_slice(&o.stdout).unwrap();
    let want = serde_json::json!(["machine", "sharing", "exclusivity", "timeline"]);
    assert_eq!(said["sections"], want);
    let html = std::fs::read_to_string(&page).unwrap();
    // The fixture's periods, one bar each in each of the three charts, and the
    // exclusivity histogram's 11.
    let run: Value = serde_json::from_str(&std::fs::read_to_string(RUN).unwrap()).unwrap();
    let periods = run["timeline"].as_array().unwrap().len();
    assert!(periods >= 5, "the fixture has {periods} periods");
    assert_eq!(
        html.matches("<rect class=\"bar\"").count(),
        periods * 3 + 11
    );
}

fn one_line_exit_2(o: &Output, has: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("tdmap: ") && err.contains(has), "{err}");
}

#[test]
fn bad_inputs_exit_2_with_one_line() {
    let dir = scratch("bad");
    let out = dir.join("x.html");
    let out = out.to_str().unwrap();
    let png = dir.join("p.json");
    std::fs::write(&png, "{\"format\": \"tdmap-model\", \"version\": 1}").unwrap();
    one_line_exit_2(
        &tdmap(&["report", png.to_str().unwrap(), "-o", out]),
        "not one tdmap report shows",
    );
    let text = dir.join("t.txt");
    std::fs::write(&text, "hello").unwrap();
    one_line_exit_2(
        &tdmap(&["report", text.to_str().unwrap(), "-o", out]),
        "no tdmap \"format\" header",
    );
    one_line_exit_2(
        &tdmap(&["report", RUN, RUN, "-o", out]),
        "a second tdmap-run-report",
    );
    one_line_exit_2(&tdmap(&["report", RUN, "-o", RUN]), RUN);
    one_line_exit_2(
        &tdmap(&["report", "/nonexistent.json", "-o", out]),
        "/nonexistent.json",
    );
    let nowhere = "/nonexistent/r.html";
    one_line_exit_2(&tdmap(&["report", RUN, "-o", nowhere]), "no such folder");
    assert!(!Path::new(out).exists());
}
