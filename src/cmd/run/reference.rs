//! `tdmap run --reference FILE`: the sharing matrix of a `tdmap analyze --json` report
//! (an exact trace's), which the report compares the online detection with.

use crate::exit::input;
use anyhow::Result;
use serde::Deserialize;
use std::path::Path;
use tdmap_monitor::report::ReferenceComparison;
use tdmap_sharing::{Metric, SharingMatrix};

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

/// The part of `tdmap analyze --json` a reference needs.
#[derive(Deserialize)]
struct Analysis {
    metric: String,
    table: Table,
    matrix: Cells,
}

#[derive(Deserialize)]
struct Table {
    sub_block: u64,
}

#[derive(Deserialize)]
struct Cells {
    n: usize,
    cells: Vec<u64>,
}

/// Reads a reference; every problem is an input error naming the file and the fix.
pub fn read(path: &Path) -> Result<Reference> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| input(format!("cannot read the reference {name}: {e}")))?;
    let fix = "make one with `tdmap analyze --json --metric amount --block 1024 TRACE > FILE`";
    let a: Analysis = serde_json::from_str(&text).map_err(|e| {
        input(format!(
            "{name} is not a `tdmap analyze --json` report with a matrix ({e}); {fix}"
        ))
    })?;
    let metric = match a.metric.as_str() {
        "Accesses" => Metric::Accesses,
        "Amount" => Metric::Amount,
        m => return Err(input(format!("{name}: unknown metric {m:?}; {fix}"))),
    };
    let matrix = SharingMatrix::from_rows(a.matrix.n, a.matrix.cells).ok_or_else(|| {
        input(format!(
            "{name}: the matrix is not a symmetric n×n one; {fix}"
        ))
    })?;
    Ok(Reference {
        file: name,
        metric,
        block: a.table.sub_block,
        matrix,
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
