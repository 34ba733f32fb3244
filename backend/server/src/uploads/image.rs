//! Photos and pictures a chat stores: their metadata (EXIF with its GPS position, XMP, text
//! chunks) stripped, their EXIF orientation applied to the pixels, and a small JPEG preview.
//! Decoding is bounded in pixels and memory; it is CPU work, so callers run it on a blocking
//! thread behind a semaphore ([`process_blocking`]).

use image::{DynamicImage, ImageDecoder, ImageReader, Limits, metadata::Orientation};

use super::sniff::Raster;

/// Longest side of a preview, in pixels.
pub const PREVIEW_EDGE: u32 = 1024;
/// JPEG quality of previews.
const PREVIEW_QUALITY: u8 = 80;
/// JPEG quality of a photo stored again after its orientation was applied.
const ROTATED_QUALITY: u8 = 92;
/// Largest image decoded (width × height); bigger ones are stored stripped, without preview.
pub const MAX_DECODE_PIXELS: u64 = 48_000_000;
/// Largest side decoded.
const MAX_DECODE_SIDE: u32 = 16_384;
/// Memory one decode may allocate.
const MAX_DECODE_ALLOC_BYTES: u64 = 320 * 1024 * 1024;
/// Images processed at once (each holds a decoded picture).
pub const MAX_PARALLEL_IMAGES: usize = 2;

/// What processing found and made.
#[derive(Debug, Default)]
pub struct Processed {
    /// Dimensions as shown (after the orientation); `None` when the image was not decoded.
    pub size: Option<(u32, u32)>,
    /// Bytes to store instead of the original (metadata gone, orientation applied); `None`
    /// keeps the original, which had nothing to remove.
    pub replacement: Option<Vec<u8>>,
    /// The preview JPEG, when the image could be decoded.
    pub preview: Option<Vec<u8>>,
}

/// Strips, orients and previews `bytes` (a `raster` image). A picture too large to decode is
/// still stripped (losslessly); one that cannot be read at all is refused.
pub fn process(bytes: &[u8], raster: Raster) -> Result<Processed, String> {
    let stripped = strip(bytes, raster);
    let header = header_size(bytes, raster)?;
    if u64::from(header.0) * u64::from(header.1) > MAX_DECODE_PIXELS {
        return Ok(Processed { size: None, replacement: stripped, preview: None });
    }
    if raster == Raster::Jpeg
        && let Some(preview) = upright_jpeg_preview(bytes)?
    {
        return Ok(Processed { size: Some(header), replacement: stripped, preview: Some(preview) });
    }
    let (picture, orientation) = decode(bytes)?;
    let rotated = orientation != Orientation::NoTransforms;
    let mut picture = picture;
    picture.apply_orientation(orientation);
    let replacement = if rotated { Some(encode(&picture, raster)?) } else { stripped };
    let preview = preview_jpeg(&picture)?;
    Ok(Processed { size: Some((picture.width(), picture.height())), replacement, preview: Some(preview) })
}

/// The preview of an upright JPEG (no EXIF orientation to apply), decoded straight at the
/// smallest DCT scale (1/8, 1/4, 1/2) that still fills a preview: most of a photo's pixels are
/// never computed. `None` for a JPEG this path does not take (turned, CMYK, 16-bit).
fn upright_jpeg_preview(bytes: &[u8]) -> Result<Option<Vec<u8>>, String> {
    use jpeg_decoder::PixelFormat;
    let unreadable = |e: jpeg_decoder::Error| format!("the image could not be read: {e}");
    let mut decoder = jpeg_decoder::Decoder::new(std::io::Cursor::new(bytes));
    decoder.set_max_decoding_buffer_size(usize::try_from(MAX_DECODE_ALLOC_BYTES).unwrap_or(usize::MAX));
    decoder.read_info().map_err(unreadable)?;
    let orientation = decoder.exif_data().and_then(Orientation::from_exif_chunk);
    if orientation.is_some_and(|o| o != Orientation::NoTransforms) {
        return Ok(None);
    }
    let Some(info) = decoder.info() else { return Ok(None) };
    let (width, height) = (u32::from(info.width), u32::from(info.height));
    let long = width.max(height).max(1);
    let fill = PREVIEW_EDGE * 15 / 16;
    if long > fill {
        let scaled = |side: u32| u16::try_from((side * fill).div_ceil(long).max(1)).unwrap_or(u16::MAX);
        decoder.scale(scaled(width), scaled(height)).map_err(unreadable)?;
    }
    let pixels = decoder.decode().map_err(unreadable)?;
    let Some(info) = decoder.info() else { return Ok(None) };
    let (w, h) = (u32::from(info.width), u32::from(info.height));
    let picture = match info.pixel_format {
        PixelFormat::RGB24 => image::RgbImage::from_raw(w, h, pixels).map(DynamicImage::ImageRgb8),
        PixelFormat::L8 => image::GrayImage::from_raw(w, h, pixels).map(DynamicImage::ImageLuma8),
        PixelFormat::L16 | PixelFormat::CMYK32 => None,
    };
    picture.map(|p| preview_jpeg(&p)).transpose()
}

/// [`process`] on a blocking thread, at most `limit`'s permits at once.
pub async fn process_blocking(
    limit: &tokio::sync::Semaphore,
    bytes: Vec<u8>,
    raster: Raster,
) -> Result<Processed, String> {
    let _permit = limit.acquire().await.map_err(|_| "shutting down".to_owned())?;
    tokio::task::spawn_blocking(move || process(&bytes, raster)).await.map_err(|e| format!("image task: {e}"))?
}

fn limits() -> Limits {
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_DECODE_SIDE);
    limits.max_image_height = Some(MAX_DECODE_SIDE);
    limits.max_alloc = Some(MAX_DECODE_ALLOC_BYTES);
    limits
}

/// The stored dimensions, read from the header only.
fn header_size(bytes: &[u8], _raster: Raster) -> Result<(u32, u32), String> {
    let mut reader = ImageReader::new(std::io::Cursor::new(bytes)).with_guessed_format().map_err(|e| e.to_string())?;
    reader.no_limits();
    reader.into_dimensions().map_err(|e| format!("the image could not be read: {e}"))
}

fn decode(bytes: &[u8]) -> Result<(DynamicImage, Orientation), String> {
    let mut reader = ImageReader::new(std::io::Cursor::new(bytes)).with_guessed_format().map_err(|e| e.to_string())?;
    reader.limits(limits());
    let mut decoder = reader.into_decoder().map_err(|e| format!("the image could not be read: {e}"))?;
    let orientation = decoder.orientation().unwrap_or(Orientation::NoTransforms);
    let picture = DynamicImage::from_decoder(decoder).map_err(|e| format!("the image could not be decoded: {e}"))?;
    Ok((picture, orientation))
}

/// The picture encoded again in its own format (none of them carries metadata from here).
fn encode(picture: &DynamicImage, raster: Raster) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let failed = |e: image::ImageError| format!("the image could not be encoded: {e}");
    match raster {
        Raster::Jpeg => {
            let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, ROTATED_QUALITY);
            picture.to_rgb8().write_with_encoder(encoder).map_err(failed)?;
        }
        Raster::Png | Raster::Gif => {
            picture.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png).map_err(failed)?;
        }
        Raster::Webp => {
            let encoder = image::codecs::webp::WebPEncoder::new_lossless(&mut out);
            picture.to_rgba8().write_with_encoder(encoder).map_err(failed)?;
        }
    }
    Ok(out)
}

/// A JPEG at most [`PREVIEW_EDGE`] on its longest side; transparency is laid on white.
fn preview_jpeg(picture: &DynamicImage) -> Result<Vec<u8>, String> {
    let small = if picture.width().max(picture.height()) > PREVIEW_EDGE {
        picture.thumbnail(PREVIEW_EDGE, PREVIEW_EDGE)
    } else {
        picture.clone()
    };
    let rgb = if small.color().has_alpha() {
        let rgba = small.to_rgba8();
        let mut rgb = image::RgbImage::new(rgba.width(), rgba.height());
        for (out, px) in rgb.pixels_mut().zip(rgba.pixels()) {
            let [r, g, b, a] = px.0;
            let blend = |c: u8| ((u16::from(c) * u16::from(a) + 255 * (255 - u16::from(a))) / 255) as u8;
            *out = image::Rgb([blend(r), blend(g), blend(b)]);
        }
        rgb
    } else {
        small.to_rgb8()
    };
    let mut out = Vec::new();
    let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, PREVIEW_QUALITY);
    rgb.write_with_encoder(encoder).map_err(|e| format!("the preview could not be encoded: {e}"))?;
    Ok(out)
}

/// `bytes` without their metadata (EXIF with GPS, XMP, IPTC, text chunks), losslessly; `None`
/// when there was none (or the container could not be parsed: then decoding decides).
pub fn strip(bytes: &[u8], raster: Raster) -> Option<Vec<u8>> {
    match raster {
        Raster::Jpeg => strip_jpeg(bytes),
        Raster::Png => strip_png(bytes),
        Raster::Webp => strip_webp(bytes),
        Raster::Gif => strip_gif(bytes),
    }
}

/// Whether a JPEG segment before or between scans is kept: what decoding needs (tables, frame
/// and scan headers, restart intervals), the JFIF header, the ICC colour profile and Adobe's
/// colour transform. Every other application segment (EXIF and XMP in APP1, FlashPix and MPF
/// in APP2, Ducky in APP12, IPTC in APP13, the JFXX thumbnail, vendors' own) and every comment
/// (COM) is text or pictures about the photo, not the photo.
fn keep_jpeg_segment(marker: u8, body: &[u8]) -> bool {
    match marker {
        0xE0 => body.starts_with(b"JFIF\0"),
        0xE2 => body.starts_with(b"ICC_PROFILE\0"),
        0xEE => body.starts_with(b"Adobe"),
        0xE1 | 0xE3..=0xED | 0xEF | 0xFE => false,
        _ => true,
    }
}

/// Drops the metadata segments of [`keep_jpeg_segment`] wherever they are (before the first
/// scan and between a progressive JPEG's scans) and anything after the end of the image
/// (MPF's second pictures, vendors' trailers, motion-photo videos); the scans are copied as
/// they are.
fn strip_jpeg(bytes: &[u8]) -> Option<Vec<u8>> {
    if !bytes.starts_with(&[0xFF, 0xD8]) {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len());
    out.extend_from_slice(&bytes[..2]);
    let mut at = 2;
    let mut dropped = false;
    loop {
        if at + 2 > bytes.len() || bytes[at] != 0xFF {
            return None;
        }
        let marker = bytes[at + 1];
        if marker == 0xFF {
            // Fill byte.
            at += 1;
            continue;
        }
        if marker == 0xD9 {
            out.extend_from_slice(&bytes[at..at + 2]);
            dropped |= at + 2 < bytes.len();
            return dropped.then_some(out);
        }
        if (0xD0..=0xD7).contains(&marker) || marker == 0x01 {
            out.extend_from_slice(&bytes[at..at + 2]);
            at += 2;
            continue;
        }
        if at + 4 > bytes.len() {
            return None;
        }
        let len = usize::from(u16::from_be_bytes([bytes[at + 2], bytes[at + 3]]));
        let end = at + 2 + len;
        if len < 2 || end > bytes.len() {
            return None;
        }
        if keep_jpeg_segment(marker, &bytes[at + 4..end]) {
            out.extend_from_slice(&bytes[at..end]);
        } else {
            dropped = true;
        }
        at = end;
        if marker == 0xDA {
            // Entropy-coded data: a 0xFF in it is followed by a stuffed 0x00 or a restart
            // marker; any other marker ends the scan.
            let mut i = at;
            while i + 1 < bytes.len()
                && !(bytes[i] == 0xFF && bytes[i + 1] != 0x00 && !(0xD0..=0xD7).contains(&bytes[i + 1]))
            {
                i += 1;
            }
            if i + 1 >= bytes.len() {
                // A scan without its end: keep what there is (decoding decides).
                out.extend_from_slice(&bytes[at..]);
                return dropped.then_some(out);
            }
            out.extend_from_slice(&bytes[at..i]);
            at = i;
        }
    }
}

/// Drops `eXIf`, the text chunks (`tEXt`, `zTXt`, `iTXt`: XMP lives there) and content
/// credentials (`caBX`, which may name the author).
fn strip_png(bytes: &[u8]) -> Option<Vec<u8>> {
    const SIGNATURE: usize = 8;
    if bytes.len() < SIGNATURE {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len());
    out.extend_from_slice(&bytes[..SIGNATURE]);
    let mut at = SIGNATURE;
    let mut dropped = false;
    while at + 12 <= bytes.len() {
        let len = usize::try_from(u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])).ok()?;
        let end = at.checked_add(12)?.checked_add(len)?;
        if end > bytes.len() {
            return None;
        }
        let kind = &bytes[at + 4..at + 8];
        if matches!(kind, b"eXIf" | b"tEXt" | b"zTXt" | b"iTXt" | b"caBX") {
            dropped = true;
        } else {
            out.extend_from_slice(&bytes[at..end]);
        }
        at = end;
        if kind == b"IEND" {
            break;
        }
    }
    dropped.then_some(out)
}

/// Drops a GIF's comment extensions and its application extensions other than the animation
/// loop (`NETSCAPE2.0`, `ANIMEXTS1.0`): XMP travels in one of those.
fn strip_gif(bytes: &[u8]) -> Option<Vec<u8>> {
    if bytes.len() < 13 || !(bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a")) {
        return None;
    }
    let table = |flags: u8| if flags & 0x80 != 0 { 3 << ((flags & 0x07) + 1) } else { 0 };
    // The data sub-blocks starting at `at`: the offset after their terminator.
    let blocks = |mut at: usize| -> Option<usize> {
        loop {
            let len = usize::from(*bytes.get(at)?);
            at += 1 + len;
            if len == 0 {
                return (at <= bytes.len()).then_some(at);
            }
        }
    };
    let mut at = 13 + table(bytes[10]);
    let mut out = bytes.get(..at)?.to_vec();
    let mut dropped = false;
    loop {
        match *bytes.get(at)? {
            0x3B => {
                out.push(0x3B);
                dropped |= at + 1 < bytes.len();
                return dropped.then_some(out);
            }
            0x21 => {
                let label = *bytes.get(at + 1)?;
                let end = blocks(at + 2)?;
                let application = bytes.get(at + 2..at + 14).unwrap_or_default();
                let looping = application.len() == 12
                    && application[0] == 11
                    && (&application[1..] == b"NETSCAPE2.0" || &application[1..] == b"ANIMEXTS1.0");
                if label == 0xFE || (label == 0xFF && !looping) {
                    dropped = true;
                } else {
                    out.extend_from_slice(&bytes[at..end]);
                }
                at = end;
            }
            0x2C => {
                let flags = *bytes.get(at + 9)?;
                // Descriptor, local colour table, LZW code size, then the image's sub-blocks.
                let data = at + 10 + table(flags) + 1;
                let end = blocks(data)?;
                out.extend_from_slice(&bytes[at..end]);
                at = end;
            }
            _ => return None,
        }
    }
}

/// Drops the `EXIF` and `XMP ` chunks and clears their flags in `VP8X`.
fn strip_webp(bytes: &[u8]) -> Option<Vec<u8>> {
    if bytes.len() < 12 || &bytes[..4] != b"RIFF" || &bytes[8..12] != b"WEBP" {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len());
    out.extend_from_slice(&bytes[..12]);
    let mut at = 12;
    let mut dropped = false;
    while at + 8 <= bytes.len() {
        let kind = &bytes[at..at + 4];
        let len =
            usize::try_from(u32::from_le_bytes([bytes[at + 4], bytes[at + 5], bytes[at + 6], bytes[at + 7]])).ok()?;
        let end = (at + 8).checked_add(len)?.checked_add(len & 1)?.min(bytes.len());
        if at + 8 + len > bytes.len() {
            return None;
        }
        if kind == b"EXIF" || kind == b"XMP " {
            dropped = true;
        } else {
            let start = out.len();
            out.extend_from_slice(&bytes[at..end]);
            if kind == b"VP8X" && len >= 1 {
                out[start + 8] &= !(0x08 | 0x04);
            }
        }
        at = end;
    }
    if !dropped {
        return None;
    }
    let riff = u32::try_from(out.len() - 8).ok()?;
    out[4..8].copy_from_slice(&riff.to_le_bytes());
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A JPEG of `w`×`h` with an EXIF block holding `orientation` and a GPS marker string.
    fn jpeg_with_exif(w: u32, h: u32, orientation: u16) -> Vec<u8> {
        let img =
            image::RgbImage::from_fn(
                w,
                h,
                |x, _| if x < w / 2 { image::Rgb([255, 0, 0]) } else { image::Rgb([0, 0, 255]) },
            );
        let mut plain = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut plain, 90).encode_image(&img).expect("encode");
        // TIFF header (big-endian), one IFD with the orientation tag, then a fake GPS string.
        let mut tiff = b"MM\0\x2a\0\0\0\x08".to_vec();
        tiff.extend_from_slice(&1u16.to_be_bytes());
        tiff.extend_from_slice(&0x0112u16.to_be_bytes());
        tiff.extend_from_slice(&3u16.to_be_bytes());
        tiff.extend_from_slice(&1u32.to_be_bytes());
        tiff.extend_from_slice(&orientation.to_be_bytes());
        tiff.extend_from_slice(&[0, 0]);
        tiff.extend_from_slice(&0u32.to_be_bytes());
        tiff.extend_from_slice(b"GPSLatitude 52.37N");
        let mut app1 = b"Exif\0\0".to_vec();
        app1.extend_from_slice(&tiff);
        let mut out = plain[..2].to_vec();
        out.extend_from_slice(&[0xFF, 0xE1]);
        out.extend_from_slice(&u16::try_from(app1.len() + 2).expect("len").to_be_bytes());
        out.extend_from_slice(&app1);
        out.extend_from_slice(&plain[2..]);
        out
    }

    fn contains(hay: &[u8], needle: &[u8]) -> bool {
        hay.windows(needle.len()).any(|w| w == needle)
    }

    #[test]
    fn a_rotated_photo_is_stored_upright_without_its_location() {
        let photo = jpeg_with_exif(40, 20, 6);
        assert!(contains(&photo, b"GPSLatitude"));
        let done = process(&photo, Raster::Jpeg).expect("process");
        assert_eq!(done.size, Some((20, 40)), "orientation 6 turns it a quarter");
        let stored = done.replacement.expect("stored again");
        assert!(!contains(&stored, b"GPSLatitude") && !contains(&stored, b"Exif"));
        let upright = image::load_from_memory(&stored).expect("decode");
        assert_eq!((upright.width(), upright.height()), (20, 40));
        let preview = image::load_from_memory(&done.preview.expect("preview")).expect("preview");
        assert_eq!((preview.width(), preview.height()), (20, 40));
    }

    #[test]
    fn an_upright_photo_loses_its_metadata_losslessly_and_big_ones_get_a_small_preview() {
        let photo = jpeg_with_exif(2000, 1000, 1);
        let done = process(&photo, Raster::Jpeg).expect("process");
        let stored = done.replacement.expect("stripped");
        assert!(!contains(&stored, b"GPSLatitude"));
        assert!(stored.ends_with(&photo[photo.len() - 64..]), "the scan is copied as it was");
        let preview = image::load_from_memory(&done.preview.expect("preview")).expect("preview");
        // Decoded at half scale in the DCT: a preview-sized picture without a resize.
        assert_eq!((preview.width(), preview.height()), (1000, 500));
        assert_eq!(done.size, Some((2000, 1000)));
        let grey = image::GrayImage::from_pixel(3000, 40, image::Luma([90]));
        let mut jpeg = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 80).encode_image(&grey).expect("encode");
        let done = process(&jpeg, Raster::Jpeg).expect("grey");
        let preview = image::load_from_memory(&done.preview.expect("preview")).expect("preview");
        assert!(preview.width() <= PREVIEW_EDGE && preview.width() >= PREVIEW_EDGE * 15 / 16, "{}", preview.width());
        assert!(process(b"\xFF\xD8\xFF\xE0 not really", Raster::Jpeg).is_err(), "unreadable images are refused");
    }

    /// A JPEG segment: marker and body, with its length.
    fn segment(marker: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![0xFF, marker];
        out.extend_from_slice(&u16::try_from(body.len() + 2).expect("len").to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn comments_and_every_other_text_segment_go_wherever_they_are_and_the_trailer_too() {
        let img = image::RgbImage::from_fn(64, 32, |x, y| image::Rgb([(x * 4) as u8, (y * 8) as u8, 90]));
        let mut plain = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut plain, 90).encode_image(&img).expect("encode");
        assert!(strip(&plain, Raster::Jpeg).is_none(), "a plain JPEG has nothing to drop");
        let eoi = plain.len() - 2;
        assert_eq!(&plain[eoi..], &[0xFF, 0xD9]);
        let mut photo = plain[..2].to_vec();
        for (marker, body) in [
            (0xFE, b"Shot at 12 Main Street".as_slice()),
            (0xE0, b"JFXX\0\x10thumbnail"),
            (0xE2, b"MPF\0II*\0 second picture with GPS"),
            (0xE2, b"ICC_PROFILE\0\x01\x01colour"),
            (0xEC, b"Ducky\0 Owner: Ada"),
            (0xED, b"Photoshop 3.0\0 IPTC city"),
            (0xEF, b"vendor serial 1234"),
        ] {
            photo.extend_from_slice(&segment(marker, body));
        }
        photo.extend_from_slice(&plain[2..eoi]);
        // A comment between the scan and the end, as progressive JPEGs put them between scans.
        photo.extend_from_slice(&segment(0xFE, b"between scans"));
        photo.extend_from_slice(&plain[eoi..]);
        photo.extend_from_slice(b"\xFF\xD8 a trailer: a motion photo's video, GPS 52.37N");
        let stripped = strip(&photo, Raster::Jpeg).expect("dropped");
        for text in ["Main Street", "JFXX", "MPF", "Ducky", "IPTC", "vendor", "between scans", "trailer", "GPS"] {
            assert!(!contains(&stripped, text.as_bytes()), "{text} survived");
        }
        assert!(contains(&stripped, b"ICC_PROFILE"), "the colour profile stays");
        assert!(stripped.ends_with(&[0xFF, 0xD9]));
        let mut expected = plain[..2].to_vec();
        expected.extend_from_slice(&segment(0xE2, b"ICC_PROFILE\0\x01\x01colour"));
        expected.extend_from_slice(&plain[2..]);
        assert_eq!(stripped, expected, "everything else is copied byte for byte");
        let decoded = image::load_from_memory(&stripped).expect("still a JPEG");
        assert_eq!((decoded.width(), decoded.height()), (64, 32));
        let done = process(&photo, Raster::Jpeg).expect("process");
        assert!(!contains(&done.replacement.expect("stored stripped"), b"Main Street"));
    }

    #[test]
    fn gif_comments_and_xmp_go_and_the_animation_loop_stays() {
        let frame = image::Frame::new(image::RgbaImage::from_pixel(3, 2, image::Rgba([9, 8, 7, 255])));
        let mut gif = Vec::new();
        {
            let mut encoder = image::codecs::gif::GifEncoder::new(&mut gif);
            encoder.set_repeat(image::codecs::gif::Repeat::Infinite).expect("repeat");
            encoder.encode_frames([frame.clone(), frame]).expect("gif");
        }
        assert!(contains(&gif, b"NETSCAPE2.0"));
        assert!(strip(&gif, Raster::Gif).is_none(), "nothing to drop");
        let header = 13 + (3 << ((gif[10] & 0x07) + 1)) * usize::from(gif[10] >> 7);
        let mut with = gif[..header].to_vec();
        with.extend_from_slice(b"\x21\xFE\x0cShot at home\x00");
        with.extend_from_slice(b"\x21\xFF\x0bXMP DataXMP\x08GPS 52.3\x00");
        with.extend_from_slice(&gif[header..gif.len() - 1]);
        with.extend_from_slice(b"\x21\xFE\x05later\x00");
        with.extend_from_slice(&gif[gif.len() - 1..]);
        with.extend_from_slice(b"trailing bytes");
        let stripped = strip(&with, Raster::Gif).expect("dropped");
        assert_eq!(stripped, gif, "exactly the comments, the XMP and the trailer went");
    }

    #[test]
    fn png_and_webp_metadata_chunks_are_dropped() {
        let img = image::RgbaImage::from_pixel(4, 4, image::Rgba([1, 2, 3, 128]));
        let mut png = Vec::new();
        image::DynamicImage::ImageRgba8(img.clone())
            .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
            .expect("png");
        // Insert a tEXt chunk after IHDR (8 + 25 bytes).
        let mut with_text = png[..33].to_vec();
        let data = b"Comment\0GPS 1,2";
        with_text.extend_from_slice(&u32::try_from(data.len()).expect("len").to_be_bytes());
        with_text.extend_from_slice(b"tEXt");
        with_text.extend_from_slice(data);
        with_text.extend_from_slice(&[0, 0, 0, 0]);
        with_text.extend_from_slice(&png[33..]);
        let stripped = strip(&with_text, Raster::Png).expect("dropped");
        assert_eq!(stripped, png);
        assert!(strip(&png, Raster::Png).is_none(), "nothing to drop");

        let mut webp = b"RIFF\0\0\0\0WEBPVP8X".to_vec();
        webp.extend_from_slice(&10u32.to_le_bytes());
        webp.extend_from_slice(&[0x08 | 0x10, 0, 0, 0, 3, 0, 0, 3, 0, 0]);
        webp.extend_from_slice(b"EXIF");
        webp.extend_from_slice(&3u32.to_le_bytes());
        webp.extend_from_slice(b"GPS\0");
        let len = u32::try_from(webp.len() - 8).expect("len");
        webp[4..8].copy_from_slice(&len.to_le_bytes());
        let out = strip(&webp, Raster::Webp).expect("dropped");
        assert!(!contains(&out, b"EXIF") && !contains(&out, b"GPS"));
        assert_eq!(out[20] & 0x08, 0, "the EXIF flag is cleared");
        assert_eq!(out[20] & 0x10, 0x10, "other flags stay");
        assert_eq!(u32::from_le_bytes([out[4], out[5], out[6], out[7]]) as usize, out.len() - 8);
    }
}
