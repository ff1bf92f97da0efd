//! `tdmap generate`: the documents made from the command line's one clap definition, so
//! that each flag is written once. `make install` writes the man pages (clap_mangen) and
//! the bash, zsh and fish completions (clap_complete) with it; docs/cli.md is its
//! markdown, kept fresh by `tests/docs_cli.rs`. Hidden: it documents tdmap, it is no
//! part of the workflow.

use crate::exit::input;
use anyhow::{Context, Result};
use clap::CommandFactory;
use clap_complete::Shell;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The width help is wrapped to in generated files, whatever the terminal, so that the
/// files do not depend on who made them.
const WIDTH: usize = 100;

/// What to generate.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(Debug, clap::Subcommand)]
enum What {
    /// Man pages: tdmap.1 and tdmap-COMMAND.1 for each command, into DIR.
    Man {
        /// The folder to write into (created if missing).
        dir: PathBuf,
    },
    /// Shell completions into DIR: tdmap.bash, _tdmap (zsh) and tdmap.fish.
    Completions {
        /// The folder to write into (created if missing).
        dir: PathBuf,
    },
    /// The CLI reference in markdown (docs/cli.md), on stdout.
    Markdown,
}

/// Writes what was asked for.
pub fn run(args: Args) -> Result<i32> {
    match args.what {
        What::Man { dir } => man(&dir)?,
        What::Completions { dir } => completions(&dir)?,
        What::Markdown => write!(std::io::stdout(), "{}", markdown())?,
    }
    Ok(crate::exit::OK)
}

/// The command line as users see it: the hidden commands left out, help wrapped at
/// [`WIDTH`].
fn command() -> clap::Command {
    let mut cmd = super::Cli::command().term_width(WIDTH);
    cmd.build();
    cmd
}

/// Creates `dir` and writes each `(name, bytes)` into it, each file replaced whole. No
/// input is read, so no output can clash with one.
fn write_all(dir: &Path, files: Vec<(String, Vec<u8>)>) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| {
        input(format!(
            "{}: {e}; name a folder tdmap may create",
            dir.display()
        ))
    })?;
    for (name, bytes) in files {
        let path = dir.join(name);
        crate::paths::replace(&path, &bytes)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// The visible commands but clap's own `help`.
fn visible(root: &clap::Command) -> impl Iterator<Item = &clap::Command> {
    root.get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
}

fn man(dir: &Path) -> Result<()> {
    let root = command();
    let page = |cmd: clap::Command| -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut buf)?;
        Ok(buf)
    };
    let mut files = vec![("tdmap.1".to_string(), page(root.clone())?)];
    for sub in visible(&root) {
        let name = format!("tdmap-{}", sub.get_name());
        files.push((format!("{name}.1"), page(sub.clone())?));
    }
    write_all(dir, files)
}

/// The command line for completions: clap_complete offers hidden commands too, so they
/// are left out here (the root has no arguments of its own but --help and --version).
fn without_hidden() -> clap::Command {
    let root = command();
    let mut cmd = clap::Command::new("tdmap")
        .version(env!("CARGO_PKG_VERSION"))
        .subcommands(visible(&root).cloned());
    if let Some(about) = root.get_about() {
        cmd = cmd.about(about.clone());
    }
    cmd
}

fn completions(dir: &Path) -> Result<()> {
    let mut files = Vec::new();
    for (shell, name) in [
        (Shell::Bash, "tdmap.bash"),
        (Shell::Zsh, "_tdmap"),
        (Shell::Fish, "tdmap.fish"),
    ] {
        let mut buf = Vec::new();
        clap_complete::generate(shell, &mut without_hidden(), "tdmap", &mut buf);
        files.push((name.to_string(), buf));
    }
    write_all(dir, files)
}

/// docs/cli.md: every visible command's long help, in the order `tdmap --help` lists
/// them.
pub fn markdown() -> String {
    let root = command();
    let mut out = String::from(
        "# tdmap command-line reference\n\n\
         Generated from tdmap's clap definition by `tdmap generate markdown > docs/cli.md`\n\
         (`make docs`); `tests/docs_cli.rs` fails when this file is stale. `man tdmap-COMMAND`\n\
         shows the same text once installed.\n\n",
    );
    let subs: Vec<clap::Command> = visible(&root).cloned().collect();
    for s in &subs {
        out += &format!(
            "- [`tdmap {}`](#tdmap-{})\n",
            s.get_name(),
            anchor(s.get_name())
        );
    }
    out += &section("tdmap", root.clone().render_long_help().to_string());
    for s in subs {
        let name = format!("tdmap {}", s.get_name());
        let help = s.bin_name(&name).render_long_help().to_string();
        out += &section(&name, help);
    }
    out
}

/// GitHub's anchor for a heading `tdmap NAME`: `c++` and `g++` lose their pluses.
fn anchor(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_alphanumeric() || *c == '-')
        .collect()
}

fn section(title: &str, help: String) -> String {
    let help: Vec<&str> = help.lines().map(str::trim_end).collect();
    format!(
        "\n## {title}\n\n```text\n{}\n```\n",
        help.join("\n").trim_end()
    )
}
