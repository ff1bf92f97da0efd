//! The one error type of the wire decoders.

use std::fmt;

/// Why bytes from the runtime could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    /// Fewer bytes than the item needs (a torn write or a cut file).
    Truncated {
        /// What was being decoded.
        what: &'static str,
        /// Bytes it needs.
        need: usize,
        /// Bytes there were.
        got: usize,
    },
    /// The item does not start with its magic number.
    BadMagic {
        /// What was being decoded.
        what: &'static str,
        /// The magic expected.
        expected: u32,
        /// The bytes found instead.
        found: u32,
    },
    /// A kind or tag this version does not define.
    UnknownKind {
        /// What was being decoded.
        what: &'static str,
        /// The kind found.
        kind: u32,
    },
    /// A field out of its range (a record count above the chunk size, a zero period).
    OutOfRange {
        /// The field's name.
        field: &'static str,
        /// The value found, as text.
        value: String,
    },
    /// A text value that does not parse (the inject settings).
    Malformed {
        /// What was being decoded.
        what: &'static str,
        /// What is wrong with it.
        why: String,
    },
    /// The pipe ended before the runtime sent any announcement: the runtime is not
    /// loaded in the program (a static or set-id program ignores `LD_PRELOAD`).
    NoAnnouncement,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Truncated { what, need, got } => {
                write!(f, "{what} cut short: {got} of {need} bytes")
            }
            WireError::BadMagic {
                what,
                expected,
                found,
            } => write!(f, "{what}: magic {found:#010x}, expected {expected:#010x}"),
            WireError::UnknownKind { what, kind } => write!(f, "{what}: unknown kind {kind}"),
            WireError::OutOfRange { field, value } => write!(f, "{field} out of range: {value}"),
            WireError::Malformed { what, why } => write!(f, "malformed {what}: {why}"),
            WireError::NoAnnouncement => write!(
                f,
                "the runtime announced no handler thread (is it loaded in the program?)"
            ),
        }
    }
}

impl std::error::Error for WireError {}
