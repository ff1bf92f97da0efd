//! A folder for one test's files that goes when the test ends, passed or panicked, so
//! that test runs leave nothing behind in the system's temporary directory. The
//! workspace has no `tempfile` crate: this one file serves `tests/common/mod.rs` and,
//! through `#[path]`, the unit and integration tests of crates without a common module.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// A new, empty folder under the temporary directory, removed with its contents on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    /// Creates `TMPDIR/{prefix}-{pid}-{n}`, with `n` fresh on each call, so that tests
    /// running in parallel never share, or remove, each other's folders; a name already
    /// taken (left by an earlier process of the same pid) is skipped, not reused, as
    /// it is not this test's to remove.
    pub fn new(prefix: &str) -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        loop {
            let n = N.fetch_add(1, Ordering::Relaxed);
            let dir = std::env::temp_dir().join(format!("{prefix}-{}-{n}", std::process::id()));
            match std::fs::create_dir(&dir) {
                Ok(()) => return TempDir(dir),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => panic!("cannot create {}: {e}", dir.display()),
            }
        }
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        // Errors are ignored: a drop while a test panics must not panic again, and a
        // folder that cannot be removed is at worst a leftover.
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
