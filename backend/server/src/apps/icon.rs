//! App icons: the manifest's image decoded (bounded), centre-cropped and resized to each size
//! a web manifest advertises (a maskable variant padded into the safe zone on the theme
//! colour), and a generated fallback — the app's initial in white on its theme colour.
//! Rendering is CPU work: callers run it off the async threads ([`render_blocking`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::ZlibEncoder;

/// 5×7 bitmaps for A–Z and 0–9 (each row's low 5 bits, most significant bit leftmost).
const GLYPHS: &[(char, [u8; 7])] = &[
    ('A', [14, 17, 17, 31, 17, 17, 17]),
    ('B', [30, 17, 17, 30, 17, 17, 30]),
    ('C', [14, 17, 16, 16, 16, 17, 14]),
    ('D', [30, 17, 17, 17, 17, 17, 30]),
    ('E', [31, 16, 16, 30, 16, 16, 31]),
    ('F', [31, 16, 16, 30, 16, 16, 16]),
    ('G', [14, 17, 16, 23, 17, 17, 15]),
    ('H', [17, 17, 17, 31, 17, 17, 17]),
    ('I', [14, 4, 4, 4, 4, 4, 14]),
    ('J', [7, 2, 2, 2, 2, 18, 12]),
    ('K', [17, 18, 20, 24, 20, 18, 17]),
    ('L', [16, 16, 16, 16, 16, 16, 31]),
    ('M', [17, 27, 21, 21, 17, 17, 17]),
    ('N', [17, 17, 25, 21, 19, 17, 17]),
    ('O', [14, 17, 17, 17, 17, 17, 14]),
    ('P', [30, 17, 17, 30, 16, 16, 16]),
    ('Q', [14, 17, 17, 17, 21, 18, 13]),
    ('R', [30, 17, 17, 30, 20, 18, 17]),
    ('S', [15, 16, 16, 14, 1, 1, 30]),
    ('T', [31, 4, 4, 4, 4, 4, 4]),
    ('U', [17, 17, 17, 17, 17, 17, 14]),
    ('V', [17, 17, 17, 17, 17, 10, 4]),
    ('W', [17, 17, 17, 21, 21, 21, 10]),
    ('X', [17, 17, 10, 4, 10, 17, 17]),
    ('Y', [17, 17, 10, 4, 4, 4, 4]),
    ('Z', [31, 1, 2, 4, 8, 16, 31]),
    ('0', [14, 17, 19, 21, 25, 17, 14]),
    ('1', [4, 12, 4, 4, 4, 4, 14]),
    ('2', [14, 17, 1, 2, 4, 8, 31]),
    ('3', [31, 2, 4, 2, 1, 17, 14]),
    ('4', [2, 6, 10, 18, 31, 2, 2]),
    ('5', [31, 16, 30, 1, 1, 17, 14]),
    ('6', [6, 8, 16, 30, 17, 17, 14]),
    ('7', [31, 1, 2, 4, 8, 8, 8]),
    ('8', [14, 17, 17, 14, 17, 17, 14]),
    ('9', [14, 17, 17, 15, 1, 2, 12]),
];

/// Parses `#rrggbb`, falling back to a calm indigo.
fn colour(hex: Option<&str>) -> [u8; 3] {
    let parse = |h: &str| -> Option<[u8; 3]> {
        let h = h.strip_prefix('#')?;
        if h.len() != 6 {
            return None;
        }
        let v = u32::from_str_radix(h, 16).ok()?;
        Some([(v >> 16) as u8, (v >> 8) as u8, v as u8])
    };
    hex.and_then(parse).unwrap_or([0x4f, 0x46, 0xe5])
}

/// A `size`×`size` PNG of `name`'s first letter or digit on `theme` (maskable-safe: the glyph
/// stays well inside the central safe zone).
pub fn fallback_png(name: &str, theme: Option<&str>, size: u32) -> Vec<u8> {
    let bg = colour(theme);
    let letter = name.chars().find(char::is_ascii_alphanumeric).map_or('?', |c| c.to_ascii_uppercase());
    let glyph = GLYPHS.iter().find(|(c, _)| *c == letter).map(|(_, g)| *g);
    let scale = (size / 16).max(1);
    let (gw, gh) = (5 * scale, 7 * scale);
    let (x0, y0) = ((size - gw) / 2, (size - gh) / 2);
    let mut raw = Vec::with_capacity(((size * 3 + 1) * size) as usize);
    for y in 0..size {
        raw.push(0); // filter: none
        for x in 0..size {
            let on = glyph.is_some_and(|g| {
                x >= x0 && x < x0 + gw && y >= y0 && y < y0 + gh && {
                    let (col, row) = ((x - x0) / scale, (y - y0) / scale);
                    g[row as usize] & (1 << (4 - col)) != 0
                }
            });
            raw.extend_from_slice(if on { &[255, 255, 255] } else { &bg });
        }
    }
    let mut z = ZlibEncoder::new(Vec::new(), Compression::default());
    let _ = z.write_all(&raw);
    let idat = z.finish().unwrap_or_default();
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&size.to_be_bytes());
    ihdr.extend_from_slice(&size.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]); // 8-bit RGB
    chunk(&mut png, b"IHDR", &ihdr);
    chunk(&mut png, b"IDAT", &idat);
    chunk(&mut png, b"IEND", &[]);
    png
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let mut crc = flate2::Crc::new();
    crc.update(kind);
    crc.update(data);
    out.extend_from_slice(&crc.sum().to_be_bytes());
}

/// Largest icon file decoded (the original's limit).
pub const MAX_ICON_SOURCE_BYTES: usize = 12 * 1024 * 1024;
/// Largest side of an icon decoded, and most pixels (decompression-bomb guards).
const MAX_ICON_SIDE: u32 = 4096;
const MAX_ICON_ALLOC_BYTES: u64 = 128 * 1024 * 1024;
/// The sizes icons are rendered at; a request is served the nearest one (so at most
/// `ICON_SIZES.len()` × 2 files exist per build).
pub const ICON_SIZES: &[u32] = &[48, 96, 128, 192, 256, 512];
/// Share of a maskable icon's side the picture takes (the rest is the theme colour), so a
/// round or squircle mask never cuts into it.
const MASKABLE_CONTENT: f32 = 0.64;
/// Icons rendered at once (each holds a decoded image).
pub const MAX_PARALLEL_ICON_RENDERS: usize = 2;

/// The rendered size nearest to `requested`.
pub fn snap_size(requested: u32) -> u32 {
    *ICON_SIZES.iter().min_by_key(|s| s.abs_diff(requested)).unwrap_or(&512)
}

/// Decodes `bytes` (PNG, JPEG, WebP or GIF), crops it to a centred square and resizes it to
/// `size`; `maskable` pads it into the safe zone on `background`. Answers why not otherwise.
pub fn render(bytes: &[u8], size: u32, maskable: bool, background: Option<&str>) -> Result<Vec<u8>, String> {
    use image::{DynamicImage, GenericImageView, ImageReader, Limits, imageops::FilterType};
    if bytes.len() > MAX_ICON_SOURCE_BYTES {
        return Err(format!("the icon is larger than {} MiB", MAX_ICON_SOURCE_BYTES >> 20));
    }
    let mut reader = ImageReader::new(std::io::Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| format!("the icon could not be read: {e}"))?;
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_ICON_SIDE);
    limits.max_image_height = Some(MAX_ICON_SIDE);
    limits.max_alloc = Some(MAX_ICON_ALLOC_BYTES);
    reader.limits(limits);
    let image = reader.decode().map_err(|e| format!("the icon is not a PNG, JPEG, WebP or GIF image: {e}"))?;
    let (w, h) = image.dimensions();
    let side = w.min(h);
    let square = image.crop_imm((w - side) / 2, (h - side) / 2, side, side);
    let inner = if maskable { ((size as f32) * MASKABLE_CONTENT).round() as u32 } else { size };
    let resized = square.resize_exact(inner.max(1), inner.max(1), FilterType::Lanczos3).to_rgba8();
    let out = if maskable {
        let [r, g, b] = colour(background);
        let mut canvas = image::RgbaImage::from_pixel(size, size, image::Rgba([r, g, b, 255]));
        let offset = i64::from((size - inner) / 2);
        image::imageops::overlay(&mut canvas, &resized, offset, offset);
        DynamicImage::ImageRgba8(canvas)
    } else {
        DynamicImage::ImageRgba8(resized)
    };
    let mut png = Vec::new();
    out.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .map_err(|e| format!("the icon could not be encoded: {e}"))?;
    Ok(png)
}

/// Where a build's rendered icon lives: next to its bundle, named after it, so the clean-ups
/// of old bundles (`app-<id>-…`) take it too.
pub fn rendered_path(compiled_dir: &Path, id: i64, sha: &str, size: u32, maskable: bool) -> PathBuf {
    let purpose = if maskable { "-maskable" } else { "" };
    compiled_dir.join(format!("app-{id}-{sha}-icon-{size}{purpose}.png"))
}

/// Removes the rendered icons of build `sha` of app `id`.
pub fn remove_rendered(compiled_dir: &Path, id: i64, sha: &str) {
    for size in ICON_SIZES {
        for maskable in [false, true] {
            let _ = std::fs::remove_file(rendered_path(compiled_dir, id, sha, *size, maskable));
        }
    }
}

/// [`render`] on a blocking thread, at most [`MAX_PARALLEL_ICON_RENDERS`] at once.
pub async fn render_blocking(
    limit: &tokio::sync::Semaphore,
    bytes: Vec<u8>,
    size: u32,
    maskable: bool,
    background: Option<String>,
) -> Result<Vec<u8>, String> {
    let _permit = limit.acquire().await.map_err(|_| "shutting down".to_owned())?;
    tokio::task::spawn_blocking(move || render(&bytes, size, maskable, background.as_deref()))
        .await
        .map_err(|e| format!("icon task: {e}"))?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(w: u32, h: u32) -> Vec<u8> {
        let img = image::RgbaImage::from_fn(w, h, |x, y| image::Rgba([(x % 256) as u8, (y % 256) as u8, 90, 255]));
        let mut png = Vec::new();
        image::DynamicImage::ImageRgba8(img)
            .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
            .expect("encode");
        png
    }

    #[test]
    fn icons_are_cropped_square_and_resized_to_each_size() {
        let source = sample(300, 200);
        for size in [192, 512] {
            for maskable in [false, true] {
                let png = render(&source, size, maskable, Some("#112233")).expect("render");
                let out = image::load_from_memory(&png).expect("decode");
                assert_eq!((out.width(), out.height()), (size, size));
                if maskable {
                    assert_eq!(out.to_rgba8().get_pixel(0, 0).0, [0x11, 0x22, 0x33, 255], "padded on the theme colour");
                }
            }
        }
        assert!(render(b"<svg/>", 192, false, None).is_err(), "not a raster image");
        assert_eq!(snap_size(200), 192);
        assert_eq!(snap_size(4000), 512);
    }

    #[test]
    fn the_fallback_is_a_valid_png_of_the_asked_size() {
        let png = fallback_png("counter", Some("#112233"), 192);
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
        assert_eq!(&png[12..16], b"IHDR");
        assert_eq!(u32::from_be_bytes([png[16], png[17], png[18], png[19]]), 192);
        assert!(png.ends_with(&[0xae, 0x42, 0x60, 0x82]), "IEND CRC");
        assert_ne!(fallback_png("counter", None, 64), fallback_png("zebra", None, 64));
    }
}
