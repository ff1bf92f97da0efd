//! `tdmap cc` and `tdmap c++`: compiler wrappers (like scan-build's) that build a program
//! for exact tracing: clang's SanitizerCoverage load/store callbacks plus the tdmap runtime
//! (crates/rt), found next to the `tdmap` binary.

use crate::exit::input;
use anyhow::{Context, Result};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Arguments of `tdmap cc` / `tdmap c++`: everything is passed on to the compiler.
#[derive(Debug, clap::Args)]
#[command(disable_help_flag = true, disable_version_flag = true)]
pub struct Args {
    /// Compiler arguments, unchanged (e.g. `-O2 -o prog prog.c -lpthread`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    args: Vec<OsString>,
}

/// Instrumentation flags. `trace-loads,trace-stores` alone inserts nothing in clang-16;
/// `edge` turns them on, and without a coverage type it adds no edge callbacks.
const COVERAGE: &str = "-fsanitize-coverage=edge,trace-loads,trace-stores";
/// System libraries the Rust staticlib needs (`--print native-static-libs`), and
/// `--gc-sections`: the archive holds all of tdmap-sys, whose Scotch bindings are
/// compiled in when Cargo unifies features with the `tdmap` binary's build (`cargo build
/// --workspace`); they are never called from the runtime and must not be linked.
const RT_LIBS: &[&str] = &[
    "-Wl,--gc-sections",
    "-lgcc_s",
    "-lutil",
    "-lrt",
    "-lpthread",
    "-lm",
    "-ldl",
    "-lc",
];
/// Arguments that stop the compiler before linking.
const NO_LINK: &[&str] = &["-c", "-S", "-E", "-M", "-MM", "-fsyntax-only"];

/// Which language driver to wrap.
#[derive(Debug, Clone, Copy)]
pub enum Lang {
    /// `tdmap cc`: clang-16 (or $TDMAP_CC).
    C,
    /// `tdmap c++`: clang++-16 (or $TDMAP_CXX).
    Cxx,
}

/// Runs the wrapped compiler and returns its exit code.
pub fn run(args: Args, lang: Lang) -> Result<i32> {
    if args.args.is_empty() {
        return Err(input(
            "no compiler arguments; use it like clang, e.g. `tdmap cc -O2 -o prog prog.c`",
        ));
    }
    let compiler = compiler(lang)?;
    let mut cmd = Command::new(&compiler);
    cmd.args(&args.args).arg(COVERAGE);
    if links(&args.args) {
        cmd.arg("-fno-sanitize-link-runtime")
            .arg(runtime_lib()?)
            .args(RT_LIBS);
    }
    let status = cmd
        .status()
        .with_context(|| format!("cannot run {}", compiler.display()))?;
    Ok(status.code().unwrap_or(crate::exit::FAILED))
}

fn links(args: &[OsString]) -> bool {
    !args
        .iter()
        .any(|a| NO_LINK.iter().any(|n| a == OsStr::new(n)))
}

/// The compiler to wrap: $TDMAP_CC/$TDMAP_CXX, else clang-16, else clang.
fn compiler(lang: Lang) -> Result<PathBuf> {
    let (var, names) = match lang {
        Lang::C => ("TDMAP_CC", ["clang-16", "clang"]),
        Lang::Cxx => ("TDMAP_CXX", ["clang++-16", "clang++"]),
    };
    if let Some(c) = std::env::var_os(var).filter(|c| !c.is_empty()) {
        return Ok(PathBuf::from(c));
    }
    names
        .iter()
        .find_map(|n| find_in_path(OsStr::new(n)))
        .ok_or_else(|| {
            input(format!(
                "{} not found on PATH; install it with scripts/setup.sh, or set {var} to a clang",
                names[0]
            ))
        })
}

/// Looks a program name up the way a shell would; a name with a slash is taken as a path.
pub fn find_in_path(name: &OsStr) -> Option<PathBuf> {
    let p = Path::new(name);
    if p.components().count() > 1 {
        return p.is_file().then(|| p.to_path_buf());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|c| c.is_file())
}

/// The runtime archive: $TDMAP_RT_LIB, else libtdmap_rt.a beside the tdmap binary.
fn runtime_lib() -> Result<PathBuf> {
    runtime_file("TDMAP_RT_LIB", "libtdmap_rt.a", "tdmap-rt")
}

/// A library built from this workspace's crate `package` (the runtime, crates/rt, or
/// libmai, crates/mai): `$var` if set, else `name` beside the tdmap binary; missing, it
/// is an input error naming both fixes.
pub(crate) fn runtime_file(var: &str, name: &str, package: &str) -> Result<PathBuf> {
    if let Some(p) = std::env::var_os(var).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(input(format!(
                "{var}={} is not a file; point it at {name} (`cargo build -p {package}` builds it)",
                p.display()
            )))
        };
    }
    let exe = std::env::current_exe().context("cannot locate the tdmap binary")?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    let lib = dir.join(name);
    if lib.is_file() {
        return Ok(lib);
    }
    Err(input(format!(
        "{} is missing; build it with `cargo build -p {package}` (same profile as tdmap) or set {var}",
        lib.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compile_only_flags_skip_the_runtime() {
        let os = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        assert!(links(&os(&["-O2", "-o", "x", "x.c"])));
        assert!(!links(&os(&["-O2", "-c", "x.c"])));
        assert!(!links(&os(&["-E", "x.c"])));
    }

    #[test]
    fn path_lookup_finds_sh_and_rejects_missing() {
        assert!(find_in_path(OsStr::new("sh")).is_some());
        assert!(find_in_path(OsStr::new("./definitely-not-here-tdmap")).is_none());
    }
}
