//! Errors of the syscall and file layer, each naming the call or path that failed.
//!
//! The OS error is part of each message and is not also returned by `source()`: the
//! binary prints an error with its whole chain (anyhow's `{:#}`), so an error in both
//! places printed twice ("Permission denied (os error 13): Permission denied (os error
//! 13)"). [`SysError::errno`] gives the errno to code that needs it.

use std::path::PathBuf;

/// A failed syscall or file read.
#[derive(Debug, thiserror::Error)]
pub enum SysError {
    /// A syscall returned an error.
    #[error("{call} failed: {err}")]
    Syscall {
        /// The syscall's name.
        call: &'static str,
        /// The errno, as an I/O error.
        err: std::io::Error,
    },
    /// A syscall was refused for a reason the user can fix, said in `fix`.
    #[error("{call} failed: {err}; {fix}")]
    Refused {
        /// The syscall's name.
        call: &'static str,
        /// The errno, as an I/O error.
        err: std::io::Error,
        /// What to change (permissions, a sysctl, a kernel option).
        fix: &'static str,
    },
    /// A file under the filesystem root could not be written.
    #[error("cannot write {path}: {err}")]
    Write {
        /// The path, root included.
        path: PathBuf,
        /// Why.
        err: std::io::Error,
    },
    /// A file under the filesystem root could not be read.
    #[error("cannot read {path}: {err}")]
    Read {
        /// The path, root included.
        path: PathBuf,
        /// Why.
        err: std::io::Error,
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
            err: std::io::Error::last_os_error(),
        }
    }

    /// The raw errno, when the error came from the kernel.
    pub fn errno(&self) -> Option<i32> {
        match self {
            SysError::Syscall { err, .. }
            | SysError::Refused { err, .. }
            | SysError::Write { err, .. }
            | SysError::Read { err, .. } => err.raw_os_error(),
            _ => None,
        }
    }
}
