//! The heatmap as a PNG, drawn on [`Canvas`].

use super::{shade, short, Heatmap, Layout, AXIS, DIAGONAL, TEXT};
use crate::cmd::canvas::Canvas;
use crate::cmd::heatmap::Edge;

impl Heatmap<'_> {
    /// Renders a PNG image.
    pub fn png(&self) -> Result<Vec<u8>, png::EncodingError> {
        let l = self.layout();
        let mut c = Canvas::new(l.width, l.height);
        c.text(16, 12, self.title, TEXT);
        c.text(16, 12 + 8 * TEXT + 6, &self.subtitle(), TEXT);
        for a in 0..self.n {
            for b in 0..self.n {
                let (i, j, v) = self.cell(&l, a, b);
                let (x, y) = (l.left + b * l.cell, l.top + a * l.cell);
                let g = (i != j).then(|| shade(v, l.max));
                c.fill(x, y, l.cell, l.cell, g.map_or(DIAGONAL, |g| [g, g, g]));
            }
        }
        c.frame(l.left - 1, l.top - 1, l.grid + 2, l.grid + 2);
        self.png_edges(&mut c, &l);
        self.png_axes(&mut c, &l);
        self.png_scale(&mut c, &l);
        c.encode()
    }

    fn png_edges(&self, c: &mut Canvas, l: &Layout) {
        for &(p, e) in &l.edges {
            let at = p * l.cell - e.width() / 2;
            c.fill(l.left + at, l.top, e.width(), l.grid, e.rgb());
            c.fill(l.left, l.top + at, l.grid, e.width(), e.rgb());
        }
        for (first, len, label) in &l.groups {
            let mid = l.top + (first * 2 + len) * l.cell / 2;
            if len * l.cell >= 8 * TEXT {
                c.text(l.left + l.grid + 8, mid - 4 * TEXT, label, TEXT);
            }
        }
    }

    fn png_axes(&self, c: &mut Canvas, l: &Layout) {
        for k in (0..self.n).step_by(l.tick_every) {
            let s = l.order[k].to_string();
            let w = s.len() * 8 * TEXT;
            let mid = k * l.cell + l.cell / 2;
            c.text(l.left - w - 6, l.top + mid - 4 * TEXT, &s, TEXT);
            c.text(l.left + mid - w / 2, l.top + l.grid + 6, &s, TEXT);
        }
        let below = l.top + l.grid + 6 + 8 * TEXT + 10;
        let w = AXIS.len() * 8 * TEXT;
        c.text(
            (l.left + l.grid / 2).saturating_sub(w / 2),
            below,
            AXIS,
            TEXT,
        );
        c.text(8, l.top - 8 * TEXT - 4, AXIS, TEXT);
    }

    fn png_scale(&self, c: &mut Canvas, l: &Layout) {
        let x = l.scale_x;
        let h = l.grid.max(100);
        for dy in 0..h {
            let g = shade((h - 1 - dy) as f64 / (h - 1) as f64, 1.0);
            c.fill(x, l.top + dy, 24, 1, [g, g, g]);
        }
        c.frame(x - 1, l.top - 1, 26, h + 2);
        c.text(x + 32, l.top, &short(l.max), TEXT);
        c.text(x + 32, l.top + h / 2 - 8, &short(l.max / 2.0), TEXT);
        c.text(x + 32, l.top + h - 16, "0", TEXT);
        let mut y = l.top + h + 10;
        c.text(x, y, self.unit, TEXT);
        y += 8 * TEXT + 8;
        c.fill(x, y, 16, 16, DIAGONAL);
        c.text(x + 22, y, "private", TEXT);
        if !l.edges.is_empty() {
            for (e, name) in [(Edge::Node, "node"), (Edge::Package, "package")] {
                y += 8 * TEXT + 8;
                c.fill(x, y + 6, 16, e.width(), e.rgb());
                c.text(x + 22, y, name, TEXT);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Places;
    use super::*;

    fn decode(png: &[u8]) -> (usize, Vec<u8>) {
        let mut dec = png::Decoder::new(std::io::Cursor::new(png.to_vec()))
            .read_info()
            .unwrap();
        let mut buf = vec![0; dec.output_buffer_size().unwrap()];
        let info = dec.next_frame(&mut buf).unwrap();
        (info.width as usize, buf)
    }

    #[test]
    fn png_has_the_layout_size() {
        let cells = vec![0.0, 1.0, 2.0, 1.0, 0.0, 3.0, 2.0, 3.0, 0.0];
        let h = Heatmap {
            n: 3,
            cells: &cells,
            title: "x",
            program: "prog",
            unit: "u",
            places: None,
        };
        let png = h.png().unwrap();
        assert_eq!(&png[1..4], b"PNG");
        assert_eq!(decode(&png).0, h.layout().width);
    }

    /// Issue 22: heatmaps had no NUMA-node boundary even with a machine.
    #[test]
    fn a_node_boundary_is_drawn_between_the_nodes_threads() {
        let cells = vec![1.0; 16];
        let places = Places {
            node: vec![Some(0), Some(1), Some(0), Some(1)],
            package: vec![Some(0); 4],
        };
        let h = Heatmap {
            n: 4,
            cells: &cells,
            title: "x",
            program: "",
            unit: "u",
            places: Some(&places),
        };
        let l = h.layout();
        assert_eq!(l.order, vec![0, 2, 1, 3]);
        let (w, px) = decode(&h.png().unwrap());
        let at = |x: usize, y: usize| px[(y * w + x) * 3..(y * w + x) * 3 + 3].to_vec();
        let y = l.top + l.cell / 2;
        assert_eq!(at(l.left + 2 * l.cell, y), Edge::Node.rgb().to_vec());
        assert_ne!(at(l.left + l.cell, y), Edge::Node.rgb().to_vec());
    }
}
