//! `tdmap exec --mapping FILE -- PROG ARGS`: runs a program with its threads, or its MPI
//! rank, placed as a `tdmap map --format json` file says. The mapping is checked first
//! (cmd/mapping.rs: the machine it was made for, the CPUs it names, the CPUs this process
//! may use); a refusal is one line and exit 2, and the program does not run.
//!
//! Threads (the default): OpenMP programs get `OMP_PLACES`/`OMP_PROC_BIND`/
//! `OMP_NUM_THREADS` (exec/env.rs), and every program gets the tdmap runtime preloaded,
//! which pins the main thread and then each thread in `pthread_create` order
//! (crates/rt `pin`) and reports each pin in a file read back here (exec/report.rs).
//! Ranks (a mapping made with `tdmap map --comm`, or `--ranks`): run under the MPI
//! launcher, one tdmap per rank; the rank's local rank variable picks its CPU, and the
//! process is pinned before it starts, so its threads inherit the CPU.
//!
//! The program keeps tdmap's stdin, stdout and stderr; tdmap's own lines go to stderr.
//! Signals are forwarded; tdmap exits with the program's exit code (128 + signal).

mod env;
mod report;

use crate::exit::input;
use anyhow::Result;
use std::ffi::OsString;
use std::path::PathBuf;
use tdmap_map::Leniency;
use tdmap_sys::{LinuxSys, Sys};

/// Arguments of `tdmap exec`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  tdmap map --matrix m.csv --format json > m.json
  tdmap exec --mapping m.json -- ./prog args            # threads, OpenMP or pthreads
  mpirun -np 8 tdmap exec --mapping ranks.json -- ./mpi_prog   # one CPU per local rank

Exit codes: the program's own (128 + N if signal N ended it); 2 when the mapping does not
fit this machine or allocation, or the program cannot be started (it has not run).")]
pub struct Args {
    /// The mapping: `tdmap map --format json` (entry k is thread k, main = 0, then
    /// threads in creation order; or rank k, see --ranks).
    #[arg(long, value_name = "FILE")]
    mapping: PathBuf,
    /// Threads beyond the mapping's entries take its CPUs again from the start (thread k
    /// on entry k mod n); without it they run unpinned, and the summary says so.
    #[arg(long)]
    cycle: bool,
    /// The entries are MPI ranks (a mapping made with --comm says so itself): pin this
    /// process to the entry of its local rank (OMPI_COMM_WORLD_LOCAL_RANK,
    /// MPI_LOCALRANKID or SLURM_LOCALID).
    #[arg(long)]
    ranks: bool,
    /// OpenMP places only: do not preload the runtime that pins threads in creation
    /// order (for a static OpenMP program, whose own runtime then pins by OMP_PLACES).
    #[arg(long)]
    omp_only: bool,
    /// Apply a mapping made for another machine (its fingerprint differs), or naming CPUs
    /// outside this process's CPU binding; pins the kernel refuses are reported.
    #[arg(long)]
    force: bool,
    /// Run the program whatever fails (a foreign mapping, missing CPUs, a program the
    /// runtime cannot be preloaded into), saying each on stderr: it may run unpinned.
    #[arg(long)]
    best_effort: bool,
    /// Print the summary of the pins (after the program ends) as JSON on stderr.
    #[arg(long)]
    json: bool,
    /// The program and its arguments (after `--`).
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<OsString>,
}

/// Runs the program pinned; returns its exit code.
pub fn run(args: Args) -> Result<i32> {
    crate::paths::Files::new()
        .runs(&args.command[0])
        .reads("--mapping", Some(&args.mapping))
        .check()?;
    let how = Leniency {
        force: args.force,
        best_effort: args.best_effort,
    };
    let allowed = super::allowed_cpus(true)?;
    let file = super::mapping::read(&args.mapping)?;
    if args.ranks || file.is_ranks() {
        // A rank uses one entry: only that one must be in its allocation (run_rank checks).
        let cpus = super::mapping::check(&args.mapping, &file, None, how)?;
        return run_rank(&args, &cpus, allowed.as_deref());
    }
    let cpus = super::mapping::check(&args.mapping, &file, allowed.as_deref(), how)?;
    let plan = env::threads(&args, &cpus)?;
    let (prog, rest) = args
        .command
        .split_first()
        .expect("clap requires the program");
    let mut child = tdmap_sys::spawn_gated_env(prog, rest, &plan.vars)
        .map_err(|e| input(format!("cannot run {}: {e}", prog.to_string_lossy())))?;
    let _fwd = tdmap_sys::forward_signals(child.pid())?;
    child
        .release()
        .map_err(|e| input(format!("cannot run {}: {e}", prog.to_string_lossy())))?;
    let code = tdmap_monitor::live::exit_code(child.wait()?);
    // The program has run: whatever happens to the summary, its exit code is passed on.
    match report::read(&plan, child.pid() as u32, cpus.len(), args.omp_only) {
        Ok(summary) => {
            let _ = report::emit(&summary, &args);
        }
        Err(e) => eprintln!("tdmap: no pin summary: {e:#}"),
    }
    Ok(code)
}

/// One MPI rank: the entry of its local rank, pinned before the program starts.
fn run_rank(args: &Args, cpus: &[usize], allowed: Option<&[usize]>) -> Result<i32> {
    let (var, rank) = tdmap_map::rank::local_rank(|k| std::env::var(k).ok())
        .map_err(input)?
        .ok_or_else(|| {
            input(format!(
                "{}: the mapping names MPI ranks but none of {} is set; start tdmap exec under the launcher, e.g. mpirun -np {} tdmap exec --mapping {} -- PROG",
                args.mapping.display(),
                tdmap_map::rank::LOCAL_RANK_VARS.join(", "),
                cpus.len(),
                args.mapping.display()
            ))
        })?;
    let cpu = match cpus.get(rank) {
        Some(&c) => Some(c),
        None if args.cycle => Some(cpus[rank % cpus.len()]),
        None => None,
    };
    let (prog, rest) = args
        .command
        .split_first()
        .expect("clap requires the program");
    let what = format!("rank {rank} ({var})");
    let cpu = match cpu {
        Some(c) => Some(c),
        None if args.best_effort => {
            eprintln!("tdmap: {what} is beyond the mapping's {} ranks: running unpinned (--best-effort)", cpus.len());
            None
        }
        None => {
            return Err(input(format!(
                "{}: {what} is beyond the mapping's {} ranks; map as many ranks as the job starts, or pass --cycle",
                args.mapping.display(),
                cpus.len()
            )))
        }
    };
    if let (Some(c), Some(allowed)) = (cpu, allowed) {
        if !(allowed.contains(&c) || args.force || args.best_effort) {
            return Err(input(format!(
                "{}: {what} is mapped to CPU {c}, outside the CPUs this process may use ({}); let the launcher not bind (mpirun --bind-to none, srun --cpu-bind=none), or pass --force",
                args.mapping.display(),
                super::cpu_list(allowed)
            )));
        }
    }
    let mut child = tdmap_sys::spawn_gated(prog, rest)
        .map_err(|e| input(format!("cannot run {}: {e}", prog.to_string_lossy())))?;
    if let Some(c) = cpu {
        if let Err(e) = LinuxSys.set_affinity(child.pid(), &[c]) {
            let errno = e.errno().unwrap_or(0);
            let msg = format!(
                "cannot pin {what} to CPU {c}: {e} ({})",
                tdmap_wire::pin::failure_state(errno)
            );
            if !args.best_effort {
                // Dropping the gated child kills it before the program runs.
                return Err(input(format!(
                    "{msg}; pass --best-effort to run it unpinned"
                )));
            }
            eprintln!("tdmap: {msg}: running unpinned (--best-effort)");
        }
    }
    let _fwd = tdmap_sys::forward_signals(child.pid())?;
    child
        .release()
        .map_err(|e| input(format!("cannot run {}: {e}", prog.to_string_lossy())))?;
    Ok(tdmap_monitor::live::exit_code(child.wait()?))
}
