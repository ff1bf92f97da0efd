//! The sharing model: kMAF's affinity table, the thread sharing matrix with aging,
//! and the sharing and exclusivity metrics. Pure: no I/O.
//!
//! Events come from a trace reader's chunks ([`SharingModel::feed`]) or one at a time
//! from an online detector; the mapper takes [`SharingMatrix::to_f64_rows`], and
//! `tdmap analyze` reports [`thread_metrics`] and [`data_metrics`].

#![forbid(unsafe_code)]

pub mod compare;
mod error;
mod from_trace;
pub mod hash;
mod matrix;
mod metrics;
mod migrate;
mod model;
mod model_file;
mod pages;
pub mod patterns;
mod report;
mod table;

pub use compare::{similarity, Rule, Similarity};
pub use error::SharingError;
pub use from_trace::{thread_nodes, FromTraceError, Grain};
pub use matrix::{age_weights, enough_sharing, SharingMatrix, AGING};
pub use metrics::{
    data_metrics, heterogeneity_eq1, page_exclusivity, sharing_amount_eq2, thread_metrics,
    DataMetrics, ThreadMetrics,
};
pub use migrate::{migration_target, should_migrate};
pub use model::{Metric, SharingModel};
pub use model_file::{ModelFile, ModelPage, ModelThread};
pub use pages::Pages;
pub use report::{AnalyzeReport, ReportSetup};
pub use table::{AffinityTable, Sharers, TableConfig, Touch, EMPTY};
pub use tdmap_format::FormatError;
