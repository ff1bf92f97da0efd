//! The subcommands, one file each; this module only dispatches.

mod analyze;
mod canvas;
mod cc;
mod comm;
mod from_trace;
mod heatmap;
mod map;
mod run;
mod sim;
mod topo;
mod trace;
mod trace_check;

use clap::{Parser, Subcommand};

/// Sharing-aware thread and data mapping for NUMA machines.
///
/// tdmap finds out which threads share which data and which NUMA node touches each page,
/// then places threads on cores and pages on memory nodes so that accesses stay local.
#[derive(Debug, Parser)]
#[command(name = "tdmap", version, about, long_about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show a machine's topology: the tree, node distances and NUMA factor.
    Topo(topo::Args),
    /// Map threads onto PUs from a sharing matrix and print the mapping ready to paste.
    Map(map::Args),
    /// Compile C for exact tracing: clang with load/store callbacks and the tdmap runtime.
    Cc(cc::Args),
    /// Compile C++ for exact tracing, like `tdmap cc`.
    #[command(name = "c++")]
    Cxx(cc::Args),
    /// Run a program built with `tdmap cc` and write the exact trace of its accesses.
    Trace(trace::Args),
    /// Check a trace file's invariants and print its counts.
    TraceCheck(trace_check::Args),
    /// Analyse a trace: sharing metrics, top pairs, heatmap and a mapping verdict.
    ///
    /// Without --machine, the machine recorded in the trace is used if tdmap knows it,
    /// else this machine. Threads sit on the node of the CPU recorded for them, or else
    /// in blocks (thread t of T on node t*N/T).
    Analyze(analyze::Args),
    /// Replay a trace on a modelled NUMA machine under each policy (SIMULATED figures).
    Sim(sim::Args),
    /// Run a program under kMAF-style online thread and data mapping, then report.
    ///
    /// The program's output is untouched; the report goes to stderr (or --report FILE);
    /// tdmap exits with the program's exit code.
    Run(run::Args),
    /// Run an MPI job with libtdmap_mpi preloaded and write its communication matrix.
    ///
    /// Each rank counts the bytes and messages it sends per destination (point-to-point
    /// exactly, collectives by a documented model, any communicator in world ranks) and
    /// writes its row at MPI_Finalize; tdmap assembles them into a `tdmap-comm` file that
    /// `tdmap map --comm` reads, and reports the time spent in the library.
    Comm(comm::Args),
}

/// `--machine SPEC` and `--distances`, shared by every command that needs a machine.
#[derive(Debug, Clone, clap::Args)]
pub struct MachineArgs {
    /// The machine: a preset name (see `tdmap topo --list-presets`), an hwloc synthetic
    /// string such as "package:2 numa:2 core:4 pu:2", or an hwloc XML file from `lstopo
    /// machine.xml`. Default: this machine.
    #[arg(long, short = 'm', value_name = "SPEC")]
    pub machine: Option<String>,
    /// Node distances replacing the machine's: "local:remote" (e.g. 10:21) or a square
    /// matrix with rows separated by ';' (e.g. "10,21;21,10").
    #[arg(long, value_name = "D")]
    pub distances: Option<String>,
}

impl MachineArgs {
    /// Loads the named machine, or this one.
    pub fn load(&self) -> Result<tdmap_topo::Topology, tdmap_topo::TopoError> {
        let spec = tdmap_topo::MachineSpec::parse(self.machine.as_deref().unwrap_or(""));
        spec.load(self.distances.as_deref())
    }

    /// The machine named by `--machine`, else `recorded` (the one the trace or model
    /// `file` was made on) if tdmap knows it, else this machine; a bad spec is bad input,
    /// and a recorded machine over the size limits is refused rather than replaced by
    /// this one, which would map onto a machine nobody asked for.
    pub fn load_or_recorded(
        &self,
        recorded: &str,
        file: &std::path::Path,
    ) -> anyhow::Result<tdmap_topo::Topology> {
        if self.machine.is_none() && !recorded.is_empty() {
            let spec = tdmap_topo::MachineSpec::parse(recorded);
            match spec.load(self.distances.as_deref()) {
                Ok(t) => return Ok(t),
                Err(e @ tdmap_topo::TopoError::TooBig { .. }) => {
                    return Err(crate::exit::input(format!(
                        "{}: the machine it records: {e}; pass --machine",
                        file.display()
                    )))
                }
                Err(_) => {}
            }
        }
        self.load().map_err(crate::exit::input)
    }

    /// The hwloc XML file `--machine` names, if it names one: an input of the command.
    pub fn file(&self) -> Option<std::path::PathBuf> {
        match tdmap_topo::MachineSpec::parse(self.machine.as_deref()?) {
            tdmap_topo::MachineSpec::Xml(p) => Some(p),
            _ => None,
        }
    }
}

/// Bad input about file `path`: `err` prefixed with the file's name, unless it names the
/// file already (a trace's I/O errors do), so that the name is printed once.
pub(crate) fn input_about(path: &std::path::Path, err: impl std::fmt::Display) -> anyhow::Error {
    let msg = err.to_string();
    let name = path.display().to_string();
    if msg.contains(&name) {
        crate::exit::input(msg)
    } else {
        crate::exit::input(format!("{name}: {msg}"))
    }
}

/// Says on stderr, in one line, that the trace `name` is Incomplete and where it ends
/// (the rule is [`tdmap_trace::Ending`]'s); returns whether it is Complete.
pub(crate) fn say_ending(name: &str, ending: Option<tdmap_trace::Ending>) -> bool {
    match ending {
        Some(e) => {
            if let Some(note) = e.notice(name) {
                eprintln!("tdmap: {note}");
            }
            e.complete()
        }
        None => false,
    }
}

/// Runs the chosen subcommand and returns its exit code.
pub fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Topo(args) => topo::run(args),
        Command::Map(args) => map::run(args),
        Command::Cc(args) => cc::run(args, cc::Lang::C),
        Command::Cxx(args) => cc::run(args, cc::Lang::Cxx),
        Command::Trace(args) => trace::run(args),
        Command::TraceCheck(args) => trace_check::run(args),
        Command::Analyze(args) => analyze::run(args),
        Command::Sim(args) => sim::run(args),
        Command::Run(args) => run::run(args),
        Command::Comm(args) => comm::run(args),
    }
}
