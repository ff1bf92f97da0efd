//! The protocol between the runtime (`tdmap-rt`, linked into programs built with `tdmap
//! cc` or preloaded by `tdmap run --sampler inject`) and the `tdmap` binary, in one place
//! that both sides depend on.
//!
//! - [`raw`]: the data file of `tdmap trace` (chunk headers and packed access records)
//!   and its control file (16-byte messages).
//! - [`inject`]: the `TDMAP_INJECT` settings `tdmap run` hands the preloaded runtime.
//! - [`announce`]: the one message the runtime sends back over the pipe named in those
//!   settings, saying which thread is its handler (or that there is none).
//! - [`maps`]: one line of `/proc/PID/maps`, parsed without allocating.
//! - [`pagekey`]: the key of a page across processes (by backing object when shared).
//! - [`pin`]: `tdmap exec`'s CPU list for the runtime, and the runtime's pin records.
//! - [`predict`]: the stride predictor that splits a thread's accesses into runs and literals.
//! - [`times`]: the even spread of access times between clock reads, as blocks.
//! - [`window`]: `tdmap trace --window N:M`, the share of the run that is recorded.
//!
//! No dependencies and no `unsafe`: the runtime links this into every traced program.
//! Every decoder takes untrusted bytes (a file or pipe the program may have damaged) and
//! returns a [`WireError`], never panics; `proptest` checks that on damaged input.

#![forbid(unsafe_code)]

pub mod announce;
mod error;
pub mod inject;
pub mod maps;
pub mod pagekey;
pub mod pin;
pub mod predict;
pub mod raw;
pub mod times;
pub mod window;

pub use announce::{Announcement, AnnouncementReader};
pub use error::WireError;
