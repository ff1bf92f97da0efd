//! Errors of the monitor's decisions.

/// Why a decision could not be made.
#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    /// The sharing model refused an event or its configuration.
    #[error("sharing model: {0}")]
    Sharing(#[from] tdmap_sharing::SharingError),
    /// The mapping algorithm failed.
    #[error("thread mapping: {0}")]
    Map(#[from] tdmap_map::MapError),
}
