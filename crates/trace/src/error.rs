//! Errors of the trace reader and writer; every error about file contents names a byte offset.
//!
//! An OS error is part of the message and is not also returned by `source()`, so that the
//! binary, which prints the whole chain, prints it once.

use std::path::PathBuf;

/// Why a trace could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The operating system refused a read or write.
    #[error("{path}: {err}")]
    Io {
        /// The trace file.
        path: PathBuf,
        /// The OS error (in the message, not in `source()`).
        err: std::io::Error,
    },
    /// The file does not start with the trace magic.
    #[error("not a tdmap trace (bad magic at byte 0); record one with `tdmap trace`")]
    NotATrace,
    /// The file is of a version this build does not read.
    #[error("unsupported trace version {found} at byte 8 (this tdmap reads versions 1..={supported}); use a matching tdmap")]
    Version {
        /// The version in the file.
        found: u32,
        /// The newest version this build reads.
        supported: u32,
    },
    /// The file ends inside a record.
    #[error("trace truncated at byte {offset}: {what} is cut short; the recording was interrupted, record it again")]
    Truncated {
        /// Where the cut record starts.
        offset: u64,
        /// Which record.
        what: &'static str,
    },
    /// A record is damaged.
    #[error("trace corrupt at byte {offset}: {what}; the file is damaged, record it again")]
    Corrupt {
        /// Where the bad record starts.
        offset: u64,
        /// What is wrong.
        what: String,
    },
    /// An event names a thread the header does not count.
    #[error(
        "trace corrupt at byte {offset}: thread id {thread} but the header says {threads} threads"
    )]
    ThreadOutOfRange {
        /// Where the frame naming it starts.
        offset: u64,
        /// The thread id used.
        thread: u32,
        /// The header's thread count.
        threads: u32,
    },
    /// The writer was used after `finish`.
    #[error("trace writer already finished")]
    Finished,
    /// An argument to the writer is out of range.
    #[error("invalid trace record: {0}")]
    Invalid(String),
}

/// Shorthand for results of this crate.
pub type Result<T> = std::result::Result<T, TraceError>;

impl TraceError {
    /// Collapsed reads (V4 repeats) that name something other than reads of their batch,
    /// or not by increasing index: the writer and `tdmap trace`'s open frames refuse them.
    pub fn bad_repeats() -> TraceError {
        TraceError::Invalid(
            "collapsed reads must name reads of the batch, by increasing index".into(),
        )
    }

    /// The byte offset the error is about, if it is about the file's contents.
    pub fn offset(&self) -> Option<u64> {
        match self {
            TraceError::NotATrace => Some(0),
            TraceError::Version { .. } => Some(8),
            TraceError::Truncated { offset, .. }
            | TraceError::Corrupt { offset, .. }
            | TraceError::ThreadOutOfRange { offset, .. } => Some(*offset),
            _ => None,
        }
    }
}
