//! The lane area's pixels, filled in wasm memory and handed to the canvas in
//! one `putImageData`: a frame of a large run holds tens of thousands of
//! span and aggregate rectangles, and building them as a canvas path costs
//! one call across the wasm boundary per rectangle plus the browser's path
//! rasterisation (with software rendering, most of a redraw). Here a
//! rectangle is a few row fills of an RGBA buffer in device pixels. Pure
//! Rust (no DOM), so it is tested natively; `draw` does the one call that
//! puts the buffer on the canvas.

/// An opaque RGBA colour.
pub type Rgba = [u8; 4];

/// `#RRGGBB` as an opaque RGBA colour (black for anything else).
pub fn rgba(hex: &str) -> Rgba {
    let h = hex.trim_start_matches('#');
    let ch = |i: usize| {
        h.get(i..i + 2)
            .and_then(|s| u8::from_str_radix(s, 16).ok())
            .unwrap_or(0)
    };
    [ch(0), ch(2), ch(4), 255]
}

/// An RGBA buffer of `width` x `height` device pixels whose top-left pixel
/// is the canvas's device pixel `origin`; reused between frames (no
/// allocation once the size is stable).
#[derive(Debug, Default)]
pub struct Pixels {
    origin: (i64, i64),
    width: usize,
    height: usize,
    data: Vec<u8>,
}

impl Pixels {
    /// Place at canvas device pixel `origin`, resize to `width` x `height`
    /// and fill with `color`.
    pub fn reset(&mut self, origin: (i64, i64), width: usize, height: usize, color: Rgba) {
        self.origin = origin;
        self.width = width;
        self.height = height;
        self.data.clear();
        self.data.resize(width * height * 4, 0);
        repeat(&mut self.data, color);
    }

    /// Canvas device pixel of the buffer's top-left pixel.
    pub fn origin(&self) -> (i64, i64) {
        self.origin
    }

    pub fn width(&self) -> usize {
        self.width
    }

    pub fn height(&self) -> usize {
        self.height
    }

    /// The pixels, row by row, RGBA (what `ImageData` takes).
    pub fn bytes(&self) -> &[u8] {
        &self.data
    }

    /// Fill the rectangle `[x0, x1) x [y0, y1)` of canvas device pixels,
    /// clipped to the buffer (empty or inverted rectangles fill nothing).
    pub fn fill(&mut self, x0: i64, y0: i64, x1: i64, y1: i64, color: Rgba) {
        let (ox, oy) = self.origin;
        let clip = |v: i64, max: usize| v.clamp(0, max as i64) as usize;
        let (x0, x1) = (clip(x0 - ox, self.width), clip(x1 - ox, self.width));
        let (y0, y1) = (clip(y0 - oy, self.height), clip(y1 - oy, self.height));
        if x0 >= x1 || y0 >= y1 {
            return;
        }
        let stride = self.width * 4;
        let (a, b) = (y0 * stride + x0 * 4, y0 * stride + x1 * 4);
        repeat(&mut self.data[a..b], color);
        for y in y0 + 1..y1 {
            self.data.copy_within(a..b, y * stride + x0 * 4);
        }
    }

    /// Fill the rectangle given in the canvas's CSS pixels, at `dpr` device pixels per CSS pixel (edges rounded to the
    /// nearest device pixel, as the canvas draws snapped rectangles).
    pub fn fill_css(&mut self, x: f64, y: f64, w: f64, h: f64, dpr: f64, color: Rgba) {
        let d = |v: f64| (v * dpr).round() as i64;
        self.fill(d(x), d(y), d(x + w), d(y + h), color);
    }

    /// The colour at the buffer's device pixel (x, y), if inside.
    pub fn at(&self, x: usize, y: usize) -> Option<Rgba> {
        if x >= self.width || y >= self.height {
            return None;
        }
        let i = (y * self.width + x) * 4;
        let p = self.data.get(i..i + 4)?;
        Some([p[0], p[1], p[2], p[3]])
    }
}

/// Fill `seg` (a whole number of pixels) with `color`: one pixel written,
/// then copied onto itself in doubling blocks (bulk memory copies, not a
/// store per pixel).
fn repeat(seg: &mut [u8], color: Rgba) {
    if seg.len() < 4 {
        return;
    }
    seg[..4].copy_from_slice(&color);
    let mut done = 4;
    while done < seg.len() {
        let n = done.min(seg.len() - done);
        seg.copy_within(..n, done);
        done += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RED: Rgba = [255, 0, 0, 255];
    const WHITE: Rgba = [255, 255, 255, 255];

    #[test]
    fn repeats_a_colour_over_any_length() {
        for px in [0usize, 1, 2, 3, 5, 8, 13, 1000] {
            let mut seg = vec![0u8; px * 4];
            repeat(&mut seg, RED);
            assert!(seg.chunks_exact(4).all(|p| p == RED), "{px}");
        }
    }

    #[test]
    fn parses_hex_colours() {
        assert_eq!(rgba("#0072B2"), [0x00, 0x72, 0xB2, 255]);
        assert_eq!(rgba("F3F5F8"), [0xF3, 0xF5, 0xF8, 255]);
        assert_eq!(rgba("#zz"), [0, 0, 0, 255]);
    }

    #[test]
    fn fills_exactly_the_rectangle_and_clips() {
        let mut p = Pixels::default();
        p.reset((0, 0), 10, 6, WHITE);
        p.fill(2, 1, 5, 3, RED);
        let red: Vec<(usize, usize)> = (0..6)
            .flat_map(|y| (0..10).map(move |x| (x, y)))
            .filter(|&(x, y)| p.at(x, y) == Some(RED))
            .collect();
        assert_eq!(red, vec![(2, 1), (3, 1), (4, 1), (2, 2), (3, 2), (4, 2)]);
        // Clipped on every side; inverted and empty rectangles fill nothing.
        p.reset((0, 0), 4, 4, WHITE);
        p.fill(-5, -5, 100, 1, RED);
        assert_eq!(p.at(3, 0), Some(RED));
        assert_eq!(p.at(0, 1), Some(WHITE));
        p.fill(3, 3, 1, 1, RED);
        p.fill(2, 2, 2, 4, RED);
        assert_eq!(p.at(2, 2), Some(WHITE));
        assert_eq!(p.bytes().len(), 4 * 4 * 4);
    }

    #[test]
    fn css_rectangles_round_to_device_pixels() {
        let mut p = Pixels::default();
        p.reset((10, 4), 20, 20, WHITE);
        // x: 6.5 css px at dpr 2 -> device 13 (buffer 3); 6.5 + 2.25 = 8.75
        // -> 17.5 -> 18 (buffer 8). y: 2 css -> device 4 (buffer 0).
        p.fill_css(6.5, 2.0, 2.25, 1.0, 2.0, RED);
        assert_eq!(p.at(2, 0), Some(WHITE));
        assert_eq!(p.at(3, 0), Some(RED));
        assert_eq!(p.at(7, 1), Some(RED));
        assert_eq!(p.at(8, 0), Some(WHITE));
        assert_eq!(p.at(3, 2), Some(WHITE));
    }
}
