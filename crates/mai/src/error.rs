//! libmai's errors and the errno each one sets (the table in include/mai.h).

/// Why a libmai call failed.
#[derive(Debug, thiserror::Error)]
pub enum MaiError {
    /// The pointer was not returned by `mai_alloc_*` (or was already freed): EFAULT.
    #[error("{0:#x} is not an array allocated by mai_alloc_*")]
    NotMai(usize),
    /// A size, count or dimension is zero or overflows: EINVAL.
    #[error("invalid argument: {0}")]
    Invalid(String),
    /// A node that the machine does not have: ENODEV.
    #[error("node {0} does not exist on this machine")]
    NoNode(i64),
    /// A CPU that the machine does not have: ENODEV.
    #[error("CPU {0} does not exist on this machine")]
    NoCpu(i64),
    /// A `tdmap map --format json` file that cannot be read (the OS's errno) or is not a
    /// mapping of this version (EINVAL).
    #[error(transparent)]
    Format(#[from] tdmap_format::FormatError),
    /// The machine could not be discovered: EIO.
    #[error("cannot discover the machine: {0}")]
    Topology(String),
    /// A page did not reach its node: the page's errno (from move_pages' status).
    #[error("page {page} did not move to node {node}: errno {errno}")]
    Moved {
        /// Index of the page in the array.
        page: usize,
        /// Its target node.
        node: usize,
        /// The negative status, as a positive errno.
        errno: i32,
    },
    /// A syscall failed.
    #[error(transparent)]
    Sys(#[from] tdmap_sys::SysError),
    /// A panic was caught at the FFI boundary (a libmai bug): EIO.
    #[error("internal error")]
    Panic,
}

impl MaiError {
    /// The errno documented in mai.h for this error.
    pub fn errno(&self) -> i32 {
        match self {
            MaiError::NotMai(_) => libc::EFAULT,
            MaiError::Invalid(_) => libc::EINVAL,
            MaiError::NoNode(_) | MaiError::NoCpu(_) => libc::ENODEV,
            MaiError::Format(tdmap_format::FormatError::Read { err, .. }) => {
                err.raw_os_error().unwrap_or(libc::EIO)
            }
            MaiError::Format(_) => libc::EINVAL,
            MaiError::Topology(_) | MaiError::Panic => libc::EIO,
            MaiError::Moved { errno, .. } => *errno,
            MaiError::Sys(e) => e.errno().unwrap_or(libc::EINVAL),
        }
    }
}

/// Shorthand for libmai results.
pub type Result<T> = std::result::Result<T, MaiError>;
