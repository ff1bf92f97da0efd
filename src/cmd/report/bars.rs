//! A plain SVG bar chart for the page (exclusivity histogram, timeline): labelled axes,
//! each value over its bar when there is room, and zero bars drawn as a thin mark so that
//! "none" stays visible, as in the PNG figures.

use super::page::esc;
use std::fmt::Write;

/// One chart: bars of `values` over `labels`.
pub struct Bars<'a> {
    /// The element id.
    pub id: &'a str,
    /// The x label of each bar.
    pub labels: &'a [String],
    /// The bars.
    pub values: &'a [f64],
    /// The y axis's title (with its unit).
    pub y_title: &'a str,
    /// The x axis's title.
    pub x_title: &'a str,
    /// The bars' colour (CSS).
    pub colour: &'a str,
}

const LEFT: usize = 70;
const TOP: usize = 28;
const PLOT_H: usize = 150;

impl Bars<'_> {
    /// The chart as an inline `<svg>`.
    pub fn svg(&self) -> String {
        let n = self.values.len().max(1);
        let bw = (720 / n).clamp(3, 48);
        let width = LEFT + n * bw + 20;
        let height = TOP + PLOT_H + 50;
        let max = self.values.iter().copied().fold(0.0, f64::max);
        let top = if max > 0.0 { max * 1.1 } else { 1.0 };
        let y_of = |v: f64| TOP + PLOT_H - ((v / top).clamp(0.0, 1.0) * PLOT_H as f64) as usize;
        let mut s = format!(
            "<svg id=\"{}\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\n<text x=\"4\" y=\"14\">{}</text>\n<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{}\" height=\"{PLOT_H}\" fill=\"none\" stroke=\"#888\"/>\n",
            esc(self.id),
            esc(self.y_title),
            n * bw
        );
        let ticks: &[f64] = if max > 0.0 {
            &[0.0, max / 2.0, max]
        } else {
            &[0.0]
        };
        for &v in ticks {
            let _ = writeln!(
                s,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
                LEFT - 4,
                y_of(v) + 4,
                num(v)
            );
        }
        let every = (40 / bw).max(1);
        for (k, &v) in self.values.iter().enumerate() {
            let x = LEFT + k * bw + 1;
            let y = y_of(v).min(TOP + PLOT_H - 2);
            let label = self.labels.get(k).map_or("", String::as_str);
            let _ = writeln!(
                s,
                "<rect class=\"bar\" x=\"{x}\" y=\"{y}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"{}\"><title>{}: {}</title></rect>",
                bw.saturating_sub(2).max(1),
                TOP + PLOT_H - y,
                esc(self.colour),
                if v == 0.0 { "#333" } else { "none" },
                esc(label),
                num(v)
            );
            if bw >= 28 {
                let _ = writeln!(
                    s,
                    "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"10\">{}</text>",
                    x + bw / 2,
                    y.saturating_sub(3).max(TOP + 10),
                    num(v)
                );
            }
            if k % every == 0 {
                let _ = writeln!(
                    s,
                    "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                    x + bw / 2,
                    TOP + PLOT_H + 16,
                    esc(label)
                );
            }
        }
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n</svg>",
            LEFT + n * bw / 2,
            TOP + PLOT_H + 40,
            esc(self.x_title)
        );
        s
    }
}

/// A value in a few characters: 12, 3.5, 12.3k.
fn num(v: f64) -> String {
    match v {
        v if v >= 1e6 => format!("{:.1}M", v / 1e6),
        v if v >= 1e4 => format!("{:.1}k", v / 1e3),
        v if v.fract() == 0.0 => format!("{v:.0}"),
        v => format!("{v:.1}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zero_bar_is_a_visible_outlined_mark() {
        let labels = vec!["a".to_string(), "b".to_string()];
        let b = Bars {
            id: "t",
            labels: &labels,
            values: &[0.0, 5.0],
            y_title: "y",
            x_title: "x",
            colour: "#36c",
        };
        let svg = b.svg();
        let zero = svg.split("<rect class=\"bar\"").nth(1).unwrap();
        assert!(zero.contains("height=\"2\""), "{zero}");
        assert!(zero.contains("stroke=\"#333\""), "{zero}");
        assert_eq!(svg.matches("<rect class=\"bar\"").count(), 2);
    }
}
