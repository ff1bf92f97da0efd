//! kMAF (§3) in user space, in one place: the decisions ([`Monitor`]), their application
//! through an [`Actuator`] ([`Engine`]), and `tdmap run`'s real-time loop ([`online`]).
//! `tdmap run` drives it from perf samples and the live kernel ([`live`]); `tdmap sim`'s
//! kmaf policies drive the same [`Engine`] from simulated faults through a simulated
//! actuator, so what is simulated is what runs. Every difference between `tdmap run`'s
//! rules and the paper's is a named option of [`Config`].
//!
//! Per period: plan threads (kMAF §3.4.1) → pin → Eq. 6 candidates (§3.3) → move →
//! halve → age ×0.75 (§3.4.2).
#![forbid(unsafe_code)]

mod actuator;
mod config;
mod datahome;
mod engine;
mod error;
pub mod keys;
pub mod live;
mod monitor;
pub mod online;
mod outcome;
mod procs;
mod threads;

pub use actuator::{ActError, Actuator, Counts, Failures};
pub use config::{Config, Eq6When, Preset, FIRST_MAPPING_WAIT, PERIOD};
pub use datahome::DataHome;
pub use engine::{Engine, Times, BATCH};
pub use error::MonitorError;
pub use monitor::{Fault, Monitor, ThreadPlan};
pub use outcome::{HandlerReport, Outcome, Period, SampleCounts};
pub use procs::{Process, ProcessTable};
pub use threads::ThreadIndex;
pub mod report;
