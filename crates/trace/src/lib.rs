//! The versioned tdmap trace format: memory-access events and page-fault samples,
//! with a streaming reader, a multi-threaded writer and an invariant checker.
//! Every detector writes it; the analyser, the mapper and the simulator read it.
//!
//! Layout (version 6, little-endian): a header (magic `TDMAPTRC`, version, status,
//! thread count, page and line size, program and machine strings, CRC-32), then frames.
//! Each frame is a 24-byte head (kind, thread, record count, raw and compressed length,
//! CRC-32) and a zstd payload holding one thread's events: accesses as the stride
//! predictor's runs and literals with their times as blocks (`symbols.rs`, read back by
//! `replay.rs`), faults as columns. A finished trace
//! ends with a threads frame, an end frame with totals, and a 16-byte trailer that points
//! at the threads frame so a reader knows the threads before the first event. A trace of
//! several processes has a processes frame right after the threads frame. A trace is
//! Complete only with all three ([`Ending`]): a file cut short reads up to its last whole
//! frame and is Incomplete, whatever its header says.

#![forbid(unsafe_code)]

mod check;
mod chunk;
mod codec;
mod columns;
mod error;
mod open;
mod prefetch;
mod reader;
mod replay;
mod symbols;
mod types;
mod workers;
mod writer;

pub use check::{check, check_bytes, CheckReport, Problem};
pub use chunk::{AccessChunk, Chunk, FaultChunk};
pub use codec::MAGIC;
pub use error::{Result, TraceError};
pub use open::{Frame, OpenFrames, FRAME_ACCESSES};
pub use prefetch::Prefetch;
pub use reader::{Ending, Events, Reader, Totals};
pub use symbols::meta_of;
pub use types::{Access, Event, Fault, Header, ProcessInfo, ThreadInfo, TraceStatus, TraceVersion};
pub use writer::Writer;

/// The format version this build writes (see [`TraceVersion`]).
pub const VERSION: u32 = TraceVersion::V6 as u32;
