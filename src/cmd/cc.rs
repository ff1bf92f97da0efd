//! The compiler fronts: `tdmap cc` and `tdmap c++` (clang-16), `tdmap gcc`, `tdmap g++`
//! and `tdmap gfortran` (gcc 12), wrappers like scan-build's that build a program for
//! exact tracing. clang gets SanitizerCoverage's load/store callbacks; gcc gets its
//! ThreadSanitizer instrumentation at compile time only. Both link the tdmap runtime
//! (crates/rt, found next to the `tdmap` binary or in an installed prefix's `lib/`), which defines those entry points,
//! instead of a sanitizer runtime, so a gcc build keeps libgomp.

use crate::exit::input;
use anyhow::{Context, Result};
use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// How to pass `--help` and other flags through, shown in every front's help.
const PASS_THROUGH: &str = "Every argument goes to the compiler unchanged, except `--help`, \
which shows this help. After a leading `--` nothing is looked at: `tdmap cc -- --help` \
shows clang's help, `tdmap gcc -- --help` gcc's.

Legacy code builds as gcc builds it: implicit int, implicit function declarations, int to \
pointer conversions, `register` in C++17 and tentative definitions in several files \
(-fcommon) are accepted with a warning. The user's own flags come after tdmap's and win \
(`-Werror=implicit-int`, `-fno-common`); with `-Werror`, tdmap adds no -Wno-error flag.

Environment: TDMAP_CC, TDMAP_CXX, TDMAP_GCC, TDMAP_GXX, TDMAP_FC name the compilers; \
TDMAP_RT_LIB the runtime archive (default: libtdmap_rt.a beside tdmap, or in PREFIX/lib \
when installed in PREFIX/bin).";

/// Arguments of a compiler front: everything is passed on to the compiler.
#[derive(Debug, clap::Args)]
#[command(
    disable_help_flag = true,
    disable_version_flag = true,
    after_help = PASS_THROUGH
)]
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
/// Arguments that stop the compiler before linking, or make it only print something
/// (`tdmap cc -- --version`), so that no runtime is needed.
const NO_LINK: &[&str] = &[
    "-c",
    "-S",
    "-E",
    "-M",
    "-MM",
    "-fsyntax-only",
    "--version",
    "-dumpversion",
    "-dumpmachine",
    "--help",
];

/// Flags that turn clang-16's legacy-code errors back into gcc's warnings. They go
/// before the user's flags, so a later `-Werror=implicit-int` still wins; none is added
/// when the user asks for `-Werror`.
const CLANG_LEGACY: &[&str] = &[
    "-Wno-error=implicit-int",
    "-Wno-error=implicit-function-declaration",
    "-Wno-error=int-conversion",
    "-Wno-error=incompatible-function-pointer-types",
    "-Wno-error=register",
];
/// Tentative definitions in several files link, as before gcc 10 and clang 11 (C only:
/// C++ has no tentative definitions and warns about the flag nowhere).
const COMMON: &str = "-fcommon";

/// gcc spec that passes `-fsanitize=thread` to the compilers proper (cc1, cc1plus,
/// f951) only: the driver never sees it, so it links neither libtsan nor its preinit
/// object, and the tdmap runtime provides the `__tsan_*` entry points instead.
const TSAN_SPECS: &str = "*cc1_options:\n+ -fsanitize=thread\n\n";

/// Which compiler a front wraps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// `tdmap cc`: clang-16 (or $TDMAP_CC).
    C,
    /// `tdmap c++`: clang++-16 (or $TDMAP_CXX).
    Cxx,
    /// `tdmap gcc`: gcc (or $TDMAP_GCC).
    Gcc,
    /// `tdmap g++`: g++ (or $TDMAP_GXX).
    Gxx,
    /// `tdmap gfortran`: gfortran (or $TDMAP_FC).
    Gfortran,
}

impl Lang {
    /// The front's subcommand name.
    fn front(self) -> &'static str {
        match self {
            Lang::C => "cc",
            Lang::Cxx => "c++",
            Lang::Gcc => "gcc",
            Lang::Gxx => "g++",
            Lang::Gfortran => "gfortran",
        }
    }

    fn is_gcc(self) -> bool {
        matches!(self, Lang::Gcc | Lang::Gxx | Lang::Gfortran)
    }
}

/// Runs the wrapped compiler and returns its exit code.
pub fn run(args: Args, lang: Lang) -> Result<i32> {
    // clap drops the `--` right after the front's name; look for it where the user put it.
    let raw: Vec<OsString> = std::env::args_os().collect();
    let verbatim = raw
        .iter()
        .position(|a| a == lang.front())
        .and_then(|i| raw.get(i + 1))
        .is_some_and(|a| a == "--");
    let args = args.args;
    if !verbatim && args.iter().any(|a| a == "--help") {
        return help(lang);
    }
    if args.is_empty() {
        return Err(input(format!(
            "no compiler arguments; use it like the compiler, e.g. `tdmap {} -O2 -o prog prog.c` (see `tdmap {} --help`)",
            lang.front(),
            lang.front()
        )));
    }
    if lang.is_gcc() && args.iter().any(|a| asks_for_tsan(a)) {
        return Err(input(format!(
            "tdmap {} adds ThreadSanitizer's hooks itself and links tdmap's runtime instead of libtsan; drop -fsanitize=thread",
            lang.front()
        )));
    }
    let compiler = compiler(lang)?;
    let mut cmd = Command::new(&compiler);
    // Kept alive until the compiler is done with it.
    let specs = lang.is_gcc().then(SpecsFile::create).transpose()?;
    if let Some(SpecsFile(path)) = &specs {
        cmd.arg(format!("-specs={}", path.display()));
    }
    cmd.args(legacy(lang, &args)).args(&args);
    if !lang.is_gcc() {
        cmd.arg(COVERAGE);
    }
    if links(&args) {
        if !lang.is_gcc() {
            cmd.arg("-fno-sanitize-link-runtime");
        }
        cmd.arg(runtime_lib()?).args(RT_LIBS);
    }
    let status = cmd
        .status()
        .with_context(|| format!("cannot run {}", compiler.display()))?;
    Ok(status.code().unwrap_or(crate::exit::FAILED))
}

/// Prints the front's own help (its clap definition), not the compiler's.
fn help(lang: Lang) -> Result<i32> {
    use clap::CommandFactory;
    let mut cli = super::Cli::command();
    let sub = cli
        .find_subcommand_mut(lang.front())
        .context("front without a subcommand")?;
    let text = sub
        .clone()
        .bin_name(format!("tdmap {}", lang.front()))
        .render_long_help();
    let _ = write!(std::io::stdout(), "{text}");
    Ok(0)
}

/// tdmap's legacy-code flags for this front, given the user's arguments.
fn legacy(lang: Lang, args: &[OsString]) -> Vec<&'static str> {
    let mut flags = Vec::new();
    if matches!(lang, Lang::C | Lang::Cxx) && !args.iter().any(|a| a == "-Werror") {
        flags.extend_from_slice(CLANG_LEGACY);
    }
    if matches!(lang, Lang::C | Lang::Gcc) {
        flags.push(COMMON);
    }
    flags
}

/// The gcc spec file of [`TSAN_SPECS`], written for one compiler run and removed after.
struct SpecsFile(PathBuf);

impl SpecsFile {
    fn create() -> Result<Self> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!("tdmap-tsan-{}-{nanos}.specs", std::process::id());
        let path = std::env::temp_dir().join(name);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .with_context(|| format!("cannot create the gcc spec file {}", path.display()))?;
        f.write_all(TSAN_SPECS.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(SpecsFile(path))
    }
}

impl Drop for SpecsFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `-fsanitize=...,thread,...`: the driver would then link libtsan, whose definitions of
/// the `__tsan_*` entry points and interceptors clash with the runtime's.
fn asks_for_tsan(arg: &OsStr) -> bool {
    arg.to_str()
        .and_then(|a| a.strip_prefix("-fsanitize="))
        .is_some_and(|list| list.split(',').any(|s| s == "thread"))
}

fn links(args: &[OsString]) -> bool {
    !args
        .iter()
        .any(|a| NO_LINK.iter().any(|n| a == OsStr::new(n)))
}

/// The compiler to wrap: the front's variable, else its usual names on PATH.
fn compiler(lang: Lang) -> Result<PathBuf> {
    let (var, names): (_, &[&str]) = match lang {
        Lang::C => ("TDMAP_CC", &["clang-16", "clang"]),
        Lang::Cxx => ("TDMAP_CXX", &["clang++-16", "clang++"]),
        Lang::Gcc => ("TDMAP_GCC", &["gcc-12", "gcc"]),
        Lang::Gxx => ("TDMAP_GXX", &["g++-12", "g++"]),
        Lang::Gfortran => ("TDMAP_FC", &["gfortran-12", "gfortran"]),
    };
    if let Some(c) = std::env::var_os(var).filter(|c| !c.is_empty()) {
        return Ok(PathBuf::from(c));
    }
    names
        .iter()
        .find_map(|n| find_in_path(OsStr::new(n)))
        .ok_or_else(|| {
            let fix = if lang.is_gcc() {
                "install it (apt-get install gcc g++ gfortran)"
            } else {
                "install it with scripts/setup.sh"
            };
            input(format!(
                "{} not found on PATH; {fix}, or set {var} to one",
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
    let places = library_places(dir);
    if let Some(lib) = places.iter().map(|d| d.join(name)).find(|l| l.is_file()) {
        return Ok(lib);
    }
    let missing: Vec<String> = places
        .iter()
        .map(|d| d.join(name).display().to_string())
        .collect();
    Err(input(format!(
        "{} is missing; build it with `cargo build -p {package}` (same profile as tdmap), reinstall with `make install`, or set {var}",
        missing.join(" and ")
    )))
}

/// Where tdmap's libraries are, given the folder of the tdmap binary: beside it in a
/// cargo build (`target/release/`), in `PREFIX/lib` when installed by `make install` in
/// `PREFIX/bin`. Relative to the binary, so that an installed tree works wherever it is
/// put.
fn library_places(bin: &Path) -> Vec<PathBuf> {
    let mut places = vec![bin.to_path_buf()];
    if let Some(prefix) = bin.parent().filter(|_| bin.ends_with("bin")) {
        places.push(prefix.join("lib"));
    }
    places
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
    fn legacy_flags_yield_to_werror_and_fit_each_language() {
        let os = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        let plain = legacy(Lang::C, &os(&["-O2", "x.c"]));
        assert!(plain.contains(&"-Wno-error=implicit-int") && plain.contains(&COMMON));
        assert_eq!(legacy(Lang::C, &os(&["-Werror", "x.c"])), [COMMON]);
        assert!(!legacy(Lang::Cxx, &os(&["x.cpp"])).contains(&COMMON));
        assert_eq!(legacy(Lang::Gcc, &os(&["x.c"])), [COMMON]);
        assert!(legacy(Lang::Gfortran, &os(&["x.f90"])).is_empty());
    }

    #[test]
    fn a_users_fsanitize_thread_is_recognised_in_any_list() {
        assert!(asks_for_tsan(OsStr::new("-fsanitize=thread")));
        assert!(asks_for_tsan(OsStr::new("-fsanitize=undefined,thread")));
        assert!(!asks_for_tsan(OsStr::new("-fsanitize=address")));
        assert!(!asks_for_tsan(OsStr::new("-fno-sanitize=thread")));
    }

    #[test]
    fn an_installed_tdmap_looks_in_its_prefix_lib() {
        assert_eq!(
            library_places(Path::new("/opt/t/bin")),
            [PathBuf::from("/opt/t/bin"), PathBuf::from("/opt/t/lib")]
        );
        assert_eq!(
            library_places(Path::new("/w/target/release")),
            [PathBuf::from("/w/target/release")]
        );
    }

    #[test]
    fn path_lookup_finds_sh_and_rejects_missing() {
        assert!(find_in_path(OsStr::new("sh")).is_some());
        assert!(find_in_path(OsStr::new("./definitely-not-here-tdmap")).is_none());
    }
}
