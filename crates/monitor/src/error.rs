//! Errors of the monitor's decisions.
//!
//! The library's error is part of the message and is not also returned by `source()`,
//! so that the binary, which prints the whole chain, prints it once.

/// Why the loop could not go on.
#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    /// The sharing model refused an event or its configuration.
    #[error("sharing model: {0}")]
    Sharing(tdmap_sharing::SharingError),
    /// The mapping algorithm failed.
    #[error("thread mapping: {0}")]
    Map(tdmap_map::MapError),
    /// Reading samples or watching the program failed.
    #[error("watching the program: {0}")]
    Sys(tdmap_sys::SysError),
}

impl From<tdmap_sys::SysError> for MonitorError {
    fn from(e: tdmap_sys::SysError) -> Self {
        MonitorError::Sys(e)
    }
}

impl From<tdmap_sharing::SharingError> for MonitorError {
    fn from(e: tdmap_sharing::SharingError) -> Self {
        MonitorError::Sharing(e)
    }
}

impl From<tdmap_map::MapError> for MonitorError {
    fn from(e: tdmap_map::MapError) -> Self {
        MonitorError::Map(e)
    }
}
