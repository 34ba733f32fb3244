//! Storage paths: the whitelist a client path must pass, and the walk on disk (from the
//! tree root's descriptor, through `safe_fs`) that refuses every symbolic link below it.

use std::ffi::OsStr;
use std::fs::{File, Metadata};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::safe_fs::{self, Dir, Kind, Refused};

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
    /// A regular file, already open for reading (opened non-blocking: never a FIFO).
    File(File, Metadata),
    Dir(Dir),
}

/// A path found in its tree: the folder holding its last segment (`None` when a folder on the
/// way is missing), that segment, and what it names.
#[derive(Debug)]
pub struct Located {
    pub parent: Option<Dir>,
    pub name: String,
    pub found: Found,
}

/// A storage tree's root, `DATA_DIR/<rel>` (`app-data/<id>`, `shared`). The agent can write
/// `app-data/` and `shared/`, so the root and everything below it are opened through
/// `safe_fs` (one component at a time, no link followed), never by path.
#[derive(Debug, Clone)]
pub struct Root {
    pub data_dir: PathBuf,
    pub rel: PathBuf,
}

fn through_link() -> Error {
    invalid("This path goes through a symbolic link; storage never follows links.")
}

fn special() -> Error {
    invalid("This path names a special file, which storage does not serve.")
}

/// A refusal of `safe_fs` as the storage API says it; other errors as they are.
fn refused(e: std::io::Error) -> Error {
    match safe_fs::refusal(&e) {
        Some(Refused::Link(_)) => through_link(),
        Some(Refused::NotDir(_)) => not_a_directory(),
        Some(Refused::NotRegular(_)) => special(),
        _ => e.into(),
    }
}

impl Root {
    /// Where the root is (for messages and measures).
    pub fn path(&self) -> PathBuf {
        self.data_dir.join(&self.rel)
    }

    /// The root folder, or `None` while it does not exist.
    pub fn open(&self) -> Result<Option<Dir>> {
        match Dir::open_under(&self.data_dir, &self.rel) {
            Ok(dir) => Ok(Some(dir)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(refused(e)),
        }
    }

    /// The root folder, created when missing.
    pub fn create(&self) -> Result<Dir> {
        Dir::create_under(&self.data_dir, &self.rel).map_err(refused)
    }
}

/// Walks `rel` below `root` one component at a time from the root's descriptor, never
/// following a link: a link, or a file where a folder is needed, is refused; a file is opened
/// (a FIFO, socket or device is refused, never waited on).
pub fn locate(root: &Root, rel: &StoragePath) -> Result<Located> {
    let name = rel.file_name().to_owned();
    let missing = |parent| Ok(Located { parent, name: name.clone(), found: Found::Missing });
    let Some(mut dir) = root.open()? else { return missing(None) };
    let segments: Vec<&str> = rel.segments().collect();
    for segment in &segments[..segments.len() - 1] {
        match dir.kind(OsStr::new(segment))? {
            None => return missing(None),
            Some(Kind::Dir) => dir = dir.sub(Path::new(segment)).map_err(refused)?,
            Some(Kind::Link) => return Err(through_link()),
            Some(_) => return Err(not_a_directory()),
        }
    }
    let found = match dir.kind(OsStr::new(&name))? {
        None => Found::Missing,
        Some(Kind::Dir) => Found::Dir(dir.sub(Path::new(&name)).map_err(refused)?),
        Some(Kind::File) => match dir.open_file(Path::new(&name)) {
            Ok((file, meta)) => Found::File(file, meta),
            Err(e) if e.kind() == ErrorKind::NotFound => Found::Missing,
            Err(e) => return Err(refused(e)),
        },
        Some(Kind::Link) => return Err(through_link()),
        Some(Kind::Special) => return Err(special()),
    };
    Ok(Located { parent: Some(dir), name, found })
}

/// Refuses to write over `name` in `parent` unless it is missing or a regular file: a folder
/// is `is_a_directory`, a link or a special file is refused (never replaced or followed).
pub fn writable_target(parent: &Dir, name: &str) -> Result<()> {
    match parent.kind(OsStr::new(name))? {
        None | Some(Kind::File) => Ok(()),
        Some(Kind::Dir) => Err(crate::error::Domain::IsADirectory.into()),
        Some(Kind::Link) => Err(through_link()),
        Some(Kind::Special) => Err(special()),
    }
}

fn not_a_directory() -> Error {
    Error::bad_request("not_a_directory", "A folder in this path is a file.")
}

/// Creates the root and every folder above `rel`'s last segment (refusing links on the way);
/// returns the folder that will hold `rel`.
pub fn prepare_parent(root: &Root, rel: &StoragePath) -> Result<Dir> {
    let mut dir = root.create()?;
    let segments: Vec<&str> = rel.segments().collect();
    for segment in &segments[..segments.len() - 1] {
        dir = dir.sub_or_create(Path::new(segment)).map_err(refused)?;
    }
    Ok(dir)
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
    fn the_walk_refuses_links_special_files_and_files_used_as_folders() {
        let dir = tempfile::tempdir().expect("tmp");
        let root = Root { data_dir: dir.path().to_path_buf(), rel: PathBuf::from("tree") };
        let tree = root.path();
        std::fs::create_dir_all(tree.join("sub")).expect("mkdir");
        std::fs::write(tree.join("sub/file"), b"x").expect("write");
        std::os::unix::fs::symlink(dir.path(), tree.join("link")).expect("symlink");
        nix::unistd::mkfifo(&tree.join("pipe"), nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("fifo");
        let p = |s: &str| StoragePath::parse(s).expect("valid");
        assert!(matches!(locate(&root, &p("sub/file")).expect("ok").found, Found::File(..)));
        assert!(matches!(locate(&root, &p("sub")).expect("ok").found, Found::Dir(_)));
        assert!(matches!(locate(&root, &p("nope/deeper")).expect("ok").found, Found::Missing));
        assert_eq!(locate(&root, &p("link")).expect_err("link").code(), "invalid_path");
        assert_eq!(locate(&root, &p("link/tree/sub/file")).expect_err("link").code(), "invalid_path");
        assert_eq!(locate(&root, &p("pipe")).expect_err("fifo").code(), "invalid_path");
        assert_eq!(locate(&root, &p("sub/file/x")).expect_err("file").code(), "not_a_directory");
        assert_eq!(prepare_parent(&root, &p("link/new.txt")).expect_err("link").code(), "invalid_path");
        assert!(!dir.path().join("new.txt").exists());
        let made = prepare_parent(&root, &p("x/y/z.txt")).expect("parents");
        assert_eq!(made.path(), tree.join("x/y"));
        assert!(tree.join("x/y").is_dir());
        // The root itself swapped for a link is refused too.
        std::fs::rename(&tree, dir.path().join("moved")).expect("move");
        std::os::unix::fs::symlink(dir.path().join("moved"), &tree).expect("root link");
        assert_eq!(locate(&root, &p("sub/file")).expect_err("root link").code(), "invalid_path");
    }
}
