//! The `tdmap` command line: sharing-aware thread and data mapping for NUMA machines.

#![forbid(unsafe_code)]

mod cmd;
mod exit;
mod paths;
// The integration tests' folder guard, so that the unit tests' folders go as theirs do.
#[cfg(test)]
#[path = "../tests/common/temp_dir.rs"]
mod temp_dir;

use clap::Parser;

fn main() {
    let cli = match cmd::Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => std::process::exit(exit::usage(&err)),
    };
    let code = match cmd::run(cli) {
        Ok(code) => code,
        Err(err) => exit::report(&err),
    };
    std::process::exit(code);
}
