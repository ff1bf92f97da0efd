//! The sharing model: kMAF's affinity table, the thread sharing matrix with aging,
//! and the sharing and exclusivity metrics. Pure: no I/O.
//!
//! Events come from a trace reader's chunks ([`SharingModel::feed`]) or one at a time
//! from an online detector; the mapper takes [`SharingMatrix::to_f64_rows`], and
//! `tdmap analyze` reports [`thread_metrics`] and [`data_metrics`].

#![forbid(unsafe_code)]

pub mod compare;
mod error;
pub mod hash;
mod matrix;
mod metrics;
mod migrate;
mod model;
pub mod patterns;
mod table;

pub use compare::{similarity, Rule, Similarity};
pub use error::SharingError;
pub use matrix::{enough_sharing, SharingMatrix};
pub use metrics::{
    data_metrics, heterogeneity_eq1, page_exclusivity, sharing_amount_eq2, thread_metrics,
    DataMetrics, ThreadMetrics,
};
pub use migrate::{migration_target, should_migrate};
pub use model::{Metric, SharingModel};
pub use table::{AffinityTable, Sharers, TableConfig, Touch, EMPTY};
