//! The heatmap as an SVG document, which `tdmap report` also inlines in its page.

use super::{shade, short, xml, Heatmap, AXIS};
use crate::cmd::heatmap::Edge;
use std::fmt::Write;

fn rgb(c: [u8; 3]) -> String {
    format!("rgb({},{},{})", c[0], c[1], c[2])
}

impl Heatmap<'_> {
    /// Renders an SVG document.
    pub fn svg(&self) -> String {
        let l = self.layout();
        let mut s = String::new();
        let _ = writeln!(
            s,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"heatmap\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"monospace\" font-size=\"14\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"16\" y=\"26\" font-size=\"18\">{}</text>\n<text x=\"16\" y=\"48\">{}</text>",
            xml(self.title),
            xml(&self.subtitle()),
            w = l.width,
            h = l.height,
        );
        for a in 0..self.n {
            for b in 0..self.n {
                let (i, j, v) = self.cell(&l, a, b);
                let g = shade(v, l.max);
                let fill = if i == j {
                    rgb(super::DIAGONAL)
                } else {
                    format!("rgb({g},{g},{g})")
                };
                let _ = writeln!(
                    s,
                    "<rect x=\"{}\" y=\"{}\" width=\"{c}\" height=\"{c}\" fill=\"{fill}\"><title>threads {i} and {j}: {v} {}</title></rect>",
                    l.left + b * l.cell,
                    l.top + a * l.cell,
                    xml(self.unit),
                    c = l.cell
                );
            }
        }
        for &(p, e) in &l.edges {
            let at = l.left + p * l.cell;
            let y = l.top + p * l.cell;
            let _ = writeln!(
                s,
                "<g class=\"edge-{}\" stroke=\"{}\" stroke-width=\"{}\"><line x1=\"{at}\" y1=\"{}\" x2=\"{at}\" y2=\"{}\"/><line x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\"/></g>",
                edge_name(e),
                rgb(e.rgb()),
                e.width(),
                l.top,
                l.top + l.grid,
                l.left,
                l.left + l.grid
            );
        }
        for (first, len, label) in &l.groups {
            let _ = writeln!(
                s,
                "<text x=\"{}\" y=\"{}\">{}</text>",
                l.left + l.grid + 8,
                l.top + (first * 2 + len) * l.cell / 2 + 5,
                xml(label)
            );
        }
        for k in (0..self.n).step_by(l.tick_every) {
            let mid = k * l.cell + l.cell / 2;
            let t = l.order[k];
            let _ = writeln!(
                s,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{t}</text>\n<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{t}</text>",
                l.left - 6,
                l.top + mid + 5,
                l.left + mid,
                l.top + l.grid + 20
            );
        }
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{AXIS}</text>\n<text x=\"8\" y=\"{}\">{AXIS}</text>",
            l.left + l.grid / 2,
            l.top + l.grid + 44,
            l.top - 10
        );
        self.svg_scale(&mut s, &l);
        s += "</svg>\n";
        s
    }

    fn svg_scale(&self, s: &mut String, l: &super::Layout) {
        let x = l.scale_x;
        let h = l.grid.max(100);
        let _ = writeln!(
            s,
            "<defs><linearGradient id=\"hm-scale\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\"><stop offset=\"0\" stop-color=\"white\"/><stop offset=\"1\" stop-color=\"black\"/></linearGradient></defs>\n<rect x=\"{x}\" y=\"{}\" width=\"24\" height=\"{h}\" fill=\"url(#hm-scale)\" stroke=\"black\"/>",
            l.top
        );
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\">{}</text>\n<text x=\"{}\" y=\"{}\">0</text>\n<text x=\"{x}\" y=\"{}\">{}</text>",
            x + 32,
            l.top + 12,
            short(l.max),
            x + 32,
            l.top + h,
            l.top + h + 24,
            xml(self.unit)
        );
        let mut y = l.top + h + 36;
        let _ = writeln!(
            s,
            "<rect x=\"{x}\" y=\"{y}\" width=\"14\" height=\"14\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">private</text>",
            rgb(super::DIAGONAL),
            x + 20,
            y + 12
        );
        if !l.edges.is_empty() {
            for e in [Edge::Node, Edge::Package] {
                y += 22;
                let _ = writeln!(
                    s,
                    "<rect x=\"{x}\" y=\"{}\" width=\"14\" height=\"{}\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>",
                    y + 6,
                    e.width(),
                    rgb(e.rgb()),
                    x + 20,
                    y + 12,
                    edge_name(e)
                );
            }
        }
    }
}

fn edge_name(e: Edge) -> &'static str {
    match e {
        Edge::Node => "node",
        Edge::Package => "package",
    }
}

#[cfg(test)]
mod tests {
    use super::super::Places;
    use super::*;

    #[test]
    fn svg_has_every_cell_and_the_boundaries() {
        let cells = vec![0.0, 1.0, 2.0, 1.0, 0.0, 3.0, 2.0, 3.0, 0.0];
        let places = Places {
            node: vec![Some(0), Some(1), Some(2)],
            package: vec![Some(0), Some(0), Some(1)],
        };
        let mut h = Heatmap {
            n: 3,
            cells: &cells,
            title: "x",
            program: "a<b",
            unit: "u",
            places: None,
        };
        let svg = h.svg();
        assert_eq!(svg.matches("<title>threads").count(), 9);
        assert!(svg.contains("program: a&lt;b"));
        assert!(!svg.contains("edge-"));
        h.places = Some(&places);
        let svg = h.svg();
        assert_eq!(svg.matches("class=\"edge-node\"").count(), 1);
        assert_eq!(svg.matches("class=\"edge-package\"").count(), 1);
    }
}
