//! The documents made from the command line's clap definition (`tdmap generate`): the
//! CLI reference docs/cli.md must match it (`BLESS=1` rewrites the file), the man pages
//! and completions must cover every command, and the compiler fronts must show tdmap's
//! own help while passing `--` arguments to the compiler (issue 22 item 8).

mod common;

use common::tdmap;
use std::path::PathBuf;

fn stdout(args: &[&str]) -> String {
    let out = tdmap(args);
    assert!(
        out.status.success(),
        "tdmap {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// docs/cli.md is what `tdmap generate markdown` prints: a flag added or reworded without
/// regenerating the file (`make docs`, or `BLESS=1 cargo test --test docs_cli`) fails here.
#[test]
fn cli_reference_is_fresh() {
    let actual = stdout(&["generate", "markdown"]);
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/cli.md");
    if std::env::var_os("BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    if expected != actual {
        let line = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .map_or(expected.lines().count().min(actual.lines().count()), |i| i);
        panic!(
            "docs/cli.md is stale from line {}: run `make docs` (or BLESS=1 cargo test --test docs_cli)\n--- in the file: {:?}\n--- generated:   {:?}",
            line + 1,
            expected.lines().nth(line),
            actual.lines().nth(line)
        );
    }
}

/// Every command that `tdmap --help` lists has its section, with its own flags.
#[test]
fn cli_reference_covers_every_command() {
    let md = stdout(&["generate", "markdown"]);
    let help = stdout(&["--help"]);
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 12, "{commands:?}");
    for c in commands {
        assert!(
            md.contains(&format!("\n## tdmap {c}\n")),
            "no section for {c}"
        );
    }
    assert!(md.contains("--matrix <"), "tdmap map's --matrix is missing");
    assert!(
        !md.contains("## tdmap generate"),
        "the hidden command is documented"
    );
}

#[test]
fn man_pages_and_completions_cover_every_command() {
    let man = scratch("gen-man");
    stdout(&["generate", "man", man.to_str().unwrap()]);
    let page = |name: &str| std::fs::read_to_string(man.join(name)).unwrap_or_default();
    assert!(
        page("tdmap.1").contains(".TH tdmap 1"),
        "{}",
        page("tdmap.1")
    );
    for sub in [
        "topo", "map", "run", "trace", "analyze", "sim", "comm", "cc", "gfortran",
    ] {
        let p = page(&format!("tdmap-{sub}.1"));
        assert!(
            p.contains(&format!(".TH tdmap-{sub} 1")),
            "tdmap-{sub}.1: {p:.200}"
        );
    }
    assert!(page("tdmap-map.1").contains("matrix"));
    assert!(!man.join("tdmap-generate.1").exists());

    let comp = scratch("gen-completions");
    stdout(&["generate", "completions", comp.to_str().unwrap()]);
    let file = |name: &str| std::fs::read_to_string(comp.join(name)).unwrap_or_default();
    for (name, needle) in [
        ("tdmap.bash", "complete -F _tdmap"),
        ("_tdmap", "#compdef tdmap"),
        ("tdmap.fish", "complete -c tdmap"),
    ] {
        let text = file(name);
        assert!(text.contains(needle), "{name}: {text:.200}");
        assert!(
            text.contains("trace-check") && text.contains("--matrix"),
            "{name}"
        );
    }
}

/// `tdmap cc --help` printed clang's help (issue 22); each front now shows its own,
/// from its clap definition, and says how to reach the compiler's.
#[test]
fn every_front_shows_tdmaps_own_help() {
    for front in ["cc", "c++", "gcc", "g++", "gfortran"] {
        let help = stdout(&[front, "--help"]).replace('\n', " ");
        assert!(
            help.contains(&format!("Usage: tdmap {front}")),
            "{front}: {help:.300}"
        );
        assert!(help.contains("After a leading `--`"), "{front}");
        assert!(
            !help.contains("OVERVIEW: clang"),
            "{front} printed clang's help"
        );
        assert!(
            !help.contains("Usage: gcc [options]"),
            "{front} printed gcc's help"
        );
    }
}

/// After a leading `--` nothing is tdmap's: `--version` reaches the compiler.
#[test]
fn a_leading_double_dash_passes_everything_to_the_compiler() {
    let clang = stdout(&["cc", "--", "--version"]);
    assert!(clang.contains("clang version"), "{clang}");
    let gcc = stdout(&["gcc", "--", "--version"]);
    assert!(gcc.contains("Free Software Foundation"), "{gcc}");
}
