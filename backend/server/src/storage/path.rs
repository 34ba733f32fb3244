//! Storage paths: the whitelist a client path must pass, and the walk on disk that refuses
//! every symbolic link below a tree's root.

use std::fs::Metadata;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Longest accepted storage path, in bytes.
pub const MAX_PATH_LEN: usize = 512;
/// Longest accepted path segment, in bytes: a file name may have 255, and its metadata sidecar
/// adds `@meta.json` to it.
pub const MAX_SEGMENT_LEN: usize = 255 - "@meta.json".len();

/// A relative storage path that passed the whitelist: `[A-Za-z0-9_.-]` segments joined by
/// single `/`, none empty, `.` or `..`, at most [`MAX_PATH_LEN`] bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoragePath(String);

fn invalid(message: &str) -> Error {
    Error::bad_request("invalid_path", message)
}

/// True for one valid path segment.
pub fn valid_segment(segment: &str) -> bool {
    !segment.is_empty()
        && segment.len() <= MAX_SEGMENT_LEN
        && segment != "."
        && segment != ".."
        && segment.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

impl StoragePath {
    /// Parses a client-supplied path (already percent-decoded by the router).
    pub fn parse(raw: &str) -> Result<Self> {
        if raw.is_empty() {
            return Err(invalid("The storage path is empty."));
        }
        if raw.len() > MAX_PATH_LEN {
            return Err(invalid("Storage paths are at most 512 characters long."));
        }
        if raw.starts_with('/') {
            return Err(invalid("Storage paths are relative: they must not start with `/`."));
        }
        if !raw.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-' | b'/')) {
            return Err(invalid("Storage paths may only use letters, digits, `_`, `.`, `-` and `/`."));
        }
        for segment in raw.split('/') {
            if segment.is_empty() {
                return Err(invalid("Storage paths must not contain empty segments (`//` or a trailing `/`)."));
            }
            if segment == "." || segment == ".." {
                return Err(invalid("Storage paths must not contain `.` or `..` segments."));
            }
            if segment.len() > MAX_SEGMENT_LEN {
                return Err(invalid("Each part of a storage path is at most 245 characters long."));
            }
        }
        Ok(Self(raw.to_owned()))
    }

    /// Like [`parse`](Self::parse), but an empty string means the tree's root.
    pub fn parse_prefix(raw: &str) -> Result<Option<Self>> {
        let trimmed = raw.strip_suffix('/').unwrap_or(raw);
        if trimmed.is_empty() { Ok(None) } else { Self::parse(trimmed).map(Some) }
    }

    /// The path as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The path's segments, first to last.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('/')
    }

    /// The last segment.
    pub fn file_name(&self) -> &str {
        self.0.rsplit('/').next().unwrap_or(&self.0)
    }

    /// True when the path names a JSON document (`*.json`).
    pub fn is_json(&self) -> bool {
        let name = self.file_name();
        name.len() > 5 && name[name.len() - 5..].eq_ignore_ascii_case(".json")
    }

    /// `self/name` (`name` must be a valid segment).
    pub fn child(parent: Option<&Self>, name: &str) -> Self {
        match parent {
            Some(p) => Self(format!("{}/{name}", p.0)),
            None => Self(name.to_owned()),
        }
    }

    /// True when `self` lies strictly inside `other`.
    pub fn is_inside(&self, other: &Self) -> bool {
        self.0.len() > other.0.len() && self.0.starts_with(&other.0) && self.0.as_bytes()[other.0.len()] == b'/'
    }

    /// The absolute path under `root` (lexically contained: segments were whitelisted).
    pub fn under(&self, root: &Path) -> PathBuf {
        let mut path = root.to_path_buf();
        path.extend(self.segments());
        path
    }
}

/// What a path names on disk, found without following any link.
#[derive(Debug)]
pub enum Found {
    Missing,
    File(Metadata),
    Dir(Metadata),
}

/// Walks `rel` below `root` one component at a time with `symlink_metadata`; any symbolic
/// link, or a file where a folder is needed, is refused. `root` itself is trusted.
pub fn inspect(root: &Path, rel: &StoragePath) -> Result<(PathBuf, Found)> {
    let full = rel.under(root);
    // Whitelisted segments cannot climb out; this is the belt to that brace.
    if !full.starts_with(root) {
        return Err(invalid("This path leaves the storage folder."));
    }
    let count = rel.segments().count();
    let mut current = root.to_path_buf();
    for (i, segment) in rel.segments().enumerate() {
        current.push(segment);
        let meta = match std::fs::symlink_metadata(&current) {
            Ok(meta) => meta,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok((full, Found::Missing)),
            Err(e) => return Err(e.into()),
        };
        let kind = meta.file_type();
        if kind.is_symlink() {
            return Err(invalid("This path goes through a symbolic link; storage never follows links."));
        }
        let last = i + 1 == count;
        if !last {
            if !kind.is_dir() {
                return Err(not_a_directory());
            }
            continue;
        }
        if kind.is_dir() {
            return Ok((full, Found::Dir(meta)));
        }
        if kind.is_file() {
            return Ok((full, Found::File(meta)));
        }
        return Err(invalid("This path names a special file, which storage does not serve."));
    }
    Ok((full, Found::Missing))
}

fn not_a_directory() -> Error {
    Error::bad_request("not_a_directory", "A folder in this path is a file.")
}

/// Creates `root` and every folder above `rel`'s last segment (refusing links on the way);
/// returns the folder that will hold `rel`.
pub fn prepare_parent(root: &Path, rel: &StoragePath) -> Result<PathBuf> {
    std::fs::create_dir_all(root)?;
    let mut current = root.to_path_buf();
    let segments: Vec<&str> = rel.segments().collect();
    for segment in &segments[..segments.len() - 1] {
        current.push(segment);
        loop {
            match std::fs::symlink_metadata(&current) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(invalid("This path goes through a symbolic link; storage never follows links."));
                }
                Ok(meta) if meta.is_dir() => break,
                Ok(_) => return Err(not_a_directory()),
                Err(e) if e.kind() == ErrorKind::NotFound => match std::fs::create_dir(&current) {
                    Ok(()) => break,
                    // Created by someone else between the look and the create: look again.
                    Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
                    Err(e) => return Err(e.into()),
                },
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(current)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_paths_parse() {
        for ok in ["a", "notes.json", "a/b/c.txt", "x-y_z.1/.hidden", "...", "a..b/c"] {
            assert!(StoragePath::parse(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn unsafe_paths_are_refused() {
        let long = "a".repeat(513);
        let long_name = format!("notes/{}", "n".repeat(MAX_SEGMENT_LEN + 1));
        assert!(StoragePath::parse(&format!("notes/{}", "n".repeat(MAX_SEGMENT_LEN))).is_ok());
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../b",
            "a/..",
            ".",
            "./a",
            "a//b",
            "a/",
            "a\\b",
            "..\\x",
            "a\0b",
            "a b",
            "é",
            "a?b",
            "%2e%2e/x",
            "~/x",
            &long,
            &long_name,
        ] {
            let err = StoragePath::parse(bad).expect_err(bad);
            assert_eq!(err.code(), "invalid_path", "{bad:?}");
        }
        let longest = format!("{}/{}/{}", "a".repeat(200), "b".repeat(200), "c".repeat(110));
        assert_eq!(longest.len(), MAX_PATH_LEN);
        assert!(StoragePath::parse(&longest).is_ok());
    }

    #[test]
    fn json_detection_and_nesting() {
        let p = StoragePath::parse("dir/Data.JSON").expect("valid");
        assert!(p.is_json());
        assert_eq!(p.file_name(), "Data.JSON");
        assert!(!StoragePath::parse(".json").expect("valid").is_json());
        let dir = StoragePath::parse("a/b").expect("valid");
        assert!(StoragePath::parse("a/b/c").expect("valid").is_inside(&dir));
        assert!(!StoragePath::parse("a/bc").expect("valid").is_inside(&dir));
        assert!(!dir.is_inside(&dir));
        assert_eq!(StoragePath::parse_prefix("").expect("root"), None);
        assert_eq!(StoragePath::parse_prefix("a/").expect("dir").map(|p| p.0), Some("a".to_owned()));
    }

    #[test]
    fn inspection_refuses_links_and_files_used_as_folders() {
        let dir = tempfile::tempdir().expect("tmp");
        let root = dir.path().join("tree");
        std::fs::create_dir_all(root.join("sub")).expect("mkdir");
        std::fs::write(root.join("sub/file"), b"x").expect("write");
        std::os::unix::fs::symlink(dir.path(), root.join("link")).expect("symlink");
        let p = |s: &str| StoragePath::parse(s).expect("valid");
        assert!(matches!(inspect(&root, &p("sub/file")).expect("ok").1, Found::File(_)));
        assert!(matches!(inspect(&root, &p("sub")).expect("ok").1, Found::Dir(_)));
        assert!(matches!(inspect(&root, &p("nope/deeper")).expect("ok").1, Found::Missing));
        assert_eq!(inspect(&root, &p("link")).expect_err("link").code(), "invalid_path");
        assert_eq!(inspect(&root, &p("link/tree/sub/file")).expect_err("link").code(), "invalid_path");
        assert_eq!(inspect(&root, &p("sub/file/x")).expect_err("file").code(), "not_a_directory");
        assert_eq!(prepare_parent(&root, &p("link/new.txt")).expect_err("link").code(), "invalid_path");
        assert!(!dir.path().join("new.txt").exists());
        let made = prepare_parent(&root, &p("x/y/z.txt")).expect("parents");
        assert_eq!(made, root.join("x/y"));
        assert!(made.is_dir());
    }
}
