//! Exit codes and error reporting: 0 success, 1 the work failed, 2 bad input or usage.

use std::fmt::Display;

/// Exit code for success.
pub const OK: i32 = 0;
/// Exit code when the program ran and failed.
pub const FAILED: i32 = 1;
/// Exit code for bad input: a malformed file or spec, a missing program, no permission.
pub const BAD_INPUT: i32 = 2;

/// Marks an error as the user's input being wrong, so that it exits with code 2.
#[derive(Debug)]
pub struct InputError(pub String);

impl Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InputError {}

/// Wraps any error as bad input (exit code 2), keeping its one-line message.
pub fn input(err: impl Display) -> anyhow::Error {
    anyhow::Error::new(InputError(err.to_string()))
}

/// Prints `err` on one line to stderr and returns the exit code it deserves.
pub fn report(err: &anyhow::Error) -> i32 {
    if is_broken_pipe(err) {
        return OK;
    }
    eprintln!("tdmap: {}", render(err));
    if err.chain().any(|e| e.is::<InputError>()) {
        BAD_INPUT
    } else {
        FAILED
    }
}

/// An error and its causes on one line, as [`report`] prints it (without `tdmap: `).
fn render(err: &anyhow::Error) -> String {
    format!("{err:#}").replace('\n', " ")
}

/// Handles a command-line parse error: help and version go to stdout (exit 0), help for
/// a bare `tdmap` to stderr (exit 2); a usage error becomes one `tdmap: ` line naming
/// the bad word and the help to read (exit 2).
pub fn usage(err: &clap::Error) -> i32 {
    use clap::error::ErrorKind;
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = err.print();
            return OK;
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = err.print();
            return BAD_INPUT;
        }
        _ => {}
    }
    eprintln!("tdmap: {}", usage_line(&err.render().to_string()));
    BAD_INPUT
}

/// clap's error text (message, blank line, `Usage: tdmap CMD [OPTIONS]...`, hint) as one
/// line: the message, then which `--help` to read.
fn usage_line(text: &str) -> String {
    let msg: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.is_empty() && !l.starts_with("Usage:"))
        .collect();
    let msg = msg.join(" ");
    let msg = msg.strip_prefix("error: ").unwrap_or(&msg);
    let cmd: Vec<&str> = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Usage: "))
        .unwrap_or("tdmap")
        .split_whitespace()
        .take_while(|w| !w.starts_with(['[', '<', '-']))
        .collect();
    format!("{msg}; see '{} --help'", cmd.join(" "))
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::render;
    use anyhow::Context;
    use std::io::Error as Io;
    use std::path::Path;

    /// Renders `err` under a context as the binary prints it, and checks that `os` (an
    /// OS error's text) appears exactly once and that no link of the chain repeats the
    /// link below it.
    fn prints_once(err: impl std::error::Error + Send + Sync + 'static, os: &str) -> String {
        let err = anyhow::Error::new(err).context("while testing");
        let line = render(&err);
        assert_eq!(
            line.matches(os).count(),
            1,
            "{os:?} not exactly once in {line:?}"
        );
        let links: Vec<String> = err.chain().map(|e| e.to_string()).collect();
        for w in links.windows(2) {
            assert!(
                !w[0].contains(&w[1]),
                "{:?} repeats its source {:?}",
                w[0],
                w[1]
            );
        }
        line
    }

    fn prints_once_anyhow(err: anyhow::Error, os: &str) {
        let line = render(&err);
        assert_eq!(
            line.matches(os).count(),
            1,
            "{os:?} not exactly once in {line:?}"
        );
    }

    /// Regression: SysError and TraceError displayed their io::Error and also returned it
    /// from source(), so `tdmap run` printed "move_pages failed: Permission denied (os
    /// error 13): Permission denied (os error 13)" and a full disk during `tdmap trace`
    /// printed "No space left on device (os error 28)" twice.
    #[test]
    fn each_crates_os_errors_print_once() {
        let eacces = Io::from_raw_os_error(13).to_string();
        let enospc = Io::from_raw_os_error(28).to_string();
        let enoent = Io::from_raw_os_error(2).to_string();
        let sys = tdmap_sys::SysError::Syscall {
            call: "move_pages",
            err: Io::from_raw_os_error(13),
        };
        let line = prints_once(sys, &eacces);
        assert_eq!(line, format!("while testing: move_pages failed: {eacces}"));
        let root = tdmap_sys::FsRoot::new("/nonexistent-tdmap-root");
        prints_once(root.read("/proc/self/status").unwrap_err(), &enoent);
        let trace = tdmap_trace::TraceError::Io {
            path: "t.trc".into(),
            err: Io::from_raw_os_error(28),
        };
        prints_once(trace, &enospc);
        let missing = Path::new("/nonexistent-tdmap-dir/t.trc");
        let trace = tdmap_trace::Reader::open(missing)
            .err()
            .expect("no such trace");
        prints_once(trace, &enoent);
        let sim = tdmap_sim::TraceInput::open(missing)
            .err()
            .expect("no such trace");
        prints_once(sim, &enoent);
    }

    /// The libraries without OS errors wrap each other (monitor over map and sharing):
    /// their messages must not repeat the wrapped error either.
    #[test]
    fn wrapped_library_errors_print_once() {
        let map = tdmap_map::MapError::UnknownAlgorithm("x".into());
        let text = map.to_string();
        prints_once(tdmap_monitor::MonitorError::from(map), &text);
        let sharing = tdmap_sharing::SharingError::Config("x".into());
        let text = sharing.to_string();
        prints_once(tdmap_monitor::MonitorError::from(sharing), &text);
        let topo = tdmap_topo::MachineSpec::parse("nonexistent-tdmap-preset").load(None);
        let text = topo.unwrap_err().to_string();
        prints_once(super::InputError(text.clone()), &text);
        // The binary's own contexts name the action and leave the io::Error in the chain.
        let err: anyhow::Result<()> = Err(Io::from_raw_os_error(28)).context("writing x");
        prints_once_anyhow(err.unwrap_err(), "os error 28");
    }
    #[test]
    fn a_usage_error_is_one_line_naming_the_help() {
        let text = "error: the following required arguments were not provided:\n  <PROGRAM>...\n\n\
                    Usage: tdmap run [OPTIONS] -- <PROGRAM>...\n\nFor more information, try '--help'.\n";
        assert_eq!(
            super::usage_line(text),
            "the following required arguments were not provided: <PROGRAM>...; see 'tdmap run --help'"
        );
    }
}
