//! Files in folders the agent can write (`apps/`, `app-data/`, `shared/`, `agent-home/`,
//! `skills/`, `memory/`, `cli-auth/<provider>/`, the chat scratch folders), reached without
//! following a link the agent planted. A [`Dir`] is an open folder descriptor; everything
//! below it is opened relative to it (`openat`) one component at a time with `O_NOFOLLOW`, so
//! a folder swapped for a link mid-way is refused, not followed. Only regular files are read
//! (never a FIFO, device or socket: opened non-blocking, then checked), always up to a bound;
//! files are written to a temporary name in the verified folder and renamed over the target,
//! so a link at the target is replaced, never written through. Removal (`unlinkat`) never
//! follows either. Blocking: call from blocking threads.

use std::ffi::{CStr, OsStr, OsString};
use std::fs::{File, Metadata};
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, openat, renameat};
use nix::sys::stat::{Mode, SFlag, fchmod, fstatat, mkdirat};
use nix::unistd::{UnlinkatFlags, fsync, linkat, unlinkat};

/// How a folder below a verified one is opened.
const DIR_FLAGS: OFlag = OFlag::O_RDONLY.union(OFlag::O_DIRECTORY).union(OFlag::O_NOFOLLOW).union(OFlag::O_CLOEXEC);
/// How a file is opened for reading: a FIFO opens at once instead of blocking (and is then
/// refused), a terminal never becomes ours.
const READ_FLAGS: OFlag =
    OFlag::O_RDONLY.union(OFlag::O_NOFOLLOW).union(OFlag::O_NONBLOCK).union(OFlag::O_NOCTTY).union(OFlag::O_CLOEXEC);
/// Deepest folder walk [`Dir::remove_tree`] goes.
const MAX_REMOVE_DEPTH: usize = 64;

/// Why a path was refused, carried inside the `io::Error` (see [`refusal`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("{0} is a symbolic link")]
    Link(String),
    #[error("{0} is not a regular file")]
    NotRegular(String),
    #[error("{0} is not a folder")]
    NotDir(String),
    #[error("{0} is larger than {1} bytes")]
    TooLarge(String, u64),
    #[error("{0} holds more than {1} entries")]
    TooManyEntries(String, usize),
    #[error("{0:?} is not a plain relative path")]
    BadPath(String),
}

impl Refused {
    fn into_io(self) -> io::Error {
        let kind = match self {
            Refused::TooLarge(..) | Refused::TooManyEntries(..) => io::ErrorKind::FileTooLarge,
            Refused::BadPath(_) => io::ErrorKind::InvalidInput,
            _ => io::ErrorKind::InvalidData,
        };
        io::Error::new(kind, self)
    }
}

/// The refusal inside `e`, when it is one (as opposed to a plain I/O failure).
pub fn refusal(e: &io::Error) -> Option<&Refused> {
    e.get_ref().and_then(|inner| inner.downcast_ref::<Refused>())
}

/// What a directory entry is, seen without following it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Link,
    /// A FIFO, socket or device.
    Special,
}

impl Kind {
    /// The kind a `stat` answer describes.
    pub fn of_stat(stat: &nix::sys::stat::FileStat) -> Kind {
        Kind::of_mode(stat.st_mode)
    }

    fn of_mode(mode: u32) -> Kind {
        match SFlag::from_bits_truncate(mode & SFlag::S_IFMT.bits()) {
            SFlag::S_IFREG => Kind::File,
            SFlag::S_IFDIR => Kind::Dir,
            SFlag::S_IFLNK => Kind::Link,
            _ => Kind::Special,
        }
    }
}

/// One entry of a folder.
#[derive(Debug, Clone)]
pub struct Entry {
    pub name: OsString,
    pub kind: Kind,
}

/// An open folder: the root of every path opened through it.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    /// Where it was, for messages only (never reopened by path).
    path: PathBuf,
}

fn errno(e: Errno) -> io::Error {
    io::Error::from_raw_os_error(e as i32)
}

/// The components of `rel`: normal names only (no `..`, no root, nothing empty).
fn components(rel: &Path) -> io::Result<Vec<&OsStr>> {
    let mut out = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(name) => out.push(name),
            Component::CurDir => {}
            _ => return Err(Refused::BadPath(rel.display().to_string()).into_io()),
        }
    }
    Ok(out)
}

/// `rel` split into its folder part and its last name.
fn split(rel: &Path) -> io::Result<(Vec<&OsStr>, &OsStr)> {
    let mut parts = components(rel)?;
    let name = parts.pop().ok_or_else(|| Refused::BadPath(rel.display().to_string()).into_io())?;
    Ok((parts, name))
}

impl Dir {
    /// Opens a folder the server owns by its path (`DATA_DIR`, its own subfolders): the path
    /// itself is trusted, links in it included.
    pub fn open(path: &Path) -> io::Result<Dir> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_DIRECTORY | nix::libc::O_CLOEXEC)
            .open(path)?;
        Ok(Dir { fd: OwnedFd::from(file), path: path.to_path_buf() })
    }

    /// Opens `rel` below the trusted folder `root` without following any link below it.
    pub fn open_under(root: &Path, rel: &Path) -> io::Result<Dir> {
        Dir::open(root)?.sub(rel)
    }

    /// Like [`open_under`](Self::open_under), creating missing folders (mode `0o700`).
    pub fn create_under(root: &Path, rel: &Path) -> io::Result<Dir> {
        std::fs::create_dir_all(root)?;
        Dir::open(root)?.sub_or_create(rel)
    }

    /// Where this folder was opened (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The folder's descriptor.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    fn shown(&self, name: &OsStr) -> String {
        self.path.join(name).display().to_string()
    }

    /// Opens the folder `name` directly in this one; a link or anything else is refused.
    fn child(&self, name: &OsStr) -> io::Result<Dir> {
        match openat(self.fd.as_fd(), name, DIR_FLAGS, Mode::empty()) {
            Ok(fd) => Ok(Dir { fd, path: self.path.join(name) }),
            Err(Errno::ELOOP) => Err(Refused::Link(self.shown(name)).into_io()),
            Err(Errno::ENOTDIR) => Err(match self.kind(name) {
                Ok(Some(Kind::Link)) => Refused::Link(self.shown(name)),
                _ => Refused::NotDir(self.shown(name)),
            }
            .into_io()),
            Err(e) => Err(errno(e)),
        }
    }

    /// This folder again, as a descriptor of its own.
    pub fn reopen(&self) -> io::Result<Dir> {
        let fd = openat(self.fd.as_fd(), ".", DIR_FLAGS, Mode::empty()).map_err(errno)?;
        Ok(Dir { fd, path: self.path.clone() })
    }

    /// Opens the folder `rel` below this one, one component at a time.
    pub fn sub(&self, rel: &Path) -> io::Result<Dir> {
        let mut dir = self.reopen()?;
        for name in components(rel)? {
            dir = dir.child(name)?;
        }
        Ok(dir)
    }

    /// Like [`sub`](Self::sub), creating missing folders (mode `0o700`).
    pub fn sub_or_create(&self, rel: &Path) -> io::Result<Dir> {
        let mut dir = self.reopen()?;
        for name in components(rel)? {
            match mkdirat(dir.fd.as_fd(), name, Mode::from_bits_truncate(0o700)) {
                Ok(()) | Err(Errno::EEXIST) => {}
                Err(e) => return Err(errno(e)),
            }
            dir = dir.child(name)?;
        }
        Ok(dir)
    }

    /// What `name` (directly in this folder) is, without following it; `None` when missing.
    pub fn kind(&self, name: &OsStr) -> io::Result<Option<Kind>> {
        match fstatat(self.fd.as_fd(), name, AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(Kind::of_mode(stat.st_mode))),
            Err(Errno::ENOENT) => Ok(None),
            Err(e) => Err(errno(e)),
        }
    }

    /// The file `rel` below this folder, opened for reading: a regular file only.
    pub fn open_file(&self, rel: &Path) -> io::Result<(File, Metadata)> {
        let (parents, name) = split(rel)?;
        let mut dir = None;
        for part in parents {
            dir = Some(dir.as_ref().unwrap_or(self).child(part)?);
        }
        dir.as_ref().unwrap_or(self).open_file_here(name)
    }

    fn open_file_here(&self, name: &OsStr) -> io::Result<(File, Metadata)> {
        let fd = match openat(self.fd.as_fd(), name, READ_FLAGS, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::ELOOP) => return Err(Refused::Link(self.shown(name)).into_io()),
            Err(e) => return Err(errno(e)),
        };
        let file = File::from(fd);
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(Refused::NotRegular(self.shown(name)).into_io());
        }
        Ok((file, meta))
    }

    /// The bytes of the regular file `rel`, at most `max` (a longer one is refused).
    pub fn read(&self, rel: &Path, max: u64) -> io::Result<Vec<u8>> {
        let (file, meta) = self.open_file(rel)?;
        let shown = || self.path.join(rel).display().to_string();
        if meta.len() > max {
            return Err(Refused::TooLarge(shown(), max).into_io());
        }
        let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
        file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > max {
            return Err(Refused::TooLarge(shown(), max).into_io());
        }
        Ok(bytes)
    }

    /// [`read`](Self::read), with a missing file (or folder on the way) as `None`.
    pub fn read_optional(&self, rel: &Path, max: u64) -> io::Result<Option<Vec<u8>>> {
        match self.read(rel, max) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Replaces the file `name` (directly in this folder) with `bytes`, mode `mode`: written to
    /// a new temporary file beside it, synced, then renamed over it. Whatever `name` was — a
    /// link, a FIFO — is replaced, never written through; a folder there is an error.
    pub fn write(&self, name: &OsStr, bytes: &[u8], mode: u32) -> io::Result<()> {
        let name = single(name)?;
        self.staged(name, bytes, mode, |tmp| {
            renameat(self.fd.as_fd(), tmp, self.fd.as_fd(), name).map_err(errno)?;
            Ok(true)
        })?;
        Ok(())
    }

    /// Creates the file `name` (directly in this folder) with `bytes`, mode `mode`, only if
    /// nothing is there (`false` otherwise, and nothing changes): written and synced beside it,
    /// then linked into place, so no reader ever sees it empty or half written.
    pub fn write_new(&self, name: &OsStr, bytes: &[u8], mode: u32) -> io::Result<bool> {
        let name = single(name)?;
        self.staged(name, bytes, mode, |tmp| {
            let placed = match linkat(self.fd.as_fd(), tmp, self.fd.as_fd(), name, AtFlags::empty()) {
                Ok(()) => true,
                Err(Errno::EEXIST) => false,
                Err(e) => return Err(errno(e)),
            };
            unlinkat(self.fd.as_fd(), tmp, UnlinkatFlags::NoRemoveDir).map_err(errno)?;
            Ok(placed)
        })
    }

    /// Writes `bytes` to a new temporary file beside `name`, synced, and hands its name to
    /// `place`; the temporary file is removed when `place` fails, and the folder synced when it
    /// succeeds.
    fn staged(
        &self,
        name: &OsStr,
        bytes: &[u8],
        mode: u32,
        place: impl FnOnce(&OsStr) -> io::Result<bool>,
    ) -> io::Result<bool> {
        let mut tmp_name = OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".~tmp-{}", uuid::Uuid::new_v4().simple()));
        let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let fd = openat(self.fd.as_fd(), tmp_name.as_os_str(), flags, Mode::from_bits_truncate(mode)).map_err(errno)?;
        let mut file = File::from(fd);
        let placed = (|| {
            file.write_all(bytes)?;
            // The mode asked for, whatever the umask.
            fchmod(file.as_fd(), Mode::from_bits_truncate(mode)).map_err(errno)?;
            file.sync_all()?;
            place(tmp_name.as_os_str())
        })();
        match placed {
            Ok(placed) => {
                fsync(self.fd.as_fd()).map_err(errno)?;
                Ok(placed)
            }
            Err(e) => {
                let _ = unlinkat(self.fd.as_fd(), tmp_name.as_os_str(), UnlinkatFlags::NoRemoveDir);
                Err(e)
            }
        }
    }

    /// Removes the file (or link, or other non-folder) `name` directly in this folder; `false`
    /// when there was none.
    pub fn remove_file(&self, name: &OsStr) -> io::Result<bool> {
        match unlinkat(self.fd.as_fd(), single(name)?, UnlinkatFlags::NoRemoveDir) {
            Ok(()) => Ok(true),
            Err(Errno::ENOENT) => Ok(false),
            Err(e) => Err(errno(e)),
        }
    }

    /// Removes `name` directly in this folder and, when it is a folder, everything in it;
    /// links are removed, never followed. `false` when there was nothing.
    pub fn remove_tree(&self, name: &OsStr) -> io::Result<bool> {
        self.remove_tree_at(single(name)?, 0)
    }

    fn remove_tree_at(&self, name: &OsStr, depth: usize) -> io::Result<bool> {
        match self.kind(name)? {
            None => Ok(false),
            Some(Kind::Dir) => {
                if depth >= MAX_REMOVE_DEPTH {
                    return Err(Refused::TooManyEntries(self.shown(name), MAX_REMOVE_DEPTH).into_io());
                }
                let sub = self.child(name)?;
                for entry in sub.entries(usize::MAX)? {
                    sub.remove_tree_at(&entry.name, depth + 1)?;
                }
                match unlinkat(self.fd.as_fd(), name, UnlinkatFlags::RemoveDir) {
                    Ok(()) | Err(Errno::ENOENT) => Ok(true),
                    Err(e) => Err(errno(e)),
                }
            }
            Some(_) => self.remove_file(name),
        }
    }

    /// Makes `name` (directly in this folder) a link to `target`, unless something is there
    /// already: `false` then (what is there is left as it is).
    pub fn symlink(&self, name: &OsStr, target: &Path) -> io::Result<bool> {
        match nix::unistd::symlinkat(target, self.fd.as_fd(), name) {
            Ok(()) => Ok(true),
            Err(Errno::EEXIST) => Ok(false),
            Err(e) => Err(errno(e)),
        }
    }

    /// The entries of this folder (not `.` and `..`), at most `max` (more is refused).
    pub fn entries(&self, max: usize) -> io::Result<Vec<Entry>> {
        let dir = nix::dir::Dir::openat(
            self.fd.as_fd(),
            ".",
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(errno)?;
        let mut out = Vec::new();
        for entry in dir {
            let entry = entry.map_err(errno)?;
            let name: &CStr = entry.file_name();
            let bytes = name.to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            let name = OsStr::from_bytes(bytes).to_os_string();
            let kind = match entry.file_type() {
                Some(nix::dir::Type::File) => Kind::File,
                Some(nix::dir::Type::Directory) => Kind::Dir,
                Some(nix::dir::Type::Symlink) => Kind::Link,
                Some(_) => Kind::Special,
                None => match self.kind(&name)? {
                    Some(kind) => kind,
                    None => continue,
                },
            };
            if out.len() == max {
                return Err(Refused::TooManyEntries(self.path.display().to_string(), max).into_io());
            }
            out.push(Entry { name, kind });
        }
        Ok(out)
    }

    /// What `name` (directly in this folder) is, in full, without following it; `None` when
    /// missing.
    pub fn stat(&self, name: &OsStr) -> io::Result<Option<nix::sys::stat::FileStat>> {
        match fstatat(self.fd.as_fd(), single(name)?, AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(stat)),
            Err(Errno::ENOENT) => Ok(None),
            Err(e) => Err(errno(e)),
        }
    }

    /// Creates the new file `name` (directly in this folder; nothing may be there, a link
    /// included) for writing, mode `mode`.
    pub fn create_new(&self, name: &OsStr, mode: u32) -> io::Result<File> {
        let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let fd = openat(self.fd.as_fd(), single(name)?, flags, Mode::from_bits_truncate(mode)).map_err(errno)?;
        Ok(File::from(fd))
    }

    /// Makes the renames and removals in this folder durable.
    pub fn sync(&self) -> io::Result<()> {
        fsync(self.fd.as_fd()).map_err(errno)
    }

    /// Sets this folder's own mode.
    pub fn set_mode(&self, mode: u32) -> io::Result<()> {
        fchmod(self.fd.as_fd(), Mode::from_bits_truncate(mode)).map_err(errno)
    }

    /// Moves `name` of this folder to `to_name` in `to`, replacing a file (or link) there.
    pub fn rename(&self, name: &OsStr, to: &Dir, to_name: &OsStr) -> io::Result<()> {
        renameat(self.fd.as_fd(), single(name)?, to.fd.as_fd(), single(to_name)?).map_err(errno)
    }
}

/// `name` when it is a single plain name.
fn single(name: &OsStr) -> io::Result<&OsStr> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes == b"." || bytes == b".." || bytes.contains(&b'/') || bytes.contains(&0) {
        return Err(Refused::BadPath(name.to_string_lossy().into_owned()).into_io());
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{PermissionsExt, symlink};

    use super::*;

    fn fifo(path: &Path) {
        nix::unistd::mkfifo(path, Mode::from_bits_truncate(0o600)).expect("mkfifo");
    }

    #[test]
    fn links_fifos_and_devices_are_refused_and_their_targets_never_read() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path();
        std::fs::write(root.join("secret.key"), b"signing key").expect("secret");
        std::fs::create_dir_all(root.join("agent/sub")).expect("dirs");
        std::fs::write(root.join("agent/sub/ok.txt"), b"fine").expect("ok");
        symlink(root.join("secret.key"), root.join("agent/key-link")).expect("link");
        symlink("/dev/zero", root.join("agent/zero")).expect("zero");
        symlink(root, root.join("agent/up")).expect("dir link");
        fifo(&root.join("agent/pipe"));
        let dir = Dir::open_under(root, Path::new("agent")).expect("agent");
        assert_eq!(dir.read(Path::new("sub/ok.txt"), 16).expect("ok"), b"fine");
        for (rel, want) in [
            ("key-link", Refused::Link(root.join("agent/key-link").display().to_string())),
            ("zero", Refused::Link(root.join("agent/zero").display().to_string())),
            ("pipe", Refused::NotRegular(root.join("agent/pipe").display().to_string())),
        ] {
            let e = dir.read(Path::new(rel), 1 << 20).expect_err(rel);
            assert_eq!(refusal(&e), Some(&want), "{rel}: {e}");
        }
        let through = dir.read(Path::new("up/secret.key"), 64).expect_err("through a folder link");
        assert!(matches!(refusal(&through), Some(Refused::Link(_))), "{through}");
        assert!(matches!(
            refusal(&dir.read(Path::new("../secret.key"), 64).expect_err("..")),
            Some(Refused::BadPath(_))
        ));
        let big = dir.read(Path::new("sub/ok.txt"), 2).expect_err("bound");
        assert!(matches!(refusal(&big), Some(Refused::TooLarge(_, 2))));
        assert_eq!(dir.read_optional(Path::new("missing/x"), 8).expect("missing"), None);
    }

    #[test]
    fn writes_replace_a_planted_link_and_never_touch_its_target() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path();
        std::fs::write(root.join("db"), b"database").expect("db");
        std::fs::create_dir_all(root.join("home")).expect("home");
        symlink(root.join("db"), root.join("home/.profile")).expect("link");
        fifo(&root.join("home/.bashrc"));
        let home = Dir::open_under(root, Path::new("home")).expect("home");
        home.write(OsStr::new(".profile"), b"export A=1\n", 0o640).expect("write");
        home.write(OsStr::new(".bashrc"), b"# rc\n", 0o600).expect("over a fifo");
        assert_eq!(std::fs::read(root.join("db")).expect("db"), b"database", "the link's target is unchanged");
        let meta = std::fs::symlink_metadata(root.join("home/.profile")).expect("meta");
        assert!(meta.is_file() && meta.permissions().mode() & 0o777 == 0o640, "{meta:?}");
        assert_eq!(home.read(Path::new(".bashrc"), 64).expect("rc"), b"# rc\n");
        let leftovers: Vec<_> = home.entries(16).expect("ls").into_iter().map(|e| e.name).collect();
        assert_eq!(leftovers.len(), 2, "no temporary file is left: {leftovers:?}");
        assert!(home.write(OsStr::new("../x"), b"", 0o600).is_err(), "one plain name only");
    }

    #[test]
    fn a_new_file_is_placed_whole_and_never_over_anything() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path();
        std::fs::write(root.join("db"), b"database").expect("db");
        symlink(root.join("db"), root.join("planted")).expect("link");
        let dir = Dir::open(root).expect("dir");
        assert!(dir.write_new(OsStr::new("theme.css"), b"a { }", 0o600).expect("new"));
        assert_eq!(std::fs::read(root.join("theme.css")).expect("read"), b"a { }");
        let meta = std::fs::metadata(root.join("theme.css")).expect("meta");
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert!(!dir.write_new(OsStr::new("theme.css"), b"b { }", 0o600).expect("again"), "never replaced");
        assert_eq!(std::fs::read(root.join("theme.css")).expect("read"), b"a { }");
        assert!(!dir.write_new(OsStr::new("planted"), b"x", 0o600).expect("over a link"));
        assert_eq!(std::fs::read(root.join("db")).expect("db"), b"database", "the link's target is unchanged");
        let mut names: Vec<_> = dir.entries(16).expect("ls").into_iter().map(|e| e.name).collect();
        names.sort();
        assert_eq!(names, ["db", "planted", "theme.css"], "no temporary file is left");
        assert!(dir.write_new(OsStr::new("../x"), b"", 0o600).is_err(), "one plain name only");
    }

    #[test]
    fn a_folder_swapped_for_a_link_is_refused_and_trees_are_removed_without_following() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path();
        std::fs::create_dir_all(root.join("outside")).expect("outside");
        std::fs::write(root.join("outside/keep"), b"keep").expect("keep");
        std::fs::create_dir_all(root.join("apps/a/deep")).expect("apps");
        std::fs::write(root.join("apps/a/deep/f"), b"f").expect("f");
        symlink(root.join("outside"), root.join("apps/a/out")).expect("link");
        let apps = Dir::open_under(root, Path::new("apps")).expect("apps");
        assert!(matches!(refusal(&apps.sub(Path::new("a/out")).expect_err("link")), Some(Refused::Link(_))));
        let kinds: Vec<(String, Kind)> = apps
            .sub(Path::new("a"))
            .expect("a")
            .entries(8)
            .expect("ls")
            .into_iter()
            .map(|e| (e.name.to_string_lossy().into_owned(), e.kind))
            .collect();
        assert!(kinds.contains(&("out".into(), Kind::Link)) && kinds.contains(&("deep".into(), Kind::Dir)));
        assert!(apps.remove_tree(OsStr::new("a")).expect("rm"));
        assert!(!root.join("apps/a").exists());
        assert_eq!(std::fs::read(root.join("outside/keep")).expect("kept"), b"keep");
        let many = Dir::open(root).expect("root").entries(1).expect_err("bounded");
        assert!(matches!(refusal(&many), Some(Refused::TooManyEntries(_, 1))));
        let created = Dir::create_under(root, Path::new("new/one")).expect("create");
        created.write(OsStr::new("f"), b"x", 0o600).expect("write");
        assert_eq!(std::fs::read(root.join("new/one/f")).expect("f"), b"x");
    }
}
