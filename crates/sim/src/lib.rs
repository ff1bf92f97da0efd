//! The trace-driven NUMA machine simulator and its mapping policies, SAMMU included.
//!
//! A [`Simulator`] models a [`tdmap_topo::Topology`]: private L1/L2 per core and a shared
//! cache per package, set-associative and LRU, kept coherent by a MESI directory; a TLB
//! per core; pages on NUMA nodes by first touch, with migrations; memory latency by the
//! node distance matrix; and inter-chip traffic. It replays a stream of [`SimAccess`]
//! chunk by chunk (bounded memory) and asks a [`Policy`] where threads and pages go.
//! [`TraceInput`] replays `tdmap trace` files; [`policy::Kmaf`] is kMAF's online
//! mechanism on `tdmap-sharing` and `tdmap-map`, and [`policy::BestStatic`] the best
//! static mapping (`best-static`, alias `oracle`), chosen by replaying every candidate.

#![forbid(unsafe_code)]

mod access;
mod cache;
mod comparison;
mod config;
mod dir;
mod energy;
mod error;
use tdmap_sharing::hash;
pub mod input;
mod lanes;
mod lockstep;
mod machine;
mod memsys;
mod outer;
pub mod policy;
mod private;
mod replay;
mod rng;
mod setup;
mod shared;
mod sim;
mod stats;
pub mod synth;
mod tlb;

pub use access::SimAccess;
pub use cache::{Cache, State, Word};
pub use comparison::{Comparison, ComparisonSetup, Normalised, PolicyRow};
pub use config::{CacheSpec, Costs, SimConfig, DEFAULT_LATENCIES};
pub use energy::{Energy, EnergyModel};
pub use error::SimError;
pub use input::{first_pass, Profile, RunError, TraceInput, PERIOD_S};
pub use machine::{CacheGeom, Machine, SharedGeom};
pub use memsys::MemSys;
pub use policy::{Actions, Policy, PolicyCtx};
pub use replay::{simulate, simulate_chunks, simulate_many, CHUNK};
pub use rng::SplitMix64;
pub use sim::Simulator;
pub use stats::{MemStats, SimReport};
pub use tlb::{Tlb, TlbEntry};
