//! Errors of the kMAF loop. Each variant's source is in the chain, not in its message, so
//! that the binary prints it once.

/// Why the loop could not go on.
#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    /// The sharing model refused an event or its configuration.
    #[error("sharing model")]
    Sharing(#[from] tdmap_sharing::SharingError),
    /// The mapping algorithm failed.
    #[error("thread mapping")]
    Map(#[from] tdmap_map::MapError),
    /// Reading samples or watching the program failed.
    #[error("watching the program")]
    Sys(#[from] tdmap_sys::SysError),
}
