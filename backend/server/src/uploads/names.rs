//! File names: what the client says a file is called is checked, then the server chooses a
//! safe name from it (letters, digits, `.`, `-`, `_`; the sniffed type's extension for images;
//! a numbered variant when the chat already has one).

/// Longest name a client may send, in characters.
pub const MAX_CLIENT_NAME_CHARS: usize = 255;
/// Longest stored name, in bytes (before a collision suffix): room for `_99` and a preview's
/// `.jpg` within the file system's 255.
const MAX_STORED_NAME_BYTES: usize = 180;

/// Why a client's file name is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadName {
    Empty,
    /// `/`, `\`, `..`, NUL or another control character.
    Unsafe,
    TooLong,
}

impl BadName {
    /// The sentence the owner reads.
    pub fn message(self) -> String {
        match self {
            BadName::Empty => "Each file needs a name.".into(),
            BadName::Unsafe => "File names may not contain '/', '\\', '..' or control characters.".into(),
            BadName::TooLong => format!("File names are at most {MAX_CLIENT_NAME_CHARS} characters."),
        }
    }
}

/// Checks a client's file name and turns it into a safe stored name; `extension` (the sniffed
/// image type's) replaces whatever extension the name had.
pub fn safe_name(raw: &str, extension: Option<&str>) -> Result<String, BadName> {
    if raw.is_empty() {
        return Err(BadName::Empty);
    }
    if raw.chars().count() > MAX_CLIENT_NAME_CHARS {
        return Err(BadName::TooLong);
    }
    if raw.contains('/') || raw.contains('\\') || raw.contains("..") || raw.chars().any(char::is_control) {
        return Err(BadName::Unsafe);
    }
    let cleaned: String = raw
        .trim()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') { c } else { '_' })
        .collect();
    let cleaned = cleaned.trim_start_matches('.');
    let (stem, old_ext) = match cleaned.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && !ext.is_empty() && ext.len() <= 10 => (stem, Some(ext)),
        _ => (cleaned, None),
    };
    let stem = stem.trim_start_matches(['.', '-']);
    let stem = if stem.chars().any(|c| c.is_ascii_alphanumeric()) { stem } else { "file" };
    let ext = extension.or(old_ext).map(str::to_ascii_lowercase);
    let room = MAX_STORED_NAME_BYTES - ext.as_ref().map_or(0, |e| e.len() + 1);
    let stem = &stem[..stem.len().min(room)];
    Ok(match ext {
        Some(ext) => format!("{stem}.{ext}"),
        None => stem.to_owned(),
    })
}

/// The `n`th variant of `name` (`photo.jpg` → `photo_2.jpg`) for when the first is taken.
pub fn numbered(name: &str, n: u32) -> String {
    match name.rsplit_once('.') {
        Some((stem, ext)) => format!("{stem}_{n}.{ext}"),
        None => format!("{name}_{n}"),
    }
}

/// True for a name the server could have chosen: what a path segment of a file route must be.
pub fn is_stored_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_STORED_NAME_BYTES + 8
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        && !name.contains("..")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cleaned_and_take_the_sniffed_extension() {
        assert_eq!(safe_name("My photo (1).JPG", None).as_deref(), Ok("My_photo__1_.jpg"));
        assert_eq!(safe_name("shot.png", Some("jpg")).as_deref(), Ok("shot.jpg"));
        assert_eq!(safe_name(".bashrc", None).as_deref(), Ok("bashrc"));
        assert_eq!(safe_name("日本語.txt", None).as_deref(), Ok("file.txt"));
        assert_eq!(safe_name("README", None).as_deref(), Ok("README"));
        assert_eq!(numbered("a.tar.gz", 2), "a.tar_2.gz");
        let long = format!("{}.txt", "a".repeat(250));
        let stored = safe_name(&long, None).expect("long but allowed");
        assert!(stored.len() <= MAX_STORED_NAME_BYTES && stored.ends_with(".txt"));
        assert!(is_stored_name(&stored) && is_stored_name(&numbered(&stored, 99)));
    }

    #[test]
    fn unsafe_names_are_refused() {
        assert_eq!(safe_name("../etc/passwd", None), Err(BadName::Unsafe));
        assert_eq!(safe_name("a/b.txt", None), Err(BadName::Unsafe));
        assert_eq!(safe_name("a\\b.txt", None), Err(BadName::Unsafe));
        assert_eq!(safe_name("nul\0.txt", None), Err(BadName::Unsafe));
        assert_eq!(safe_name("..", None), Err(BadName::Unsafe));
        assert_eq!(safe_name(&"x".repeat(300), None), Err(BadName::TooLong));
        assert_eq!(safe_name("", None), Err(BadName::Empty));
        assert!(!is_stored_name("../x") && !is_stored_name(".hidden") && !is_stored_name("a b"));
    }
}
