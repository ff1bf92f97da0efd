//! Builds libtdmap_mpi (`c/`: tdmap_mpi.c, c_calls.c, fortran_calls.c) once per MPI whose compiler wrapper is installed,
//! as `libtdmap_mpi_openmpi.so` and `libtdmap_mpi_mpich.so` beside the tdmap binary
//! (`target/<profile>/`), where `tdmap comm` looks for them. Open MPI's and MPICH's ABIs
//! differ (handles are pointers in one, integers in the other), so one build cannot
//! serve both. A missing MPI is skipped: `tdmap comm` then says which package to install.
//! A library that does not compile (another MPI version) is a cargo warning, not a failed
//! build of tdmap: tests/mpi_comm.rs then says it is not built.

use std::path::{Path, PathBuf};
use std::process::Command;

const SOURCES: [&str; 3] = ["c/tdmap_mpi.c", "c/c_calls.c", "c/fortran_calls.c"];

/// (the library's suffix, the MPI's C compiler wrapper).
const MPIS: [(&str, &str); 2] = [("openmpi", "mpicc.openmpi"), ("mpich", "mpicc.mpich")];

fn main() {
    println!("cargo:rerun-if-changed=c");
    println!("cargo:rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    // OUT_DIR is <target>/<profile>/build/<pkg>-<hash>/out.
    let Some(profile_dir) = out.ancestors().nth(3) else {
        return;
    };
    for (mpi, cc) in MPIS {
        if let Some(path) = which(cc) {
            println!("cargo:rerun-if-changed={}", path.display());
            build(mpi, cc, profile_dir, &out);
        }
    }
}

/// `cc` in PATH.
fn which(cc: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(cc))
        .find(|p| p.is_file())
}

/// Compiles into OUT_DIR, then renames into the profile folder, so that a reader never
/// sees half a library.
fn build(mpi: &str, cc: &str, profile_dir: &Path, out: &Path) {
    let tmp = out.join(format!("libtdmap_mpi_{mpi}.so"));
    let out = Command::new(cc)
        .args([
            "-O2",
            "-g",
            "-std=gnu11",
            "-Wall",
            "-Wextra",
            "-fPIC",
            "-shared",
        ])
        .arg("-o")
        .arg(&tmp)
        .args(SOURCES)
        .arg("-ldl")
        .output();
    match out {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            let first = err.lines().find(|l| l.contains("error")).unwrap_or("");
            println!("cargo:warning=libtdmap_mpi_{mpi}.so not built: {cc} failed: {first}");
            return;
        }
        Err(e) => {
            println!("cargo:warning=libtdmap_mpi_{mpi}.so not built: cannot run {cc}: {e}");
            return;
        }
    }
    let staged = profile_dir.join(format!(".libtdmap_mpi_{mpi}.so.{}", std::process::id()));
    std::fs::copy(&tmp, &staged).expect("copy the library into the profile folder");
    std::fs::rename(&staged, profile_dir.join(format!("libtdmap_mpi_{mpi}.so")))
        .expect("rename the library into place");
}
