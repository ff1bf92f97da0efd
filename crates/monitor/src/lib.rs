//! The decisions of `tdmap run` (kMAF §3 in user space), apart from the kernel: samples
//! of page faults come in as plain [`Fault`]s, and out come a thread mapping to apply and
//! the pages to move. Pure: the binary drains the sampler and applies the decisions
//! through tdmap-sys, so every rule here is tested on replayed samples.
//!
//! Per period the binary calls [`Monitor::ingest`] with the drained samples, then
//! [`Monitor::plan_threads`] (kMAF §3.4.1), [`Monitor::page_candidates`] and
//! [`Monitor::plan_pages`] (kMAF §3.3, Eq. 6), [`Monitor::moved`] for each page it moved,
//! and [`Monitor::age`] (kMAF §3.4.2).

#![forbid(unsafe_code)]

mod error;
mod monitor;
mod threads;

pub use error::MonitorError;
pub use monitor::{Config, Fault, Monitor, ThreadPlan};
pub use threads::ThreadIndex;
