//! The sharing matrix as a heatmap, as in kMAF Figure 4 and the trace paper's Figure 2:
//! thread ids on both axes, darker cells for more sharing, and a scale. When the threads'
//! places are known (a machine and a placement), the threads are ordered by package and
//! node and the boundaries drawn between them. PNG text uses the public-domain 8×8 bitmap
//! font of the `font8x8` crate, so no system font is needed. `tdmap analyze --heatmap`
//! draws a trace's matrix, `tdmap run --heatmap` the detected one, and `tdmap report`
//! inlines the SVG.

mod places;
mod png;
mod svg;

pub use places::{Edge, Places};

use crate::cmd::canvas::TEXT;
use crate::exit::input;
use anyhow::{Context, Result};
use std::path::Path;
use tdmap_sharing::{Metric, SharingMatrix};

/// Checks that `path` names a heatmap format tdmap writes (.png or .svg), before any work.
pub(crate) fn check_heatmap_path(path: &Path) -> Result<()> {
    match heatmap_ext(path).as_str() {
        "png" | "svg" => Ok(()),
        _ => Err(input(format!(
            "--heatmap {}: name a .png or .svg file",
            path.display()
        ))),
    }
}

fn heatmap_ext(path: &Path) -> String {
    path.extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// What a matrix's cells count, which names the heatmap and its unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// A trace's matrix of this metric (`tdmap analyze`): every access was recorded.
    Trace(Metric),
    /// `tdmap run`'s matrix: page-fault samples on sub-blocks another thread also
    /// faulted on (a sample of the accesses, not the accesses).
    FaultSamples,
}

impl Counted {
    /// The title and the unit of the scale.
    pub fn title_unit(self) -> (&'static str, &'static str) {
        match self {
            Counted::Trace(Metric::Accesses) => ("Sharing: accesses to shared blocks", "accesses"),
            Counted::Trace(Metric::Amount) => ("Sharing: shared memory", "bytes"),
            Counted::FaultSamples => (
                "Sharing: page-fault samples on shared sub-blocks",
                "samples",
            ),
        }
    }
}

/// Writes sharing matrix `m` as a heatmap at `path` (.png or .svg), titled by what it
/// counts, with `program`'s name and the threads' places when known.
pub(crate) fn write_matrix_heatmap(
    path: &Path,
    m: &SharingMatrix,
    counted: Counted,
    program: &str,
    places: Option<&Places>,
) -> Result<()> {
    check_heatmap_path(path)?;
    let png = heatmap_ext(path) == "png";
    let bytes = of_matrix(m, counted, program, places, |h| {
        if png {
            h.png()
        } else {
            Ok(h.svg().into_bytes())
        }
    })?;
    crate::paths::replace(path, &bytes).with_context(|| format!("cannot write {}", path.display()))
}

/// Calls `draw` with the heatmap of sharing matrix `m`, titled by what it counts, with
/// `program`'s name and the threads' places when known.
pub(crate) fn of_matrix<R>(
    m: &SharingMatrix,
    counted: Counted,
    program: &str,
    places: Option<&Places>,
    draw: impl FnOnce(&Heatmap<'_>) -> R,
) -> R {
    let cells = m.to_f64_rows();
    let (title, unit) = counted.title_unit();
    draw(&Heatmap {
        n: m.n(),
        cells: &cells,
        title,
        program,
        unit,
        places,
    })
}

/// What to draw: an n×n row-major matrix, a title, the program and the unit of the scale.
pub struct Heatmap<'a> {
    /// Threads.
    pub n: usize,
    /// Row-major cells.
    pub cells: &'a [f64],
    /// Title line.
    pub title: &'a str,
    /// The program the matrix is of, under the title (empty: none).
    pub program: &'a str,
    /// What a cell counts, under the scale.
    pub unit: &'a str,
    /// Where each thread ran: threads ordered by place, boundaries drawn.
    pub places: Option<&'a Places>,
}

/// Positions and sizes shared by the PNG and the SVG.
struct Layout {
    cell: usize,
    left: usize,
    top: usize,
    grid: usize,
    width: usize,
    height: usize,
    tick_every: usize,
    max: f64,
    /// Thread shown at each position.
    order: Vec<usize>,
    /// Boundaries between positions.
    edges: Vec<(usize, Edge)>,
    /// Node groups: (first position, positions, label).
    groups: Vec<(usize, usize, String)>,
    /// x of the scale bar.
    scale_x: usize,
}

/// The axes' title, the same on both.
const AXIS: &str = "thread id";

impl Heatmap<'_> {
    fn layout(&self) -> Layout {
        let n = self.n.max(1);
        let cell = (640 / n).clamp(4, 48);
        let grid = cell * n;
        let label = (n.saturating_sub(1)).to_string().len() * 8 * TEXT + 8;
        let tick_every = (1..=n)
            .find(|k| k * cell >= label.min(16 * TEXT + 8))
            .unwrap_or(n)
            .max(1);
        let left = label + 40;
        let top = 72;
        let places = self.places.filter(|p| p.splits());
        let order = places.map_or_else(|| (0..self.n).collect(), |p| p.order(self.n));
        let edges = places.map_or_else(Vec::new, |p| p.edges(&order));
        let groups = places.map_or_else(Vec::new, |p| p.groups(&order));
        let scale_x = left + grid + if groups.is_empty() { 30 } else { 70 };
        let title_w = self.title.len().max(self.program.len()) * 8 * TEXT + 40;
        Layout {
            cell,
            left,
            top,
            grid,
            width: (scale_x + 170).max(title_w),
            height: top + grid.max(100) + 110,
            tick_every,
            max: self.max_off_diagonal(),
            order,
            edges,
            groups,
            scale_x,
        }
    }

    /// The scale's top: the largest cell off the diagonal (the diagonal is private data and
    /// would swamp the sharing otherwise).
    fn max_off_diagonal(&self) -> f64 {
        let n = self.n;
        (0..n * n)
            .filter(|k| k / n != k % n)
            .map(|k| self.cells[k])
            .fold(0.0, f64::max)
    }

    /// The cell at drawing positions (a, b), with the threads it is of.
    fn cell(&self, l: &Layout, a: usize, b: usize) -> (usize, usize, f64) {
        let (i, j) = (l.order[a], l.order[b]);
        (i, j, self.cells[i * self.n + j])
    }

    /// The program line under the title.
    fn subtitle(&self) -> String {
        if self.program.is_empty() {
            String::new()
        } else {
            format!("program: {}", self.program)
        }
    }
}

/// Light red for the diagonal: private data, not drawn to the sharing scale.
const DIAGONAL: [u8; 3] = [240, 208, 208];

/// Grey level for `v` on a 0..max scale: white for none, black for the most.
fn shade(v: f64, max: f64) -> u8 {
    if max <= 0.0 {
        return 255;
    }
    255 - (255.0 * (v / max).clamp(0.0, 1.0)).round() as u8
}

/// A number in at most 6 characters: 950, 12.3k, 4.56M.
fn short(v: f64) -> String {
    match v {
        v if v >= 1e9 => format!("{:.3}G", v / 1e9),
        v if v >= 1e6 => format!("{:.3}M", v / 1e6),
        v if v >= 1e4 => format!("{:.1}k", v / 1e3),
        // A small scale's middle (3 / 2) would round to a wrong whole number.
        v if v < 10.0 && v.fract() != 0.0 => format!("{v:.1}"),
        v => format!("{v:.0}"),
    }
}

/// `s` escaped for XML text and attribute values.
pub(crate) fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn darker_means_more_and_the_diagonal_is_off_scale() {
        assert_eq!(shade(0.0, 10.0), 255);
        assert_eq!(shade(10.0, 10.0), 0);
        assert!(shade(3.0, 10.0) > shade(7.0, 10.0));
        let cells = [1000.0, 5.0, 5.0, 1000.0];
        let h = Heatmap {
            n: 2,
            cells: &cells,
            title: "t",
            program: "",
            unit: "u",
            places: None,
        };
        assert_eq!(h.max_off_diagonal(), 5.0);
    }

    #[test]
    fn a_small_scale_keeps_its_half() {
        assert_eq!(short(1.5), "1.5");
        assert_eq!(short(21.0), "21");
        assert_eq!(short(12_345.0), "12.3k");
    }

    #[test]
    fn run_heatmaps_count_samples_not_accesses() {
        let (title, unit) = Counted::FaultSamples.title_unit();
        assert!(title.contains("page-fault samples"), "{title}");
        assert_eq!(unit, "samples");
        assert_eq!(Counted::Trace(Metric::Accesses).title_unit().1, "accesses");
    }

    #[test]
    fn markup_in_a_program_name_is_escaped() {
        assert_eq!(
            xml("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
