//! The sharing matrix as a heatmap, as in kMAF Figure 4 and the trace paper's Figure 2:
//! thread ids on both axes, darker cells for more sharing, and a scale. PNG text uses the
//! public-domain 8×8 bitmap font of the `font8x8` crate, so no system font is needed.
//! `tdmap analyze --heatmap` draws a trace's matrix, `tdmap run --heatmap` the detected one.

use crate::cmd::canvas::Canvas;
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

/// Writes sharing matrix `m` of `metric` as a heatmap at `path` (.png or .svg): what
/// `tdmap analyze` found in a trace, or what `tdmap run` detected online.
pub(crate) fn write_matrix_heatmap(path: &Path, m: &SharingMatrix, metric: Metric) -> Result<()> {
    check_heatmap_path(path)?;
    let cells = m.to_f64_rows();
    let (title, unit) = match metric {
        Metric::Accesses => ("Sharing: accesses to shared blocks", "accesses"),
        Metric::Amount => ("Sharing: shared memory", "bytes"),
    };
    let h = Heatmap {
        n: m.n(),
        cells: &cells,
        title,
        unit,
    };
    let bytes = if heatmap_ext(path) == "png" {
        h.png()?
    } else {
        h.svg().into_bytes()
    };
    crate::paths::replace(path, &bytes).with_context(|| format!("cannot write {}", path.display()))
}

/// What to draw: an n×n row-major matrix, a title and the unit of the scale.
pub struct Heatmap<'a> {
    /// Threads.
    pub n: usize,
    /// Row-major cells.
    pub cells: &'a [f64],
    /// Title line.
    pub title: &'a str,
    /// What a cell counts, under the scale.
    pub unit: &'a str,
}

struct Layout {
    cell: usize,
    left: usize,
    top: usize,
    grid: usize,
    width: usize,
    height: usize,
    tick_every: usize,
    max: f64,
}

const TEXT: usize = 2; // font scale: 16-pixel glyphs

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
        let top = 56;
        Layout {
            cell,
            left,
            top,
            grid,
            width: (left + grid + 200).max(self.title.len() * 8 * TEXT + 40),
            height: top + grid + 80,
            tick_every,
            max: self.max_off_diagonal(),
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

    /// Renders a PNG image.
    pub fn png(&self) -> Result<Vec<u8>, png::EncodingError> {
        let l = self.layout();
        let mut c = Canvas::new(l.width, l.height);
        c.text(16, 16, self.title, TEXT);
        for i in 0..self.n {
            for j in 0..self.n {
                let (x, y) = (l.left + j * l.cell, l.top + i * l.cell);
                let v = self.cells[i * self.n + j];
                let g = if i == j { None } else { Some(shade(v, l.max)) };
                c.fill(x, y, l.cell, l.cell, g.map_or(DIAGONAL, |g| [g, g, g]));
            }
        }
        c.frame(l.left - 1, l.top - 1, l.grid + 2, l.grid + 2);
        self.png_axes(&mut c, &l);
        self.png_scale(&mut c, &l);
        c.encode()
    }

    fn png_axes(&self, c: &mut Canvas, l: &Layout) {
        for k in (0..self.n).step_by(l.tick_every) {
            let s = k.to_string();
            let w = s.len() * 8 * TEXT;
            let mid = k * l.cell + l.cell / 2;
            c.text(l.left - w - 6, l.top + mid - 4 * TEXT, &s, TEXT);
            c.text(l.left + mid - w / 2, l.top + l.grid + 6, &s, TEXT);
        }
        let below = l.top + l.grid + 6 + 8 * TEXT + 10;
        c.text(l.left + l.grid / 2 - 9 * 8, below, "thread id", TEXT);
        c.text(8, l.top - 8 * TEXT - 4, "thread", TEXT);
    }

    fn png_scale(&self, c: &mut Canvas, l: &Layout) {
        let x = l.left + l.grid + 30;
        let h = l.grid.max(100);
        for dy in 0..h {
            let g = shade((h - 1 - dy) as f64 / (h - 1) as f64, 1.0);
            c.fill(x, l.top + dy, 24, 1, [g, g, g]);
        }
        c.frame(x - 1, l.top - 1, 26, h + 2);
        c.text(x + 32, l.top, &short(l.max), TEXT);
        c.text(x + 32, l.top + h / 2 - 8, &short(l.max / 2.0), TEXT);
        c.text(x + 32, l.top + h - 16, "0", TEXT);
        c.text(x - 4, l.top + h + 10, self.unit, 1);
        c.fill(x, l.top + h + 26, 12, 12, DIAGONAL);
        c.text(x + 16, l.top + h + 28, "private", 1);
    }

    /// Renders an SVG document.
    pub fn svg(&self) -> String {
        let l = self.layout();
        let mut s = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"monospace\" font-size=\"14\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"16\" y=\"30\" font-size=\"18\">{}</text>\n",
            l.width, l.height, xml(self.title)
        );
        for i in 0..self.n {
            for j in 0..self.n {
                let g = shade(self.cells[i * self.n + j], l.max);
                let fill = if i == j {
                    "#f0d0d0".to_string()
                } else {
                    format!("rgb({g},{g},{g})")
                };
                s += &format!(
                    "<rect x=\"{}\" y=\"{}\" width=\"{c}\" height=\"{c}\" fill=\"{fill}\"><title>({i},{j}) {}</title></rect>\n",
                    l.left + j * l.cell,
                    l.top + i * l.cell,
                    self.cells[i * self.n + j],
                    c = l.cell
                );
            }
        }
        for k in (0..self.n).step_by(l.tick_every) {
            let mid = k * l.cell + l.cell / 2;
            s += &format!(
                "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{k}</text>\n",
                l.left - 6,
                l.top + mid + 5
            );
            s += &format!(
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{k}</text>\n",
                l.left + mid,
                l.top + l.grid + 20
            );
        }
        let x = l.left + l.grid + 30;
        s += &format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">thread id</text>\n<text x=\"8\" y=\"{}\">thread</text>\n",
            l.left + l.grid / 2,
            l.top + l.grid + 44,
            l.top - 10
        );
        s += &format!(
            "<defs><linearGradient id=\"g\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\"><stop offset=\"0\" stop-color=\"white\"/><stop offset=\"1\" stop-color=\"black\"/></linearGradient></defs>\n<rect x=\"{x}\" y=\"{}\" width=\"24\" height=\"{}\" fill=\"url(#g)\" stroke=\"black\"/>\n",
            l.top,
            l.grid
        );
        s += &format!(
            "<text x=\"{}\" y=\"{}\">{}</text>\n<text x=\"{}\" y=\"{}\">0</text>\n<text x=\"{x}\" y=\"{}\">{}</text>\n</svg>\n",
            x + 32,
            l.top + 12,
            short(l.max),
            x + 32,
            l.top + l.grid,
            l.top + l.grid + 24,
            xml(self.unit)
        );
        s
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
        v => format!("{v:.0}"),
    }
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
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
            unit: "u",
        };
        assert_eq!(h.max_off_diagonal(), 5.0);
    }

    #[test]
    fn png_has_the_layout_size_and_svg_the_cells() {
        let cells = vec![0.0, 1.0, 2.0, 1.0, 0.0, 3.0, 2.0, 3.0, 0.0];
        let h = Heatmap {
            n: 3,
            cells: &cells,
            title: "x",
            unit: "u",
        };
        let png = h.png().unwrap();
        assert_eq!(&png[1..4], b"PNG");
        let l = h.layout();
        let w = u32::from_be_bytes(png[16..20].try_into().unwrap()) as usize;
        assert_eq!(w, l.width);
        let svg = h.svg();
        assert_eq!(
            svg.matches("<rect x=").count(),
            9 + 1,
            "9 cells and the scale bar"
        );
        assert!(svg.contains("thread id"));
    }
}
