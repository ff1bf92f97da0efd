//! The `tdmap` command line: sharing-aware thread and data mapping for NUMA machines.

mod cmd;
mod exit;

use clap::Parser;

fn main() {
    let cli = cmd::Cli::parse();
    let code = match cmd::run(cli) {
        Ok(code) => code,
        Err(err) => exit::report(&err),
    };
    std::process::exit(code);
}
