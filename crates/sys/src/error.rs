//! Errors of the syscall and file layer, each naming the call or path that failed.

use std::path::PathBuf;

/// A failed syscall or file read.
#[derive(Debug, thiserror::Error)]
pub enum SysError {
    /// A syscall returned an error.
    #[error("{call} failed: {source}")]
    Syscall {
        /// The syscall's name.
        call: &'static str,
        /// The errno, as an I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A syscall was refused for a reason the user can fix, said in `fix`.
    #[error("{call} failed: {source}; {fix}")]
    Refused {
        /// The syscall's name.
        call: &'static str,
        /// The errno, as an I/O error.
        #[source]
        source: std::io::Error,
        /// What to change (permissions, a sysctl, a kernel option).
        fix: &'static str,
    },
    /// A file under the filesystem root could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The path, root included.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file under the filesystem root could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The path, root included.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file was read but its content is not what the kernel writes.
    #[error("cannot parse {path}: {what}")]
    Parse {
        /// The path, root included.
        path: PathBuf,
        /// What was wrong.
        what: String,
    },
    /// An argument cannot be passed to the kernel (e.g. a CPU beyond the mask size).
    #[error("invalid argument to {call}: {what}")]
    Invalid {
        /// The syscall's name.
        call: &'static str,
        /// What was wrong.
        what: String,
    },
}

impl SysError {
    /// Wraps the current errno for `call`.
    pub fn last_os(call: &'static str) -> Self {
        SysError::Syscall {
            call,
            source: std::io::Error::last_os_error(),
        }
    }

    /// The raw errno, when the error came from the kernel.
    pub fn errno(&self) -> Option<i32> {
        match self {
            SysError::Syscall { source, .. }
            | SysError::Refused { source, .. }
            | SysError::Write { source, .. }
            | SysError::Read { source, .. } => source.raw_os_error(),
            _ => None,
        }
    }
}
