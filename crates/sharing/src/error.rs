//! Errors of the sharing model: a bad table shape or an event outside the model's range.

/// Why the model refused a configuration or an event.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SharingError {
    /// The table configuration is unusable.
    #[error("invalid affinity table configuration: {0}")]
    Config(String),
    /// A sharer count that is neither a number from 1 to 64 nor `all`.
    #[error("invalid sharer count {0:?}: give a number from 1 to 64, or all")]
    Sharers(String),
    /// An event names a thread the model was not sized for.
    #[error("thread {thread} is outside the model's {threads} threads")]
    Thread {
        /// The thread id.
        thread: u32,
        /// Threads in the model.
        threads: usize,
    },
    /// An event or a thread placement names a node the table does not have.
    #[error("NUMA node {node} is outside the table's {nodes} nodes")]
    Node {
        /// The node.
        node: u32,
        /// Nodes in the table.
        nodes: usize,
    },
    /// Exclusivity was asked for a page size the table cannot aggregate to.
    #[error("page size {asked} is not a power-of-two multiple of the table's {table}-byte pages")]
    PageSize {
        /// The page size asked for.
        asked: u64,
        /// The table's page size.
        table: u64,
    },
}
