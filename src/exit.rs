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
    let msg = format!("{err:#}").replace('\n', " ");
    eprintln!("tdmap: {msg}");
    if err.chain().any(|e| e.is::<InputError>()) {
        BAD_INPUT
    } else {
        FAILED
    }
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
