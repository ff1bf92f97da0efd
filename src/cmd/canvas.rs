//! A small RGB raster that the commands' PNG figures draw on (the heatmap of `tdmap
//! analyze`, the bar chart of `tdmap sim`). Text uses the public-domain 8×8 bitmap font of
//! the `font8x8` crate, so no system font is needed.

use font8x8::legacy::BASIC_LEGACY;

/// Font scale of every title and axis label of the PNG figures: 16-pixel glyphs, one
/// style for all of them.
pub const TEXT: usize = 2;

/// An RGB raster, white at the start.
pub struct Canvas {
    w: usize,
    h: usize,
    px: Vec<u8>,
}

impl Canvas {
    /// A white `w` × `h` raster.
    pub fn new(w: usize, h: usize) -> Canvas {
        Canvas {
            w,
            h,
            px: vec![255; w * h * 3],
        }
    }

    /// Colours one pixel; outside the raster it does nothing.
    pub fn set(&mut self, x: usize, y: usize, rgb: [u8; 3]) {
        if x < self.w && y < self.h {
            let i = (y * self.w + x) * 3;
            self.px[i..i + 3].copy_from_slice(&rgb);
        }
    }

    /// Fills a rectangle.
    pub fn fill(&mut self, x: usize, y: usize, w: usize, h: usize, rgb: [u8; 3]) {
        for yy in y..y + h {
            for xx in x..x + w {
                self.set(xx, yy, rgb);
            }
        }
    }

    /// Draws a black one-pixel rectangle outline.
    pub fn frame(&mut self, x: usize, y: usize, w: usize, h: usize) {
        for xx in x..x + w {
            self.set(xx, y, [0; 3]);
            self.set(xx, y + h - 1, [0; 3]);
        }
        for yy in y..y + h {
            self.set(x, yy, [0; 3]);
            self.set(x + w - 1, yy, [0; 3]);
        }
    }

    /// Draws ASCII text with its top-left corner at (x, y), each font pixel `scale` wide.
    pub fn text(&mut self, x: usize, y: usize, s: &str, scale: usize) {
        for (k, ch) in s.chars().enumerate() {
            let glyph = BASIC_LEGACY[(ch as usize).min(127)];
            for (row, bits) in glyph.iter().enumerate() {
                for col in 0..8 {
                    if bits >> col & 1 == 1 {
                        let gx = x + (k * 8 + col) * scale;
                        self.fill(gx, y + row * scale, scale, scale, [0; 3]);
                    }
                }
            }
        }
    }

    /// The raster as PNG bytes.
    pub fn encode(&self) -> Result<Vec<u8>, png::EncodingError> {
        let mut out = Vec::new();
        let mut enc = png::Encoder::new(&mut out, self.w as u32, self.h as u32);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut wr = enc.write_header()?;
        wr.write_image_data(&self.px)?;
        wr.finish()?;
        Ok(out)
    }
}
