//! Edit diffs from a tool call's input (issue 37): a line diff between the text an edit
//! replaced and its replacement, a written file as all-added lines, a CLI's own unified diff
//! taken as it is; counts of added and removed lines. Nothing here reads a file: what changed is
//! what the agent asked for. The providers (`claude.rs`, `codex.rs`) pick the texts out of
//! their inputs; the fold (`fold.rs`) bounds what goes inline.

use crate::protocol::{FileChange, FileDiff};

/// The largest line grid (old lines × new lines) compared line by line; past it the old text
/// shows as removed and the new as added (still correct, only less tight).
const MAX_DIFF_CELLS: usize = 4_000_000;

/// A diff of `path` from its lines' text: counts made here.
pub fn file(path: &str, change: FileChange, diff: String) -> FileDiff {
    let (added, removed) = count(&diff);
    FileDiff { path: path.to_owned(), change, added, removed, diff, binary: false, full_len: None, stash_id: None }
}

/// A file whose content is not text ("binary changed").
pub fn binary(path: &str, change: FileChange) -> FileDiff {
    FileDiff {
        path: path.to_owned(),
        change,
        added: 0,
        removed: 0,
        diff: String::new(),
        binary: true,
        full_len: None,
        stash_id: None,
    }
}

/// True when `text` is not something to show as lines (a NUL byte, as git decides).
pub fn is_binary(text: &str) -> bool {
    text.as_bytes().contains(&0)
}

/// Lines added and removed in a unified diff (hunk headers and `---`/`+++` file lines aside).
pub fn count(diff: &str) -> (u32, u32) {
    let (mut added, mut removed) = (0u32, 0u32);
    for line in diff.lines() {
        if line.starts_with('+') && !line.starts_with("+++ ") {
            added = added.saturating_add(1);
        } else if line.starts_with('-') && !line.starts_with("--- ") {
            removed = removed.saturating_add(1);
        }
    }
    (added, removed)
}

/// Every line of `text` with `sign` in front (a written file: all `+`; a deleted one: all `-`).
pub fn whole(text: &str, sign: char) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16 + 2);
    for line in text.lines() {
        out.push(sign);
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// A CLI's unified diff without its `---`/`+++` file header (the path is shown apart).
pub fn unified(diff: &str) -> String {
    let mut out = String::with_capacity(diff.len());
    let mut in_header = true;
    for line in diff.lines() {
        if in_header && (line.starts_with("--- ") || line.starts_with("+++ ") || line.starts_with("diff ")) {
            continue;
        }
        in_header = false;
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Appends the line diff from `old` to `new` to `out`: unchanged lines with ` `, removed with
/// `-`, added with `+` (the whole snippet, unchanged lines included: the PWA folds long runs).
pub fn between(old: &str, new: &str, out: &mut String) {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..].iter().rev().zip(b[prefix..].iter().rev()).take_while(|(x, y)| x == y).count();
    let (mid_a, mid_b) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    let push = |out: &mut String, sign: char, line: &str| {
        out.push(sign);
        out.push_str(line);
        out.push('\n');
    };
    for line in &a[..prefix] {
        push(out, ' ', line);
    }
    if mid_a.len().saturating_mul(mid_b.len()) <= MAX_DIFF_CELLS {
        for (sign, line) in lcs_lines(mid_a, mid_b) {
            push(out, sign, line);
        }
    } else {
        for line in mid_a {
            push(out, '-', line);
        }
        for line in mid_b {
            push(out, '+', line);
        }
    }
    for line in &a[a.len() - suffix..] {
        push(out, ' ', line);
    }
}

/// The longest-common-subsequence line diff of two short line lists (removals before
/// additions within a changed stretch, as `diff -u` shows them).
fn lcs_lines<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<(char, &'a str)> {
    let (n, m) = (a.len(), b.len());
    // lengths[i][j]: the LCS of a[i..] and b[j..], row-major in one vector.
    let width = m + 1;
    let mut lengths = vec![0u32; (n + 1) * width];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lengths[i * width + j] = if a[i] == b[j] {
                lengths[(i + 1) * width + j + 1] + 1
            } else {
                lengths[(i + 1) * width + j].max(lengths[i * width + j + 1])
            };
        }
    }
    let mut out = Vec::with_capacity(n + m);
    let (mut i, mut j) = (0, 0);
    let mut added: Vec<(char, &str)> = Vec::new();
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            out.append(&mut added);
            out.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lengths[(i + 1) * width + j] >= lengths[i * width + j + 1]) {
            out.push(('-', a[i]));
            i += 1;
        } else {
            added.push(('+', b[j]));
            j += 1;
        }
    }
    out.append(&mut added);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_line_shows_removed_then_added_between_unchanged_ones() {
        let mut out = String::new();
        between("a\nb\nc\n", "a\nB\nc\nd\n", &mut out);
        assert_eq!(out, " a\n-b\n+B\n c\n+d\n");
        assert_eq!(count(&out), (2, 1));
    }

    #[test]
    fn identical_texts_have_no_changes_and_empty_ones_are_all_added() {
        let mut same = String::new();
        between("x\ny", "x\ny", &mut same);
        assert_eq!(count(&same), (0, 0));
        let mut fresh = String::new();
        between("", "one\ntwo", &mut fresh);
        assert_eq!(fresh, "+one\n+two\n");
    }

    #[test]
    fn a_huge_change_falls_back_to_removed_then_added() {
        let old: String = (0..2_100).map(|i| format!("old {i}\n")).collect();
        let new: String = (0..2_100).map(|i| format!("new {i}\n")).collect();
        let mut out = String::new();
        between(&old, &new, &mut out);
        assert_eq!(count(&out), (2_100, 2_100));
        assert!(out.starts_with("-old 0\n"));
    }

    #[test]
    fn unified_diffs_lose_their_file_header_and_count_lines() {
        let diff = unified("--- a/x.rs\n+++ b/x.rs\n@@ -1,2 +1,2 @@\n keep\n-gone\n+here\n");
        assert_eq!(diff, "@@ -1,2 +1,2 @@\n keep\n-gone\n+here\n");
        assert_eq!(count(&diff), (1, 1));
        assert_eq!(whole("a\nb", '+'), "+a\n+b\n");
        assert!(is_binary("PNG\0\u{1}"));
    }
}
