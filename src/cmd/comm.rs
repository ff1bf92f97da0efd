//! `tdmap comm -o m.json -- mpirun -np 8 ./prog`: the communication matrix of an MPI job.
//!
//! It picks the libtdmap_mpi built for the program's MPI (from the `DT_NEEDED` entries
//! of the program after the launcher, tdmap-mpi's `launch`), has the launcher set
//! `LD_PRELOAD`, the rows folder and a fresh run id in every rank, runs the job, then
//! assembles the rows each rank wrote at `MPI_Finalize` into a `tdmap-comm` file (and
//! optionally Matrix Market) for `tdmap map --comm`, and reports the time the ranks
//! spent in the library. `--assemble DIR` only assembles rows written by a job that
//! preloaded the library by hand.

use crate::exit::{input, FAILED, OK};
use anyhow::{Context, Result};
use serde::Serialize;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;
use tdmap_mpi::launch::{elf_needed, Launcher, Mpi};
use tdmap_mpi::{row, CommFile};

/// Arguments of `tdmap comm`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where to write the matrix (`tdmap-comm` JSON). Default: PROGRAM.comm.json in the
    /// current folder, PROGRAM being the MPI program's name.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    /// Also write the directed byte matrix as Matrix Market (row = sender, 1-based).
    #[arg(long, value_name = "M.mtx")]
    mtx: Option<PathBuf>,
    /// Overwrite the outputs if they exist.
    #[arg(long)]
    force: bool,
    /// The program's MPI, openmpi or mpich. Default: found from the libmpi the program
    /// is linked with (else from the launcher's name).
    #[arg(long, value_name = "MPI")]
    mpi: Option<String>,
    /// The folder the ranks write their rows in; on a cluster, one every host sees.
    /// Default: a fresh folder beside the output, removed once assembled.
    #[arg(long, value_name = "DIR")]
    rows: Option<PathBuf>,
    /// Keep the rows folder after assembling.
    #[arg(long)]
    keep_rows: bool,
    /// Assemble the rows in DIR (a job run with `LD_PRELOAD=libtdmap_mpi_*.so` and
    /// TDMAP_MPI_DIR=DIR by hand) instead of running a job.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["command", "rows", "mpi"])]
    assemble: Option<PathBuf>,
    /// Print the summary as JSON on stderr (the job owns stdout).
    #[arg(long)]
    json: bool,
    /// The job: a launcher and its arguments (`mpirun -np 8 ./prog`), or an MPI program.
    #[arg(
        last = true,
        value_name = "COMMAND",
        required_unless_present = "assemble"
    )]
    command: Vec<OsString>,
}

/// What `tdmap comm` reports.
#[derive(Debug, Serialize)]
struct Summary {
    output: PathBuf,
    run: String,
    mpi: String,
    ranks: usize,
    p2p_bytes: u64,
    p2p_messages: u64,
    collective_bytes: u64,
    calls: u64,
    /// In the wrappers' own code (not the MPI calls they wrap), all ranks.
    library_seconds: f64,
    /// Writing the rows at MPI_Finalize, all ranks.
    finalize_seconds: f64,
    /// Both, in the rank that spent the most.
    library_max_rank_seconds: f64,
    wall_seconds: Option<f64>,
    library_share_of_rank_time: Option<f64>,
}

/// Runs `tdmap comm`.
pub fn run(args: Args) -> Result<i32> {
    if let Some(dir) = &args.assemble {
        let output = args.output.clone().unwrap_or_else(|| "comm.json".into());
        check_outputs(&args, &output, None)?;
        let file = assemble(dir)?;
        return finish(&args, &output, file);
    }
    let argv: Vec<String> = args
        .command
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let job = Job::find(&argv, args.mpi.as_deref())?;
    let name = job
        .program
        .as_deref()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "mpi".into());
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| format!("{name}.comm.json").into());
    check_outputs(&args, &output, job.program.as_deref())?;
    let lib = library(job.mpi)?;
    let (rows, fresh) = rows_folder(&args, &output)?;
    let run_id = format!("{}-{}", std::process::id(), nanos());
    let mut preload = lib.to_string_lossy().into_owned();
    if let Some(user) = std::env::var_os("LD_PRELOAD").filter(|u| !u.is_empty()) {
        preload = format!("{preload}:{}", user.to_string_lossy());
    }
    let vars = vec![
        ("LD_PRELOAD".to_string(), preload),
        (
            "TDMAP_MPI_DIR".to_string(),
            rows.to_string_lossy().into_owned(),
        ),
        ("TDMAP_MPI_RUN".to_string(), run_id),
    ];
    let (cmd, env) = job.launcher.command(&argv, &vars);
    let started = Instant::now();
    let status = spawn(&cmd, &env)?;
    let wall = started.elapsed().as_secs_f64();
    let code = status.code().unwrap_or(FAILED).max(OK);
    if !status.success() {
        eprintln!(
            "tdmap: the job failed ({status}); no matrix written{}",
            if fresh {
                String::new()
            } else {
                format!(", rows are in {}", rows.display())
            }
        );
        if fresh && !args.keep_rows {
            let _ = std::fs::remove_dir_all(&rows);
        }
        return Ok(if code == OK { FAILED } else { code });
    }
    let mut file = match assemble(&rows) {
        Ok(f) => f,
        Err(e) => {
            // An empty folder says nothing; rows stay for a look (the message names them).
            if fresh {
                let _ = std::fs::remove_dir(&rows);
            }
            return Err(e);
        }
    };
    file.program = argv;
    file.wall_seconds = Some(wall);
    let code = finish(&args, &output, file)?;
    if fresh && !args.keep_rows {
        let _ = std::fs::remove_dir_all(&rows);
    }
    Ok(code)
}

/// The job's MPI and launcher, and its MPI program if one was found.
struct Job {
    mpi: Mpi,
    launcher: Launcher,
    program: Option<PathBuf>,
}

impl Job {
    /// The launcher is `argv[0]` if its name says so; the program is the first later
    /// word that is an ELF file linked with an MPI (option values such as `-np 8` are
    /// not files), or `argv[0]` itself when it is the MPI program.
    fn find(argv: &[String], forced: Option<&str>) -> Result<Job> {
        let forced: Option<Mpi> = forced.map(str::parse).transpose().map_err(input)?;
        let first = super::cc::find_in_path(argv[0].as_ref())
            .ok_or_else(|| input(format!("'{}' not found; check the path (or PATH)", argv[0])))?;
        let called = first
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let target = std::fs::canonicalize(&first)
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_default();
        let linked = |p: &Path| {
            std::fs::read(p)
                .ok()
                .and_then(|b| elf_needed(&b))
                .and_then(|n| Mpi::of_needed(&n))
        };
        let mut launcher = Launcher::Inherit;
        let mut program = None;
        if Launcher::is_launcher(&called) || Launcher::is_launcher(&target) {
            launcher = Launcher::of_names(&called, &target);
            program = argv[1..].iter().find_map(|a| {
                let p = super::cc::find_in_path(a.as_ref())?;
                linked(&p).map(|m| (p, m))
            });
        } else if let Some(m) = linked(&first) {
            program = Some((first.clone(), m));
        }
        let from_launcher = match launcher {
            Launcher::OpenMpi => Some(Mpi::OpenMpi),
            Launcher::Hydra => Some(Mpi::Mpich),
            Launcher::Inherit => None,
        };
        let mpi = forced
            .or(program.as_ref().map(|p| p.1))
            .or(from_launcher)
            .ok_or_else(|| {
                input(format!(
                    "cannot tell which MPI '{}' uses: no program linked with libmpi on the command line; pass --mpi openmpi or --mpi mpich",
                    argv.join(" ")
                ))
            })?;
        if let (Some((p, m)), Some(l)) = (&program, from_launcher) {
            if *m != l {
                eprintln!(
                    "tdmap: warning: {} is linked with {m} but the launcher is {l}'s; the job may fail",
                    p.display()
                );
            }
        }
        Ok(Job {
            mpi,
            launcher,
            program: program.map(|p| p.0),
        })
    }
}

/// The library built for `mpi`: `$TDMAP_MPI_SO`, else beside the tdmap binary.
fn library(mpi: Mpi) -> Result<PathBuf> {
    let name = mpi.library();
    let so = super::cc::runtime_file("TDMAP_MPI_SO", &name, "tdmap-mpi").map_err(|e| {
        input(format!(
            "{e:#}; it is built only when {mpi}'s compiler is installed (Debian: {}, see scripts/setup.sh)",
            mpi.packages()
        ))
    })?;
    if so.to_string_lossy().contains([':', ' ']) {
        return Err(input(format!(
            "the library path {} holds ':' or ' ', which LD_PRELOAD cannot carry; set TDMAP_MPI_SO to a copy elsewhere",
            so.display()
        )));
    }
    Ok(so)
}

/// The rows folder, absolute (ranks may start elsewhere), and whether tdmap made it.
fn rows_folder(args: &Args, output: &Path) -> Result<(PathBuf, bool)> {
    let abs =
        |p: &Path| std::path::absolute(p).with_context(|| format!("resolving {}", p.display()));
    if let Some(dir) = &args.rows {
        std::fs::create_dir_all(dir)
            .map_err(|e| input(format!("cannot create --rows {}: {e}", dir.display())))?;
        if !row::read_dir(dir).map(|r| r.is_empty()).unwrap_or(false) {
            return Err(input(format!(
                "--rows {} already holds rank-*.row files; empty it or name another folder",
                dir.display()
            )));
        }
        return Ok((abs(dir)?, false));
    }
    let dir = PathBuf::from(format!("{}.rows.{}", output.display(), std::process::id()));
    std::fs::create_dir(&dir)
        .map_err(|e| input(format!("cannot create {}: {e}", dir.display())))?;
    Ok((abs(&dir)?, true))
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// Runs the job with tdmap's stdio and forwards SIGINT, SIGTERM and kin to it.
fn spawn(cmd: &[String], env: &[(String, String)]) -> Result<std::process::ExitStatus> {
    let args: Vec<OsString> = cmd[1..].iter().map(OsString::from).collect();
    let env: Vec<(OsString, OsString)> = env.iter().map(|(k, v)| (k.into(), v.into())).collect();
    let mut child = tdmap_sys::spawn_gated_env(cmd[0].as_ref(), &args, &env)
        .map_err(|e| input(format!("cannot run '{}': {e}", cmd[0])))?;
    let _fwd = tdmap_sys::forward_signals(child.pid())?;
    child
        .release()
        .map_err(|e| input(format!("cannot run '{}': {e}", cmd[0])))?;
    child
        .wait()
        .with_context(|| format!("waiting for '{}'", cmd[0]))
}

/// The rows of `dir` as one matrix; bad rows are bad input (exit 2, naming the ranks).
fn assemble(dir: &Path) -> Result<CommFile> {
    let rows = row::read_dir(dir).map_err(input)?;
    row::assemble(dir, rows).map_err(input)
}

fn check_outputs(args: &Args, output: &Path, program: Option<&Path>) -> Result<()> {
    crate::paths::Files::new()
        .reads("the program", program)
        .writes("-o", Some(output))
        .writes("--mtx", args.mtx.as_deref())
        .check()?;
    for out in std::iter::once(output).chain(args.mtx.as_deref()) {
        if crate::paths::exists(out) && !args.force {
            return Err(input(format!(
                "{} exists; pass --force to overwrite it or -o to choose another file",
                out.display()
            )));
        }
    }
    Ok(())
}

/// Writes the outputs and the summary.
fn finish(args: &Args, output: &Path, file: CommFile) -> Result<i32> {
    crate::paths::replace(output, format!("{}\n", file.to_json()).as_bytes())
        .with_context(|| format!("writing {}", output.display()))?;
    if let Some(mtx) = &args.mtx {
        crate::paths::replace(mtx, file.to_mtx().as_bytes())
            .with_context(|| format!("writing {}", mtx.display()))?;
    }
    let sum = summary(output, &file);
    let mut err = std::io::stderr().lock();
    if args.json {
        writeln!(err, "{}", serde_json::to_string_pretty(&sum)?)?;
    } else {
        writeln!(err, "{}", line(&sum))?;
    }
    Ok(OK)
}

fn summary(output: &Path, f: &CommFile) -> Summary {
    let (p2p_bytes, collective_bytes) = f.total_bytes();
    let lib: u64 = f.costs.iter().map(|c| c.lib_ns).sum();
    let fin: u64 = f.costs.iter().map(|c| c.finalize_ns).sum();
    let max = f
        .costs
        .iter()
        .map(|c| c.lib_ns + c.finalize_ns)
        .max()
        .unwrap_or(0);
    let (library_seconds, finalize_seconds) = (lib as f64 * 1e-9, fin as f64 * 1e-9);
    Summary {
        output: output.to_path_buf(),
        run: f.run.clone(),
        mpi: f.mpi.clone(),
        ranks: f.ranks,
        p2p_bytes,
        p2p_messages: f.pairs.iter().map(|p| p.p2p_messages).sum(),
        collective_bytes,
        calls: f.costs.iter().map(|c| c.calls).sum(),
        library_seconds,
        finalize_seconds,
        library_max_rank_seconds: max as f64 * 1e-9,
        wall_seconds: f.wall_seconds,
        library_share_of_rank_time: f
            .wall_seconds
            .filter(|w| *w > 0.0)
            .map(|w| (library_seconds + finalize_seconds) / (w * f.ranks as f64)),
    }
}

fn line(s: &Summary) -> String {
    let share = s
        .library_share_of_rank_time
        .map(|x| format!(", {:.3}% of the ranks' wall time", x * 100.0))
        .unwrap_or_default();
    format!(
        "tdmap comm: {} ranks ({}), run {}: {} B point-to-point in {} messages, {} B by the collective model; library {:.3} ms in {} calls ({:.2} us per call) + {:.3} ms writing rows (at most {:.3} ms in one rank{share}); wrote {}",
        s.ranks,
        s.mpi,
        s.run,
        s.p2p_bytes,
        s.p2p_messages,
        s.collective_bytes,
        s.library_seconds * 1e3,
        s.calls,
        s.library_seconds * 1e6 / s.calls.max(1) as f64,
        s.finalize_seconds * 1e3,
        s.library_max_rank_seconds * 1e3,
        s.output.display()
    )
}
