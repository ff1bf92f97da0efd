//! A swappable filesystem root for `/proc` and `/sys` reads, so that a capture of a real
//! machine's files becomes a test fixture.

use crate::SysError;
use std::path::{Path, PathBuf};

/// The environment variable that moves the root, like hwloc's `HWLOC_FSROOT`.
pub const FSROOT_ENV: &str = "TDMAP_FSROOT";

/// Where `/proc` and `/sys` are read from: `/` normally, a captured tree in tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsRoot {
    root: PathBuf,
}

impl Default for FsRoot {
    fn default() -> Self {
        FsRoot::new("/")
    }
}

impl FsRoot {
    /// A root at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        FsRoot { root: root.into() }
    }

    /// The root named by `TDMAP_FSROOT`, or `/`; a set-id process ignores the variable
    /// ([`crate::secure_var`]).
    pub fn from_env() -> Self {
        match crate::secure_var(FSROOT_ENV) {
            Some(r) if !r.is_empty() => FsRoot::new(r),
            _ => FsRoot::default(),
        }
    }

    /// The real path of an absolute path such as `/sys/devices/system/node`.
    pub fn path(&self, abs: impl AsRef<Path>) -> PathBuf {
        let rel = abs.as_ref().strip_prefix("/").unwrap_or(abs.as_ref());
        self.root.join(rel)
    }

    /// Reads a whole file below the root.
    pub fn read(&self, abs: impl AsRef<Path>) -> Result<String, SysError> {
        let path = self.path(abs);
        std::fs::read_to_string(&path).map_err(|err| SysError::Read { path, err })
    }

    /// Lists the names in a directory below the root, sorted.
    pub fn list(&self, abs: impl AsRef<Path>) -> Result<Vec<String>, SysError> {
        let path = self.path(abs);
        let rd = std::fs::read_dir(&path).map_err(|err| SysError::Read {
            path: path.clone(),
            err,
        })?;
        let mut names: Vec<String> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        Ok(names)
    }
}

/// Parses a kernel CPU or node list such as `0-3,8,10-11`.
pub fn parse_list(text: &str) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                if b < a {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().ok()?),
        }
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kernel_lists() {
        assert_eq!(
            parse_list("0-3,8,10-11\n"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_list(""), Some(vec![]));
        assert_eq!(parse_list("3-1"), None);
        assert_eq!(parse_list("a"), None);
    }

    #[test]
    fn root_is_swappable() {
        let dir = std::env::temp_dir().join(format!("tdmap-fsroot-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sys/devices/system/node")).unwrap();
        std::fs::write(dir.join("sys/devices/system/node/online"), "0-1\n").unwrap();
        let fs = FsRoot::new(&dir);
        assert_eq!(fs.read("/sys/devices/system/node/online").unwrap(), "0-1\n");
        let err = fs.read("/sys/nope").unwrap_err();
        assert!(err.to_string().contains("sys/nope"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
