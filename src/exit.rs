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

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
