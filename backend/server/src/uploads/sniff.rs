//! What a file is, read from its first bytes (never from the client's `Content-Type`): the
//! kinds a chat accepts — photos and pictures, documents, archives, audio and video, text —
//! and the ones it refuses (programs, formats it cannot recognise, photos it cannot strip).

/// Bytes read before deciding.
pub const SNIFF_BYTES: usize = 512;

/// A raster image the server decodes (orientation, metadata, preview) and the agents see.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Raster {
    Jpeg,
    Png,
    Gif,
    Webp,
}

impl Raster {
    /// Its MIME type.
    pub fn mime(self) -> &'static str {
        match self {
            Raster::Jpeg => "image/jpeg",
            Raster::Png => "image/png",
            Raster::Gif => "image/gif",
            Raster::Webp => "image/webp",
        }
    }

    /// The file extension it is stored with.
    pub fn extension(self) -> &'static str {
        match self {
            Raster::Jpeg => "jpg",
            Raster::Png => "png",
            Raster::Gif => "gif",
            Raster::Webp => "webp",
        }
    }

    /// The raster type of a stored MIME type.
    pub fn of_mime(mime: &str) -> Option<Self> {
        match mime {
            "image/jpeg" => Some(Raster::Jpeg),
            "image/png" => Some(Raster::Png),
            "image/gif" => Some(Raster::Gif),
            "image/webp" => Some(Raster::Webp),
            _ => None,
        }
    }
}

/// What the first bytes say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sniffed {
    /// A raster image.
    Image(Raster),
    /// Any other accepted file, with its MIME type.
    File(&'static str),
    /// Refused, with the reason the owner reads.
    Refused(&'static str),
}

const PROGRAM: &str = "Programs are not accepted as attachments.";
const UNKNOWN: &str = "This kind of file is not accepted: send images, PDFs, documents, text, audio, video or a zip.";
const HEIF: &str = "HEIC and AVIF photos cannot be cleaned of their location here; share the photo as JPEG.";

/// Decides what a file is from its first bytes (`head`, up to [`SNIFF_BYTES`]; all of a
/// shorter file) and, only to name text and office formats, its file name.
pub fn sniff(head: &[u8], name: &str) -> Sniffed {
    let starts = |magic: &[u8]| head.starts_with(magic);
    let at = |offset: usize, magic: &[u8]| head.get(offset..offset + magic.len()) == Some(magic);
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    if starts(&[0xFF, 0xD8, 0xFF]) {
        return Sniffed::Image(Raster::Jpeg);
    }
    if starts(b"\x89PNG\r\n\x1a\n") {
        return Sniffed::Image(Raster::Png);
    }
    if starts(b"GIF87a") || starts(b"GIF89a") {
        return Sniffed::Image(Raster::Gif);
    }
    if starts(b"RIFF") && at(8, b"WEBP") {
        return Sniffed::Image(Raster::Webp);
    }
    if starts(b"RIFF") && at(8, b"WAVE") {
        return Sniffed::File("audio/wav");
    }
    if starts(b"RIFF") && at(8, b"AVI ") {
        return Sniffed::File("video/x-msvideo");
    }
    if at(4, b"ftyp") {
        let brand = head.get(8..12).unwrap_or_default();
        return match brand {
            b"heic" | b"heix" | b"heim" | b"heis" | b"hevc" | b"hevx" | b"mif1" | b"msf1" | b"avif" | b"avis" => {
                Sniffed::Refused(HEIF)
            }
            b"M4A " | b"M4B " => Sniffed::File("audio/mp4"),
            b"qt  " => Sniffed::File("video/quicktime"),
            b"3gp4" | b"3gp5" | b"3gp6" | b"3g2a" => Sniffed::File("video/3gpp"),
            _ => Sniffed::File("video/mp4"),
        };
    }
    if starts(b"%PDF-") {
        return Sniffed::File("application/pdf");
    }
    if starts(b"PK\x03\x04") || starts(b"PK\x05\x06") {
        return Sniffed::File(match ext.as_str() {
            "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            "pptx" => "application/vnd.openxmlformats-officedocument.presentationml.presentation",
            "odt" => "application/vnd.oasis.opendocument.text",
            "ods" => "application/vnd.oasis.opendocument.spreadsheet",
            "epub" => "application/epub+zip",
            "apk" | "jar" | "ipa" | "xpi" => return Sniffed::Refused(PROGRAM),
            _ => "application/zip",
        });
    }
    if starts(&[0x1F, 0x8B]) {
        return Sniffed::File("application/gzip");
    }
    if starts(&[0x37, 0x7A, 0xBC, 0xAF, 0x27, 0x1C]) {
        return Sniffed::File("application/x-7z-compressed");
    }
    if at(257, b"ustar") {
        return Sniffed::File("application/x-tar");
    }
    if starts(b"ID3") || starts(&[0xFF, 0xFB]) || starts(&[0xFF, 0xF3]) || starts(&[0xFF, 0xF2]) {
        return Sniffed::File("audio/mpeg");
    }
    if starts(b"OggS") {
        return Sniffed::File("audio/ogg");
    }
    if starts(b"fLaC") {
        return Sniffed::File("audio/flac");
    }
    if starts(&[0x1A, 0x45, 0xDF, 0xA3]) {
        return Sniffed::File("video/webm");
    }
    if starts(b"SQLite format 3\0") {
        return Sniffed::File("application/vnd.sqlite3");
    }
    if starts(b"\x7fELF")
        || starts(b"MZ")
        || starts(&[0xFE, 0xED, 0xFA, 0xCE])
        || starts(&[0xFE, 0xED, 0xFA, 0xCF])
        || starts(&[0xCE, 0xFA, 0xED, 0xFE])
        || starts(&[0xCF, 0xFA, 0xED, 0xFE])
        || starts(&[0xCA, 0xFE, 0xBA, 0xBE])
        || starts(b"\0asm")
    {
        return Sniffed::Refused(PROGRAM);
    }
    if is_text(head) {
        return Sniffed::File(match ext.as_str() {
            "md" | "markdown" => "text/markdown",
            "csv" => "text/csv",
            "tsv" => "text/tab-separated-values",
            "json" => "application/json",
            "html" | "htm" => "text/html",
            "xml" => "application/xml",
            "svg" => "image/svg+xml",
            _ => "text/plain",
        });
    }
    Sniffed::Refused(UNKNOWN)
}

/// UTF-8 (a character cut at the end of the head is fine) without NULs or other control
/// characters but tab, newline, carriage return and form feed.
fn is_text(head: &[u8]) -> bool {
    let valid = match std::str::from_utf8(head) {
        Ok(_) => head.len(),
        Err(e) if e.error_len().is_none() && head.len() >= SNIFF_BYTES => e.valid_up_to(),
        Err(_) => return false,
    };
    head[..valid].iter().all(|b| *b >= 0x20 || matches!(b, b'\t' | b'\n' | b'\r' | 0x0C)) && valid > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bytes_decide_not_the_name() {
        assert_eq!(sniff(b"\xFF\xD8\xFF\xE0rest", "photo.png"), Sniffed::Image(Raster::Jpeg));
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n....", "x.jpg"), Sniffed::Image(Raster::Png));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 ", "a"), Sniffed::Image(Raster::Webp));
        assert_eq!(sniff(b"%PDF-1.7\n", "notes.txt"), Sniffed::File("application/pdf"));
        assert_eq!(sniff(b"hello, world\n", "notes.md"), Sniffed::File("text/markdown"));
        assert_eq!(sniff("héllo".as_bytes(), "a.txt"), Sniffed::File("text/plain"));
        assert_eq!(sniff(b"a,b\n1,2\n", "t.csv"), Sniffed::File("text/csv"));
        assert_eq!(
            sniff(b"PK\x03\x04....", "report.docx"),
            Sniffed::File("application/vnd.openxmlformats-officedocument.wordprocessingml.document")
        );
        assert_eq!(sniff(b"\0\0\0\x18ftypmp42", "v.mov"), Sniffed::File("video/mp4"));
    }

    #[test]
    fn programs_unknown_binaries_and_unstrippable_photos_are_refused() {
        for (head, name) in [
            (&b"\x7fELF\x02\x01\x01"[..], "tool"),
            (b"MZ\x90\0", "setup.exe"),
            (b"\0\0\0\x18ftypheic", "IMG_1.HEIC"),
            (b"\x00\x01\x02\x03\xfe\xff", "blob.bin"),
            (b"text with a \0 nul", "a.txt"),
            (b"PK\x03\x04....", "app.apk"),
        ] {
            assert!(matches!(sniff(head, name), Sniffed::Refused(_)), "{name}");
        }
        let mut long = format!("a{}", "é".repeat(SNIFF_BYTES / 2)).into_bytes();
        long.truncate(SNIFF_BYTES);
        assert_eq!(sniff(&long, "cut.txt"), Sniffed::File("text/plain"), "a character cut by the head is fine");
    }
}
