//! The theme's versions: a bare git repository of the server's own
//! (`DATA_DIR/platform/theme.git`, outside every folder the agent can write) whose `main` holds
//! one file, `theme.css`; each accepted theme is a commit. Blocking (libgit2): call it off the
//! async threads.

use std::path::{Path, PathBuf};

use git2::{Oid, Repository, Signature};

use crate::error::{Error, Result};

const MAIN: &str = "refs/heads/main";
const FILE: &str = "theme.css";

fn git_err(context: &'static str) -> impl Fn(git2::Error) -> Error {
    move |e| Error::Internal(format!("theme history, {context}: {}", e.message()))
}

/// One accepted theme.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Version {
    /// The commit id.
    pub id: String,
    /// When it was accepted (unix ms).
    pub at: i64,
    /// Who or what made it: `agent`, `owner reset`, `restore <id>`, …
    pub source: String,
}

/// The repository.
pub struct History {
    dir: PathBuf,
}

impl History {
    /// The history kept in `dir` (created on first write).
    pub fn new(dir: PathBuf) -> History {
        History { dir }
    }

    fn open(&self) -> Result<Repository> {
        match Repository::open_bare(&self.dir) {
            Ok(repo) => Ok(repo),
            Err(_) => {
                std::fs::create_dir_all(&self.dir)?;
                Repository::init_bare(&self.dir).map_err(git_err("init"))
            }
        }
    }

    /// The current theme: its commit and text (`None` before the first commit).
    pub fn head(&self) -> Result<Option<(String, String)>> {
        if !self.dir.exists() {
            return Ok(None);
        }
        let repo = self.open()?;
        let Ok(reference) = repo.find_reference(MAIN) else {
            return Ok(None);
        };
        let commit = reference.peel_to_commit().map_err(git_err("head"))?;
        let text = file_of(&repo, commit.id())?.unwrap_or_default();
        Ok(Some((commit.id().to_string(), text)))
    }

    /// Commits `text` as the current theme (`source` says why). Returns the commit, and whether
    /// the text differed from the current one (an unchanged theme makes no commit).
    pub fn commit(&self, text: &str, source: &str) -> Result<(String, bool)> {
        let repo = self.open()?;
        let parent = repo.find_reference(MAIN).ok().and_then(|r| r.peel_to_commit().ok());
        let blob = repo.blob(text.as_bytes()).map_err(git_err("blob"))?;
        let mut builder = repo.treebuilder(None).map_err(git_err("tree"))?;
        builder.insert(FILE, blob, 0o100644).map_err(git_err("tree"))?;
        let tree_id = builder.write().map_err(git_err("tree"))?;
        if let Some(parent) = &parent
            && parent.tree_id() == tree_id
        {
            return Ok((parent.id().to_string(), false));
        }
        let tree = repo.find_tree(tree_id).map_err(git_err("tree"))?;
        let who = Signature::now("Mobius", "mobius@localhost").map_err(git_err("signature"))?;
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        let id = repo.commit(Some(MAIN), &who, &who, source, &tree, &parents).map_err(git_err("commit"))?;
        Ok((id.to_string(), true))
    }

    /// The last `max` versions, newest first.
    pub fn versions(&self, max: usize) -> Result<Vec<Version>> {
        if !self.dir.exists() {
            return Ok(Vec::new());
        }
        let repo = self.open()?;
        if repo.find_reference(MAIN).is_err() {
            return Ok(Vec::new());
        }
        let mut walk = repo.revwalk().map_err(git_err("log"))?;
        walk.push_ref(MAIN).map_err(git_err("log"))?;
        let mut out = Vec::new();
        for id in walk.take(max) {
            let commit = repo.find_commit(id.map_err(git_err("log"))?).map_err(git_err("log"))?;
            out.push(Version {
                id: commit.id().to_string(),
                at: commit.time().seconds() * 1000,
                source: commit.message().unwrap_or_default().trim().to_owned(),
            });
        }
        Ok(out)
    }

    /// The text of version `id`, if it is one of the last `max`.
    pub fn text_of(&self, id: &str, max: usize) -> Result<Option<String>> {
        if !self.versions(max)?.iter().any(|v| v.id == id) {
            return Ok(None);
        }
        let repo = self.open()?;
        let oid = Oid::from_str(id).map_err(git_err("id"))?;
        file_of(&repo, oid)
    }

    /// The folder (for logs).
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

fn file_of(repo: &Repository, commit: Oid) -> Result<Option<String>> {
    let commit = repo.find_commit(commit).map_err(git_err("commit"))?;
    let tree = commit.tree().map_err(git_err("tree"))?;
    let Some(entry) = tree.get_name(FILE) else {
        return Ok(None);
    };
    let blob = repo.find_blob(entry.id()).map_err(git_err("blob"))?;
    Ok(Some(String::from_utf8_lossy(blob.content()).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_list_newest_first_and_an_unchanged_text_makes_none() {
        let dir = tempfile::tempdir().expect("tempdir");
        let history = History::new(dir.path().join("theme.git"));
        assert!(history.head().expect("head").is_none());
        let (first, changed) = history.commit(":root { --a: 1 }", "agent").expect("commit");
        assert!(changed);
        let (same, changed) = history.commit(":root { --a: 1 }", "agent").expect("commit");
        assert_eq!((same.as_str(), changed), (first.as_str(), false));
        let (second, _) = history.commit("", "owner reset").expect("commit");
        let versions = history.versions(20).expect("versions");
        assert_eq!(versions.iter().map(|v| v.id.as_str()).collect::<Vec<_>>(), [second.as_str(), first.as_str()]);
        assert_eq!(versions[0].source, "owner reset");
        assert_eq!(history.text_of(&first, 20).expect("text").as_deref(), Some(":root { --a: 1 }"));
        assert_eq!(history.text_of(&first, 1).expect("text"), None, "older than the kept window");
        assert_eq!(history.head().expect("head"), Some((second, String::new())));
    }
}
