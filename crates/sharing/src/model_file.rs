//! The model file: what `tdmap trace --model-only` writes (the sharing model fed while
//! the program ran, for programs too large to trace) and `tdmap map --model` reads.
//! Format `tdmap-model`, described in `docs/formats.md`.

use crate::AnalyzeReport;
use serde::{Deserialize, Serialize};
use std::path::Path;
use tdmap_format::{FormatError, Versioned};

/// A run's sharing model: its matrices, every touched page's NUMA vector, and what
/// `tdmap analyze --json` would report for a trace of the same run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelFile {
    /// Always `tdmap-model`.
    pub format: String,
    /// [`ModelFile::VERSION`].
    pub version: u32,
    /// The command line that ran.
    pub program: Vec<String>,
    /// `Complete`, `Crashed` or `Incomplete`, as a trace's status.
    pub status: String,
    /// The program's exit code, if it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    /// The machine the program ran on: `local`, as in a trace's header.
    pub machine: String,
    /// The OS page size.
    pub page_size: u64,
    /// The program's threads, by id.
    pub threads: Vec<ModelThread>,
    /// Accesses the line filter dropped (with --filter-lines).
    pub filtered: u64,
    /// Heap bytes of the affinity table at the end.
    pub model_bytes: usize,
    /// Wall time of the run.
    pub run_seconds: f64,
    /// Rows of the matrix of accesses to shared lines (trace paper §III-B, first metric).
    pub matrix_accesses: Vec<Vec<u64>>,
    /// Rows of the matrix of shared bytes (trace paper §III-B, second metric).
    pub matrix_amount: Vec<Vec<u64>>,
    /// Every touched page: its NUMA vector and who touched it first.
    pub pages: Vec<ModelPage>,
    /// What `tdmap analyze --json` reports for a trace of the same run (kMAF metrics).
    pub analysis: AnalyzeReport,
}

/// One thread of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelThread {
    /// Its id, in creation order from 0.
    pub id: u32,
    /// The kernel's tid.
    pub os_tid: u64,
}

/// One touched page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelPage {
    /// Address of the page's first byte.
    pub addr: u64,
    /// Accesses to the page from each NUMA node (kMAF's NUMA vector).
    pub nv: Vec<u32>,
    /// The thread that touched it first.
    pub first_thread: Option<u32>,
    /// That thread's node then.
    pub first_node: Option<u32>,
}

impl Versioned for ModelFile {
    const FORMAT: &'static str = "tdmap-model";
    /// 1: the first versioned model; before it, `"format": "tdmap-model-v1"` and no
    /// version field, otherwise the same fields.
    const VERSION: u32 = 1;
    const WRITER: &'static str = "tdmap trace --model-only -o FILE -- PROGRAM";

    fn check(&self) -> Result<(), String> {
        let n = self.matrix_accesses.len();
        let square = |m: &[Vec<u64>]| m.len() == n && m.iter().all(|r| r.len() == n);
        if n == 0 || !square(&self.matrix_accesses) || !square(&self.matrix_amount) {
            return Err("\"matrix_accesses\" and \"matrix_amount\" must be n×n, n ≥ 1".into());
        }
        Ok(())
    }
}

impl ModelFile {
    /// Reads and checks a model file; errors name the file and the field.
    pub fn read(path: &Path) -> Result<ModelFile, FormatError> {
        tdmap_format::read(path)
    }

    /// Threads of the matrices.
    pub fn n(&self) -> usize {
        self.matrix_accesses.len()
    }

    /// The matrix of accesses to shared lines, row-major, as the mapper takes it.
    pub fn accesses_f64(&self) -> Vec<f64> {
        self.matrix_accesses
            .iter()
            .flatten()
            .map(|&v| v as f64)
            .collect()
    }
}
