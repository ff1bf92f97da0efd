//! Errors of the simulator: a machine it cannot model, a bad configuration, or an input
//! stream that does not fit the run.

/// What can go wrong when building or feeding a simulation.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SimError {
    /// The coherence directory keeps holders in 64-bit masks.
    #[error(
        "the machine has {cores} cores; the simulator models at most 64: pick a smaller --machine"
    )]
    TooManyCores {
        /// Cores of the machine.
        cores: usize,
    },
    /// An access names a thread beyond the count given at the start.
    #[error("access by thread {thread}, but the run was set up for {threads} threads: give the trace's real thread count")]
    ThreadOutOfRange {
        /// The thread of the access.
        thread: u32,
        /// The thread count of the run.
        threads: usize,
    },
    /// A run needs at least one thread.
    #[error("no threads to simulate: the trace is empty")]
    NoThreads,
    /// A parameter is out of range.
    #[error("bad simulator configuration: {why}")]
    BadConfig {
        /// Which parameter and why.
        why: String,
    },
    /// A policy returned a mapping of the wrong shape.
    #[error("policy {policy} returned {why}")]
    BadPolicyOutput {
        /// The policy.
        policy: String,
        /// What was wrong.
        why: String,
    },
}
