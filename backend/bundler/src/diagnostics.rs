//! Compile errors as the coding agent reads them: `file:line:col: error: …` plus a code frame.

use std::fmt;

use serde::Serialize;

/// What went wrong, coarse enough for a caller to branch on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosticKind {
    /// The source does not parse (JavaScript, JSX or JSON).
    Syntax,
    /// An import names a file or library that does not exist.
    UnresolvedImport,
    /// An import resolves outside the app folder and the platform's libraries.
    ImportOutsideApp,
    /// The entry has no `export default`.
    MissingDefaultExport,
    /// A file or folder could not be read.
    Io,
    /// Anything else rolldown reports, or an internal failure.
    Other,
}

/// One located finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// What went wrong.
    pub kind: DiagnosticKind,
    /// Path relative to the app folder (`node_modules/…` for library files).
    pub file: Option<String>,
    /// 1-based line.
    pub line: Option<u32>,
    /// 1-based column, in characters.
    pub column: Option<u32>,
    /// What is wrong and how to fix it, in words the coding agent can act on.
    pub message: String,
    /// A few source lines around the location with a caret under the column.
    pub frame: Option<String>,
}

/// Every error of one failed compile, in the order they were found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Diagnostics(pub Vec<Diagnostic>);

/// Source lines shown before the error line in a code frame.
const FRAME_LINES_BEFORE: u32 = 2;
/// Source lines shown after the error line in a code frame.
const FRAME_LINES_AFTER: u32 = 1;
/// Longest source line shown in full; longer ones (minified code) are cut around the column.
const FRAME_MAX_LINE_CHARS: usize = 120;

impl Diagnostic {
    /// An unlocated diagnostic.
    pub fn new(kind: DiagnosticKind, message: impl Into<String>) -> Self {
        Self { kind, file: None, line: None, column: None, message: message.into(), frame: None }
    }

    /// Attributes the diagnostic to `file` (relative to the app folder).
    #[must_use]
    pub fn in_file(mut self, file: impl Into<String>) -> Self {
        self.file = Some(file.into());
        self
    }

    /// Locates the diagnostic at a 1-based `line` and `column` of `source`, adding a code frame.
    #[must_use]
    pub(crate) fn at(mut self, source: &str, line: u32, column: u32) -> Self {
        self.line = Some(line);
        self.column = Some(column);
        self.frame = code_frame(source, line, column);
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.file, self.line, self.column) {
            (Some(file), Some(line), Some(column)) => write!(f, "{file}:{line}:{column}: ")?,
            (Some(file), Some(line), None) => write!(f, "{file}:{line}: ")?,
            (Some(file), _, _) => write!(f, "{file}: ")?,
            (None, _, _) => {}
        }
        write!(f, "error: {}", self.message)?;
        if let Some(frame) = &self.frame {
            write!(f, "\n{frame}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostic {}

impl Diagnostics {
    /// The diagnostics as a slice.
    pub fn as_slice(&self) -> &[Diagnostic] {
        &self.0
    }

    /// Iterates over the diagnostics.
    pub fn iter(&self) -> std::slice::Iter<'_, Diagnostic> {
        self.0.iter()
    }
}

impl From<Diagnostic> for Diagnostics {
    fn from(diagnostic: Diagnostic) -> Self {
        Self(vec![diagnostic])
    }
}

impl IntoIterator for Diagnostics {
    type Item = Diagnostic;
    type IntoIter = std::vec::IntoIter<Diagnostic>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, diagnostic) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n\n")?;
            }
            write!(f, "{diagnostic}")?;
        }
        if self.0.len() > 1 {
            write!(f, "\n\n{} errors", self.0.len())?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

/// Renders the lines around `line` with a gutter and a caret under `column` (both 1-based).
pub(crate) fn code_frame(source: &str, line: u32, column: u32) -> Option<String> {
    let lines: Vec<&str> = source.lines().collect();
    let target = usize::try_from(line).ok()?.checked_sub(1)?;
    if target >= lines.len() {
        return None;
    }
    let first = target.saturating_sub(FRAME_LINES_BEFORE as usize);
    let last = (target + FRAME_LINES_AFTER as usize).min(lines.len() - 1);
    let width = (last + 1).to_string().len();
    let col = usize::try_from(column).unwrap_or(1).max(1) - 1;
    let mut out = Vec::new();
    for (i, text) in lines.iter().enumerate().take(last + 1).skip(first) {
        let marker = if i == target { '>' } else { ' ' };
        let (shown, caret_at) = clip(text, if i == target { col } else { 0 });
        out.push(format!("{marker} {:>width$} | {shown}", i + 1));
        if i == target {
            // Copy tabs from the source so the caret lines up however tabs are rendered.
            let pad: String = shown.chars().take(caret_at).map(|c| if c == '\t' { '\t' } else { ' ' }).collect();
            out.push(format!("  {:>width$} | {pad}^", ""));
        }
    }
    Some(out.join("\n"))
}

/// Cuts a long line to a window around character `col`; returns the text and the caret's index in it.
fn clip(text: &str, col: usize) -> (String, usize) {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= FRAME_MAX_LINE_CHARS {
        return (text.to_owned(), col.min(chars.len()));
    }
    let half = FRAME_MAX_LINE_CHARS / 2;
    let start = col.saturating_sub(half).min(chars.len());
    let end = (start + FRAME_MAX_LINE_CHARS).min(chars.len());
    let mut shown = String::new();
    let mut caret = col - start;
    if start > 0 {
        shown.push('…');
        caret += 1;
    }
    shown.extend(&chars[start..end]);
    if end < chars.len() {
        shown.push('…');
    }
    (shown, caret)
}

/// The 1-based line and character column of a byte offset in `source`.
pub(crate) fn line_col(source: &str, offset: usize) -> (u32, u32) {
    let before = &source[..offset.min(source.len())];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (to_u32(line), to_u32(column))
}

/// Converts a 0-based UTF-16 column on a 1-based line to a 1-based character column.
pub(crate) fn utf16_to_char_column(source: &str, line: u32, utf16_column: usize) -> u32 {
    let text = source.lines().nth(usize::try_from(line).unwrap_or(1).saturating_sub(1)).unwrap_or("");
    let mut units = 0;
    let mut chars = 0;
    for ch in text.chars() {
        if units >= utf16_column {
            break;
        }
        units += ch.len_utf16();
        chars += 1;
    }
    to_u32(chars + 1)
}

pub(crate) fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_shows_context_lines_and_a_caret_under_the_column() {
        let source = "one\ntwo\nthree x\nfour\nfive";
        let frame = code_frame(source, 3, 7).expect("frame");
        assert_eq!(frame, "  1 | one\n  2 | two\n> 3 | three x\n    |       ^\n  4 | four");
    }

    #[test]
    fn long_lines_are_cut_around_the_column() {
        let source = format!("{}X{}", "a".repeat(500), "b".repeat(500));
        let frame = code_frame(&source, 1, 501).expect("frame");
        let lines: Vec<&str> = frame.lines().collect();
        let caret = lines[1].find('^').expect("caret");
        assert_eq!(lines[0].chars().nth(lines[1][..caret].chars().count()), Some('X'));
        assert!(lines[0].chars().count() < 140);
    }

    #[test]
    fn display_puts_the_location_first_and_the_frame_after() {
        let d = Diagnostic::new(DiagnosticKind::Syntax, "Unexpected token").in_file("index.jsx").at("a\nb c", 2, 3);
        assert_eq!(d.to_string(), "index.jsx:2:3: error: Unexpected token\n  1 | a\n> 2 | b c\n    |   ^");
    }

    #[test]
    fn offsets_map_to_lines_and_character_columns() {
        assert_eq!(line_col("ab\ncdé f", 8), (2, 5));
        assert_eq!(utf16_to_char_column("x\n😀y", 2, 2), 2);
    }
}
