//! The grouped bar chart of `tdmap sim --plot`, like the papers' Figures 7-9: one group
//! per figure (time, L3 misses, inter-chip traffic, estimated energy), one bar per policy, each relative to
//! `os`, with a line at 1.0, the y axis titled, each bar's value printed above it and a
//! zero bar drawn as a visible mark.

use crate::cmd::canvas::{Canvas, TEXT};
use tdmap_sim::Normalised;

const PALETTE: [[u8; 3]; 10] = [
    [90, 90, 90],
    [31, 119, 180],
    [255, 127, 14],
    [44, 160, 44],
    [214, 39, 40],
    [148, 103, 189],
    [140, 86, 75],
    [227, 119, 194],
    [23, 190, 207],
    [188, 189, 34],
];
/// Reads one figure of a policy.
type Figure = fn(&Normalised) -> f64;

const BAR: usize = 40;
const GAP: usize = 36;
const LEFT: usize = 84;
const TOP: usize = 84;
const PLOT_H: usize = 300;
/// Height of the mark that stands for a zero bar, so that it does not vanish.
const ZERO_MARK: usize = 3;
/// The y axis's title.
const Y_TITLE: &str = "relative to os (1.0 = os; lower is better)";

/// Draws the chart of `rows` (policy, figures relative to os, remote ratio) as PNG bytes.
pub fn chart(
    rows: &[(String, Normalised, f64)],
    title: &str,
) -> Result<Vec<u8>, png::EncodingError> {
    let groups: [(&str, Figure); 4] = [
        ("time", |n| n.time),
        ("L3 misses", |n| n.l3_misses),
        ("inter-chip", |n| n.interchip),
        ("energy", |n| n.energy),
    ];
    let finite = |v: f64| if v.is_finite() { v } else { 0.0 };
    let top = rows
        .iter()
        .flat_map(|r| groups.iter().map(move |g| finite(g.1(&r.1))))
        .fold(1.2f64, f64::max);
    let top = (top * 5.0).ceil() / 5.0; // a multiple of 0.2
    let group_w = rows.len() * BAR + GAP;
    let plot_w = groups.len() * group_w + GAP;
    let legend_w = rows
        .iter()
        .map(|r| legend_label(r).len() * 8 * TEXT + 40)
        .max()
        .unwrap_or(0);
    let width = (LEFT + plot_w + legend_w).max(title.len() * 8 * TEXT + 40);
    let height = TOP + PLOT_H + 90;
    let mut c = Canvas::new(width, height);
    c.text(16, 12, title, TEXT);
    c.text(16, TOP - 8 * TEXT - 24, Y_TITLE, TEXT);
    let y_of = |v: f64| TOP + PLOT_H - ((v / top).clamp(0.0, 1.0) * PLOT_H as f64) as usize;
    axis(&mut c, top, plot_w, &y_of);
    for (g, (label, get)) in groups.iter().enumerate() {
        let x0 = LEFT + GAP + g * group_w;
        for (k, (_, n, _)) in rows.iter().enumerate() {
            bar(
                &mut c,
                x0 + k * BAR,
                get(n),
                PALETTE[k % PALETTE.len()],
                &y_of,
            );
        }
        let lx = x0 + (rows.len() * BAR).saturating_sub(label.len() * 8 * TEXT) / 2;
        c.text(lx, TOP + PLOT_H + 12, label, TEXT);
    }
    // The os level, dashed.
    let y1 = y_of(1.0);
    for x in (LEFT..LEFT + plot_w).step_by(8) {
        c.fill(x, y1, 4, 1, [0; 3]);
    }
    legend(&mut c, rows, LEFT + plot_w + 16);
    c.text(
        LEFT,
        TOP + PLOT_H + 12 + 8 * TEXT + 16,
        "SIMULATED (tdmap-sim model), not measured",
        TEXT,
    );
    c.encode()
}

/// One bar at `x` for value `v`, with the value printed above it. A zero bar is a thin
/// outlined mark on the axis, and an infinite one (os had none of it) a full bar
/// labelled "inf".
fn bar(c: &mut Canvas, x: usize, v: f64, rgb: [u8; 3], y_of: &dyn Fn(f64) -> usize) {
    let base = TOP + PLOT_H;
    let y = if v.is_finite() { y_of(v) } else { TOP };
    let y = y.min(base - ZERO_MARK);
    c.fill(x, y, BAR - 6, base - y, rgb);
    if base - y <= ZERO_MARK {
        c.frame(x, y - 1, BAR - 6, ZERO_MARK + 2);
    }
    let label = if v.is_finite() {
        format!("{v:.2}")
    } else {
        "inf".to_string()
    };
    let w = label.len() * 8;
    let lx = (x + (BAR - 6) / 2).saturating_sub(w / 2);
    c.text(lx, y.saturating_sub(11).max(TOP + 1), &label, 1);
}

/// The y axis with ticks every 0.2 and the frame of the plot area.
fn axis(c: &mut Canvas, top: f64, plot_w: usize, y_of: &dyn Fn(f64) -> usize) {
    c.frame(LEFT, TOP, plot_w, PLOT_H + 1);
    let steps = (top / 0.2).round() as usize;
    for s in 0..=steps {
        let v = s as f64 * 0.2;
        let y = y_of(v);
        c.fill(LEFT - 5, y, 5, 1, [0; 3]);
        if s % 2 == 0 || steps <= 8 {
            let label = format!("{v:.1}");
            let w = label.len() * 8 * TEXT;
            c.text(LEFT - 8 - w, y.saturating_sub(4 * TEXT), &label, TEXT);
        }
    }
}

/// A legend entry: the policy and its remote-access ratio.
fn legend_label(row: &(String, Normalised, f64)) -> String {
    format!("{} ({:.0}% remote)", row.0, 100.0 * row.2)
}

fn legend(c: &mut Canvas, rows: &[(String, Normalised, f64)], x: usize) {
    for (k, row) in rows.iter().enumerate() {
        let y = TOP + k * (8 * TEXT + 8);
        c.fill(x, y, 16, 16, PALETTE[k % PALETTE.len()]);
        c.text(x + 24, y, &legend_label(row), TEXT);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chart_is_a_png_wide_enough_for_every_bar() {
        let n = |t| Normalised {
            time: t,
            l3_misses: 1.0,
            interchip: f64::INFINITY,
            energy: 0.9,
        };
        let rows = vec![
            ("os".to_string(), n(1.0), 0.5),
            ("kmaf".to_string(), n(0.7), 0.1),
        ];
        let png = chart(&rows, "SIMULATED: test").unwrap();
        assert_eq!(&png[1..4], b"PNG");
        let dec = png::Decoder::new(std::io::Cursor::new(png));
        let info = dec.read_info().unwrap().info().clone();
        assert!(info.width as usize >= LEFT + 4 * (2 * BAR + GAP));
        assert_eq!(info.height as usize, TOP + PLOT_H + 90);
    }

    /// Issue 22: a zero bar vanished, and no bar had its value.
    #[test]
    fn a_zero_bar_is_a_visible_mark_with_its_value() {
        let zero = Normalised {
            time: 0.0,
            l3_misses: 0.0,
            interchip: 0.0,
            energy: 0.0,
        };
        let rows = vec![("os".to_string(), zero.clone(), 0.0)];
        let png = chart(&rows, "t").unwrap();
        let mut dec = png::Decoder::new(std::io::Cursor::new(png))
            .read_info()
            .unwrap();
        let mut px = vec![0; dec.output_buffer_size().unwrap()];
        let w = dec.next_frame(&mut px).unwrap().width as usize;
        let at = |x: usize, y: usize| px[(y * w + x) * 3..(y * w + x) * 3 + 3].to_vec();
        let x = LEFT + GAP + (BAR - 6) / 2;
        assert_eq!(at(x, TOP + PLOT_H - 1), PALETTE[0].to_vec(), "the mark");
        let dark = (TOP + PLOT_H - 14..TOP + PLOT_H - 4)
            .flat_map(|y| (x - 16..x + 16).map(move |x| (x, y)))
            .filter(|&(x, y)| at(x, y) == vec![0, 0, 0])
            .count();
        assert!(dark > 10, "the value above the mark: {dark} dark pixels");
    }
}
