//! The shell's source in `DATA_DIR/platform/shell/`: seeded from the stock source as a git
//! repository on first boot, and copied — through `safe_fs`, never following a link — into the
//! server's own work folder before each build. Blocking: call off the async threads.

use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};

use git2::{IndexAddOption, Repository, Signature};

use crate::safe_fs::{Dir, Kind};

/// Top-level names never copied: the packages (the build links the toolchain in), the
/// output, the repository.
const SKIPPED_AT_TOP: &[&str] = &["node_modules", "dist", ".git"];
/// Files in the whole source, at most.
pub const MAX_SOURCE_FILES: usize = 20_000;
/// Bytes in the whole source, at most.
pub const MAX_SOURCE_BYTES: u64 = 100 * 1024 * 1024;
/// One file, at most.
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// Entries of one folder, at most.
const MAX_DIR_ENTRIES: usize = 5_000;
/// Deepest folder.
const MAX_DEPTH: usize = 32;
/// What the seeded repository ignores.
const GITIGNORE: &str = "node_modules/\ndist/\n";

/// Why a copy stopped.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    /// The source holds something a build never reads: said in words the agent can act on.
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl CopyError {
    fn of(e: io::Error, rel: &Path) -> CopyError {
        match crate::safe_fs::refusal(&e) {
            Some(refused) => CopyError::Refused(format!("{} ({refused})", rel.display())),
            None => CopyError::Io(e),
        }
    }
}

#[derive(Default)]
struct Budget {
    files: usize,
    bytes: u64,
}

/// What a walk of the source does with what it reads: [`copy_source`] writes files and
/// folders, [`tree_of`] makes blobs and trees. `Folder` is the sink's handle on the folder
/// being filled.
trait Sink {
    type Folder;
    fn file(&mut self, folder: &mut Self::Folder, name: &OsStr, bytes: Vec<u8>) -> Result<(), CopyError>;
    fn open(&mut self, parent: &Self::Folder, name: &OsStr) -> Result<Self::Folder, CopyError>;
    fn close(&mut self, parent: &mut Self::Folder, name: &OsStr, folder: Self::Folder) -> Result<(), CopyError>;
}

/// Reads the tree below `from` into `sink`: regular files and folders only; a link (wherever it
/// points), a FIFO or a device anywhere is refused, as are more than [`MAX_SOURCE_FILES`] files,
/// [`MAX_SOURCE_BYTES`] bytes or [`MAX_DEPTH`] folders; [`SKIPPED_AT_TOP`] is left out.
fn walk<S: Sink>(
    from: &Dir,
    folder: &mut S::Folder,
    sink: &mut S,
    rel: &Path,
    depth: usize,
    budget: &mut Budget,
) -> Result<(), CopyError> {
    if depth > MAX_DEPTH {
        return Err(CopyError::Refused(format!("{} is nested more than {MAX_DEPTH} folders deep", rel.display())));
    }
    let entries = from.entries(MAX_DIR_ENTRIES).map_err(|e| CopyError::of(e, rel))?;
    for entry in entries {
        let name = entry.name.as_os_str();
        if depth == 0 && SKIPPED_AT_TOP.iter().any(|s| OsStr::new(s) == name) {
            continue;
        }
        let path = rel.join(name);
        match entry.kind {
            Kind::File => {
                budget.files += 1;
                if budget.files > MAX_SOURCE_FILES {
                    return Err(CopyError::Refused(format!("the source holds more than {MAX_SOURCE_FILES} files")));
                }
                let room = MAX_SOURCE_BYTES.saturating_sub(budget.bytes).min(MAX_FILE_BYTES);
                let bytes = from.read(name.as_ref(), room).map_err(|e| CopyError::of(e, &path))?;
                budget.bytes += bytes.len() as u64;
                sink.file(folder, name, bytes)?;
            }
            Kind::Dir => {
                let sub = from.sub(name.as_ref()).map_err(|e| CopyError::of(e, &path))?;
                let mut inner = sink.open(folder, name)?;
                walk(&sub, &mut inner, sink, &path, depth + 1, budget)?;
                sink.close(folder, name, inner)?;
            }
            Kind::Link => {
                return Err(CopyError::Refused(format!(
                    "{} is a symbolic link; links are refused in the shell's source (copy the file instead)",
                    path.display()
                )));
            }
            Kind::Special => {
                return Err(CopyError::Refused(format!("{} is not a regular file or folder", path.display())));
            }
        }
    }
    Ok(())
}

/// Copies the tree below `from` into the new folder `to` (created here), read as [`walk`]
/// reads it. Returns the file count.
pub fn copy_source(from: &Dir, to: &Path) -> Result<usize, CopyError> {
    struct Files;
    impl Sink for Files {
        type Folder = PathBuf;
        fn file(&mut self, folder: &mut PathBuf, name: &OsStr, bytes: Vec<u8>) -> Result<(), CopyError> {
            Ok(std::fs::write(folder.join(name), bytes)?)
        }
        fn open(&mut self, parent: &PathBuf, name: &OsStr) -> Result<PathBuf, CopyError> {
            let path = parent.join(name);
            std::fs::create_dir(&path)?;
            Ok(path)
        }
        fn close(&mut self, _: &mut PathBuf, _: &OsStr, _: PathBuf) -> Result<(), CopyError> {
            Ok(())
        }
    }
    std::fs::create_dir(to)?;
    let mut budget = Budget::default();
    walk(from, &mut to.to_path_buf(), &mut Files, Path::new(""), 0, &mut budget)?;
    Ok(budget.files)
}

/// Stores the tree below `from` in `repo` (the server's own repository) as a git tree, read as
/// [`copy_source`] copies it. With `gitignore`, a `.gitignore` is added at the top when there is
/// none (what [`seed`] gives the owner's copy). Every file is a plain `100644` blob; empty
/// folders are left out (git has none). Returns the tree's id.
pub fn tree_of(repo: &Repository, from: &Dir, gitignore: bool) -> Result<git2::Oid, CopyError> {
    use std::os::unix::ffi::OsStrExt;
    struct Trees<'r>(&'r Repository);
    impl<'r> Sink for Trees<'r> {
        type Folder = git2::TreeBuilder<'r>;
        fn file(&mut self, folder: &mut Self::Folder, name: &OsStr, bytes: Vec<u8>) -> Result<(), CopyError> {
            let blob = self.0.blob(&bytes).map_err(git_io)?;
            folder.insert(name.as_bytes(), blob, 0o100_644).map_err(git_io)?;
            Ok(())
        }
        fn open(&mut self, _: &Self::Folder, _: &OsStr) -> Result<Self::Folder, CopyError> {
            self.0.treebuilder(None).map_err(git_io)
        }
        fn close(&mut self, parent: &mut Self::Folder, name: &OsStr, folder: Self::Folder) -> Result<(), CopyError> {
            if !folder.is_empty() {
                let tree = folder.write().map_err(git_io)?;
                parent.insert(name.as_bytes(), tree, 0o040_000).map_err(git_io)?;
            }
            Ok(())
        }
    }
    let mut top = repo.treebuilder(None).map_err(git_io)?;
    walk(from, &mut top, &mut Trees(repo), Path::new(""), 0, &mut Budget::default())?;
    if gitignore && top.get(".gitignore").map_err(git_io)?.is_none() {
        let blob = repo.blob(GITIGNORE.as_bytes()).map_err(git_io)?;
        top.insert(".gitignore", blob, 0o100_644).map_err(git_io)?;
    }
    top.write().map_err(git_io)
}

fn git_io(e: git2::Error) -> CopyError {
    CopyError::Io(io::Error::other(e.message().to_owned()))
}

/// Checks that the tree below `dir` (a build's output, written by the agent's code) holds
/// only regular files and folders: a link there would be served, and followed, by the PWA host.
pub fn check_plain(dir: &Dir) -> Result<(), CopyError> {
    check_plain_at(dir, Path::new(""), 0, &mut 0)
}

fn check_plain_at(dir: &Dir, rel: &Path, depth: usize, files: &mut usize) -> Result<(), CopyError> {
    if depth > MAX_DEPTH {
        return Err(CopyError::Refused(format!("{} is nested more than {MAX_DEPTH} folders deep", rel.display())));
    }
    for entry in dir.entries(MAX_DIR_ENTRIES).map_err(|e| CopyError::of(e, rel))? {
        let path = rel.join(&entry.name);
        match entry.kind {
            Kind::File => {
                *files += 1;
                if *files > MAX_SOURCE_FILES {
                    return Err(CopyError::Refused(format!("the build wrote more than {MAX_SOURCE_FILES} files")));
                }
            }
            Kind::Dir => {
                let sub = dir.sub(entry.name.as_ref()).map_err(|e| CopyError::of(e, &path))?;
                check_plain_at(&sub, &path, depth + 1, files)?;
            }
            Kind::Link | Kind::Special => {
                return Err(CopyError::Refused(format!(
                    "the build's output holds {}, which is not a regular file or folder",
                    path.display()
                )));
            }
        }
    }
    Ok(())
}

/// Seeds `data_dir/<rel>` from the stock source `stock` when it holds no source yet: the
/// files copied into a staging folder, committed as a git repository (`main`, one commit
/// "Stock shell"), then renamed into place, so a crash never leaves half a seed. Returns
/// whether it seeded.
pub fn seed(stock: &Path, data_dir: &Path, rel: &Path) -> Result<bool, CopyError> {
    let target = data_dir.join(rel);
    // The agent's sandbox grant may have made the folder empty before any seed.
    if target.join(".git").exists() || std::fs::read_dir(&target).is_ok_and(|mut d| d.next().is_some()) {
        return Ok(false);
    }
    let parent = target.parent().ok_or_else(|| CopyError::Refused("the shell folder has no parent".into()))?;
    std::fs::create_dir_all(parent)?;
    let staging = parent.join(".shell-seeding");
    if staging.exists() {
        std::fs::remove_dir_all(&staging)?;
    }
    let stock_dir = Dir::open(stock)?;
    copy_source(&stock_dir, &staging)?;
    if !staging.join(".gitignore").exists() {
        std::fs::write(staging.join(".gitignore"), GITIGNORE)?;
    }
    commit_all(&staging, "Stock shell").map_err(|e| CopyError::Io(io::Error::other(e.message().to_owned())))?;
    if target.exists() {
        std::fs::remove_dir(&target)?;
    }
    std::fs::rename(&staging, &target)?;
    Ok(true)
}

/// `git init` + add everything + commit on `main`.
fn commit_all(dir: &Path, message: &str) -> Result<(), git2::Error> {
    let mut options = git2::RepositoryInitOptions::new();
    options.initial_head("main");
    let repo = Repository::init_opts(dir, &options)?;
    let mut index = repo.index()?;
    index.add_all(["*"], IndexAddOption::DEFAULT, None)?;
    index.write()?;
    let tree = repo.find_tree(index.write_tree()?)?;
    let who = Signature::now("Mobius", "mobius@localhost")?;
    repo.commit(Some("HEAD"), &who, &who, message, &tree, &[])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stock() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(dir.path().join("src")).expect("mkdir");
        std::fs::write(dir.path().join("index.html"), "<!doctype html><title>x</title>").expect("write");
        std::fs::write(dir.path().join("src/main.js"), "console.log(1)").expect("write");
        std::fs::create_dir_all(dir.path().join("node_modules/vite")).expect("mkdir");
        std::fs::write(dir.path().join("node_modules/vite/big.js"), "x").expect("write");
        std::fs::create_dir_all(dir.path().join("dist")).expect("mkdir");
        dir
    }

    #[test]
    fn seeding_copies_the_source_without_packages_or_output_as_a_git_repository_once() {
        let from = stock();
        let data = tempfile::tempdir().expect("tmp");
        let rel = Path::new("platform/shell");
        assert!(seed(from.path(), data.path(), rel).expect("seed"));
        let shell = data.path().join(rel);
        assert!(shell.join("src/main.js").is_file());
        assert!(!shell.join("node_modules").exists() && !shell.join("dist").exists());
        let repo = Repository::open(&shell).expect("a repository");
        let head = repo.head().expect("head").peel_to_commit().expect("commit");
        assert_eq!(head.message(), Some("Stock shell"));
        assert!(head.tree().expect("tree").get_path(Path::new("src/main.js")).is_ok());
        std::fs::write(shell.join("src/main.js"), "edited").expect("write");
        assert!(!seed(from.path(), data.path(), rel).expect("seed"), "an existing source is the owner's");
        assert_eq!(std::fs::read_to_string(shell.join("src/main.js")).expect("read"), "edited");
    }

    #[test]
    fn a_build_output_holding_a_link_is_refused() {
        let out = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(out.path().join("assets")).expect("mkdir");
        std::fs::write(out.path().join("index.html"), "<html>").expect("write");
        assert!(check_plain(&Dir::open(out.path()).expect("open")).is_ok());
        std::os::unix::fs::symlink("/etc/hostname", out.path().join("assets/key.js")).expect("link");
        match check_plain(&Dir::open(out.path()).expect("open")) {
            Err(CopyError::Refused(why)) => assert!(why.contains("assets/key.js"), "{why}"),
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn a_link_anywhere_in_the_source_is_refused_and_names_its_path() {
        let from = stock();
        std::os::unix::fs::symlink("../../secret.key", from.path().join("src/evil.js")).expect("link");
        let to = tempfile::tempdir().expect("tmp");
        let err = copy_source(&Dir::open(from.path()).expect("open"), &to.path().join("copy")).expect_err("refused");
        match err {
            CopyError::Refused(why) => assert!(why.contains("src/evil.js") && why.contains("link"), "{why}"),
            CopyError::Io(e) => panic!("an I/O error instead of a refusal: {e}"),
        }
    }
}
