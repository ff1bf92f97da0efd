//! `tdmap run --reference FILE`: the sharing matrix of a `tdmap analyze --json` report
//! (an exact trace's), which the report compares the online detection with.

use crate::exit::input;
use anyhow::Result;
use std::path::Path;
use tdmap_monitor::report::ReferenceComparison;
use tdmap_sharing::{AnalyzeReport, Metric, SharingMatrix};

/// A reference sharing matrix and how it was made.
#[derive(Debug, Clone)]
pub struct Reference {
    /// The file it came from, as given.
    pub file: String,
    /// The metric of its matrix.
    pub metric: Metric,
    /// Bytes per block it was analysed at.
    pub block: u64,
    /// The matrix.
    pub matrix: SharingMatrix,
}

/// Reads a reference: a `tdmap analyze --json` report (format `tdmap-analyze`); every
/// problem is an input error naming the file and the field.
pub fn read(path: &Path) -> Result<Reference> {
    let a = AnalyzeReport::read(path).map_err(input)?;
    Ok(Reference {
        file: path.display().to_string(),
        metric: a.metric,
        block: a.table.sub_block,
        matrix: a.matrix,
    })
}

/// The comparison of a detection with a [`Reference`], as the run report holds it
/// (tdmap-monitor's `ReferenceComparison`).
pub struct Comparison;

impl Comparison {
    /// Compares `detected` (made with `sub_block`-byte sub-blocks) with `r`.
    pub fn of(r: &Reference, detected: &SharingMatrix, sub_block: u32) -> ReferenceComparison {
        ReferenceComparison {
            file: r.file.clone(),
            metric: r.metric,
            block: r.block,
            like_for_like: r.block == u64::from(sub_block),
            threads: r.matrix.n(),
            similarity: tdmap_sharing::similarity(detected, &r.matrix),
        }
    }

    /// One line for the text report.
    pub fn line(c: &ReferenceComparison, sub_block: u32) -> String {
        let what = match c.similarity {
            Some(s) => format!("similarity {:.3} ({:?})", s.value, s.rule).to_lowercase(),
            None => "no similarity: the reference has fewer than two threads".into(),
        };
        let mut l = format!(
            "reference {} ({:?}, {} threads, {}-byte blocks): {what}",
            c.file, c.metric, c.threads, c.block
        );
        if !c.like_for_like {
            l += &format!(
                "; not like for like: detection used {sub_block}-byte sub-blocks, so pass --block {sub_block} to tdmap analyze"
            );
        }
        l
    }
}
