//! Which libtdmap_mpi a job needs, and how its launcher passes the environment to the
//! ranks. Pure: the caller reads the files; this module looks at names and bytes.
//!
//! The MPI comes from the program's `DT_NEEDED` entries: Open MPI's sonames are
//! `libmpi.so.40` (and `libmpi_mpifh.so.40` for Fortran), MPICH's `libmpich.so.12`,
//! `libmpi.so.12` and `libmpichfort.so.12`. The launcher is recognised by the name its
//! path leads to (`/usr/bin/mpirun` is a link to `orterun` or `mpiexec.hydra`). Open
//! MPI's `mpirun` sets variables in the ranks with `-x NAME=VALUE`, MPICH's Hydra with
//! `-genv NAME VALUE`: those reach ranks on other hosts too, and keep the library out
//! of the launcher itself. Any other launcher (`srun`) or a program started alone gets
//! them in its environment, which ranks inherit.

use std::fmt;

/// An MPI implementation with its own ABI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mpi {
    /// Open MPI (handles are pointers).
    OpenMpi,
    /// MPICH and its ABI family (handles are integers).
    Mpich,
}

impl Mpi {
    /// The name in library and file names: `openmpi`, `mpich`.
    pub fn name(self) -> &'static str {
        match self {
            Mpi::OpenMpi => "openmpi",
            Mpi::Mpich => "mpich",
        }
    }

    /// The library built for it.
    pub fn library(self) -> String {
        format!("libtdmap_mpi_{}.so", self.name())
    }

    /// The Debian packages that provide it (scripts/setup.sh installs them).
    pub fn packages(self) -> &'static str {
        match self {
            Mpi::OpenMpi => "openmpi-bin libopenmpi-dev",
            Mpi::Mpich => "mpich libmpich-dev",
        }
    }

    /// The MPI a soname belongs to.
    pub fn of_soname(soname: &str) -> Option<Mpi> {
        let (stem, version) = soname.split_once(".so.")?;
        let major = version.split('.').next()?;
        match (stem, major) {
            ("libmpich" | "libmpichfort" | "libmpichcxx", _) => Some(Mpi::Mpich),
            ("libmpi" | "libmpifort", "12") => Some(Mpi::Mpich),
            ("libmpi" | "libmpi_mpifh" | "libmpi_usempif08" | "libmpi_cxx", "40") => {
                Some(Mpi::OpenMpi)
            }
            (s, _) if s.starts_with("libmpi_") || s.starts_with("libopen-") => Some(Mpi::OpenMpi),
            _ => None,
        }
    }

    /// The MPI among `needed` sonames, if one.
    pub fn of_needed<S: AsRef<str>>(needed: &[S]) -> Option<Mpi> {
        needed.iter().find_map(|n| Mpi::of_soname(n.as_ref()))
    }
}

impl std::str::FromStr for Mpi {
    type Err = String;
    fn from_str(s: &str) -> Result<Mpi, String> {
        match s {
            "openmpi" => Ok(Mpi::OpenMpi),
            "mpich" => Ok(Mpi::Mpich),
            _ => Err(format!("unknown MPI {s:?}; choose openmpi or mpich")),
        }
    }
}

impl fmt::Display for Mpi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a launcher passes variables to its ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launcher {
    /// Open MPI's mpirun/mpiexec/orterun: `-x NAME=VALUE`.
    OpenMpi,
    /// MPICH's Hydra mpiexec: `-genv NAME VALUE`.
    Hydra,
    /// Anything else (srun, or the program itself): the environment.
    Inherit,
}

impl Launcher {
    /// The launcher at a path whose links lead to `target_name`, called as `called`.
    pub fn of_names(called: &str, target_name: &str) -> Launcher {
        for name in [target_name, called] {
            if name.contains("orterun") || name.contains("prterun") || name.ends_with(".openmpi") {
                return Launcher::OpenMpi;
            }
            if name.contains("hydra") || name.ends_with(".mpich") {
                return Launcher::Hydra;
            }
        }
        Launcher::Inherit
    }

    /// Whether `name` (a file name) is an MPI launcher whose program comes later on the
    /// command line.
    pub fn is_launcher(name: &str) -> bool {
        ["mpirun", "mpiexec", "orterun", "prterun", "srun"]
            .iter()
            .any(|l| name == *l || name.starts_with(&format!("{l}.")))
    }

    /// The command line with `vars` set in the ranks, and the variables to set in the
    /// launcher's own environment (for [`Launcher::Inherit`]).
    pub fn command(
        self,
        argv: &[String],
        vars: &[(String, String)],
    ) -> (Vec<String>, Vec<(String, String)>) {
        let mut out = vec![argv[0].clone()];
        let mut env = Vec::new();
        for (k, v) in vars {
            match self {
                Launcher::OpenMpi => out.extend(["-x".into(), format!("{k}={v}")]),
                Launcher::Hydra => out.extend(["-genv".into(), k.clone(), v.clone()]),
                Launcher::Inherit => env.push((k.clone(), v.clone())),
            }
        }
        out.extend(argv[1..].iter().cloned());
        (out, env)
    }
}

/// The `DT_NEEDED` sonames of a little-endian ELF64 file, or None if `bytes` is not one.
pub fn elf_needed(bytes: &[u8]) -> Option<Vec<String>> {
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" || bytes[4] != 2 || bytes[5] != 1 {
        return None;
    }
    let u16_at = |o: usize| Some(u16::from_le_bytes(bytes.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(bytes.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(bytes.get(o..o + 8)?.try_into().ok()?));
    let shoff = u64_at(0x28)? as usize;
    let shentsize = u16_at(0x3a)? as usize;
    let shnum = u16_at(0x3c)? as usize;
    let section = |i: usize| -> Option<(u32, usize, usize, u32)> {
        let h = shoff.checked_add(i.checked_mul(shentsize)?)?;
        // sh_type, sh_offset, sh_size, sh_link
        Some((
            u32_at(h + 4)?,
            u64_at(h + 0x18)? as usize,
            u64_at(h + 0x20)? as usize,
            u32_at(h + 0x28)?,
        ))
    };
    const SHT_DYNAMIC: u32 = 6;
    const DT_NEEDED: u64 = 1;
    let mut needed = Vec::new();
    for i in 0..shnum {
        let (ty, off, size, link) = section(i)?;
        if ty != SHT_DYNAMIC {
            continue;
        }
        let (_, stroff, strsize, _) = section(link as usize)?;
        let strtab = bytes.get(stroff..stroff.checked_add(strsize)?)?;
        for e in (0..size / 16).map(|k| off + k * 16) {
            let (tag, val) = (u64_at(e)?, u64_at(e + 8)? as usize);
            if tag == 0 {
                break;
            }
            if tag == DT_NEEDED {
                let s = strtab.get(val..)?;
                let end = s.iter().position(|&b| b == 0)?;
                needed.push(String::from_utf8_lossy(&s[..end]).into_owned());
            }
        }
    }
    Some(needed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sonames_name_their_mpi() {
        assert_eq!(Mpi::of_soname("libmpi.so.40"), Some(Mpi::OpenMpi));
        assert_eq!(Mpi::of_soname("libmpi_mpifh.so.40"), Some(Mpi::OpenMpi));
        assert_eq!(Mpi::of_soname("libmpich.so.12"), Some(Mpi::Mpich));
        assert_eq!(Mpi::of_soname("libmpichfort.so.12"), Some(Mpi::Mpich));
        assert_eq!(Mpi::of_soname("libmpi.so.12"), Some(Mpi::Mpich));
        assert_eq!(Mpi::of_soname("libc.so.6"), None);
        assert_eq!(
            Mpi::of_needed(&["libm.so.6", "libmpich.so.12"]),
            Some(Mpi::Mpich)
        );
    }

    #[test]
    fn launchers_are_told_apart_by_what_their_links_lead_to() {
        assert_eq!(Launcher::of_names("mpirun", "orterun"), Launcher::OpenMpi);
        assert_eq!(
            Launcher::of_names("mpiexec", "mpiexec.hydra"),
            Launcher::Hydra
        );
        assert_eq!(
            Launcher::of_names("mpirun.openmpi", "orterun"),
            Launcher::OpenMpi
        );
        assert_eq!(
            Launcher::of_names("mpiexec.mpich", "mpiexec.hydra"),
            Launcher::Hydra
        );
        assert_eq!(Launcher::of_names("srun", "srun"), Launcher::Inherit);
        assert!(Launcher::is_launcher("mpiexec.mpich"));
        assert!(Launcher::is_launcher("srun"));
        assert!(!Launcher::is_launcher("ring"));
    }

    #[test]
    fn variables_go_where_each_launcher_passes_them() {
        let argv: Vec<String> = ["mpirun", "-np", "2", "./a"].map(String::from).to_vec();
        let vars = vec![("A".to_string(), "1".to_string())];
        let (cmd, env) = Launcher::OpenMpi.command(&argv, &vars);
        assert_eq!(cmd, ["mpirun", "-x", "A=1", "-np", "2", "./a"]);
        assert!(env.is_empty());
        let (cmd, _) = Launcher::Hydra.command(&argv, &vars);
        assert_eq!(cmd, ["mpirun", "-genv", "A", "1", "-np", "2", "./a"]);
        let (cmd, env) = Launcher::Inherit.command(&argv, &vars);
        assert_eq!(cmd, argv);
        assert_eq!(env, vars);
    }

    #[test]
    fn not_elf_is_none() {
        assert_eq!(elf_needed(b"#!/bin/sh\n"), None);
        assert_eq!(elf_needed(&[0x7f, b'E', b'L', b'F']), None);
    }

    #[test]
    fn a_real_binary_lists_libc() {
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let needed = elf_needed(&exe).expect("the test binary is ELF64");
        assert!(
            needed.iter().any(|n| n.starts_with("libc.so")),
            "{needed:?}"
        );
    }
}
