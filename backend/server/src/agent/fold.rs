//! The one fold from provider events ([`AgentEvent`]) to chat events ([`ChatEvent`]): what a
//! delta, a tool call or its output becomes in the journal, with long outputs truncated
//! inline and kept whole elsewhere, and text capped per block and per turn (the rest goes to
//! an overflow file, never to the journal). Events that are not part of the transcript (the
//! session, usage, questions, steering, the end) go back to the turn.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::AgentEvent;
use crate::protocol::{ChatEvent, PlanCard, PlanStatus, PlanStep};

/// Tool output kept inline in events and blocks; longer output is stored whole and truncated.
pub const MAX_INLINE_TOOL_OUTPUT: usize = 4096;
/// Characters kept from the start and the end of a truncated output.
const TRUNCATED_HEAD: usize = 2048;
const TRUNCATED_TAIL: usize = 1024;
/// Text (or thinking) kept inline per block, in bytes; the rest of the block goes to its
/// overflow file.
pub const MAX_INLINE_TEXT_BYTES: usize = 256 * 1024;
/// Text and thinking kept inline per turn, all blocks together, in bytes.
pub const MAX_TURN_TEXT_BYTES: usize = 1024 * 1024;
/// Overflowing text written to files per turn, in bytes; past it the rest is dropped.
pub const MAX_TURN_OVERFLOW_BYTES: u64 = 16 * 1024 * 1024;
/// Overflow files one turn writes at most (blocks past it lose their overflow).
pub const MAX_OVERFLOW_FILES_PER_TURN: usize = 32;
/// Diff text kept inline per changed file, in bytes; a longer diff is cut at a line end and
/// kept whole for `/tool-output/{stash_id}`.
pub const MAX_INLINE_DIFF_BYTES: usize = 128 * 1024;
/// Diff text kept inline per turn, all files together, in bytes (past it a file keeps its
/// counts and the stored whole diff only).
pub const MAX_TURN_DIFF_BYTES: usize = 512 * 1024;
/// The most of one file's diff the server keeps at all, in bytes.
pub const MAX_STORED_DIFF_BYTES: usize = 16 * 1024 * 1024;
/// Steps of a plan kept (the rest are counted, see [`plan_window`]), and the characters kept
/// of a step's text or a plan's explanation.
pub const MAX_PLAN_STEPS: usize = 50;
const MAX_PLAN_TEXT_CHARS: usize = 500;
/// Steps kept before the step being worked on when a long plan's window moves past its start.
const PLAN_STEPS_BEFORE_CURRENT: usize = 2;
/// Longest subagent type kept (characters): a name such as `general-purpose`.
const MAX_SUBAGENT_TYPE_CHARS: usize = 64;
/// Web sources kept per tool call.
pub const MAX_SOURCES_PER_TOOL: usize = 20;
/// The longest source URL kept, in bytes, and the longest title, in characters.
const MAX_SOURCE_URL_BYTES: usize = 2048;
const MAX_SOURCE_TITLE_CHARS: usize = 200;
/// The folder of `DATA_DIR` that keeps overflowing text, one file per chat and block.
pub const OVERFLOW_DIR: &str = "agent-output";
/// What a block that overflowed ends with.
pub const OVERFLOW_NOTE: &str = "\n\n… [The rest of this text was too long to show here. The server keeps it (up to 16 MiB) as this block's full output.]";

/// What one provider event means for the chat.
#[derive(Debug)]
pub enum Folded {
    /// A journal event.
    Chat(ChatEvent),
    /// A journal event whose output was truncated: `full` is stored for `/tool-output/{id}`.
    Truncated { event: ChatEvent, tool_use_id: String, full: String },
    /// A tool's file diffs: `event` carries the inline part, `stash` the whole diffs that were
    /// cut, by their `stash_id`.
    Files { event: ChatEvent, stash: Vec<(String, String)> },
    /// Nothing to record (streamed output past the inline cap).
    Nothing,
    /// Text past the caps: `event` (the kept part and the note, the first time) is journaled,
    /// `rest` goes to the block's overflow file only.
    Overflow { event: Option<ChatEvent>, item_id: String, rest: String },
    /// Not part of the transcript: the turn handles it.
    Turn(AgentEvent),
}

/// The fold's state for one turn: how much output each tool has streamed, how much text each
/// block and the turn hold, and which blocks overflowed.
#[derive(Debug, Default)]
pub struct ChatFold {
    streamed: HashMap<String, usize>,
    text: HashMap<String, usize>,
    turn_text: usize,
    turn_diff: usize,
    /// When each running tool call started (its elapsed time goes with its end).
    started: HashMap<String, std::time::Instant>,
    overflowed: HashSet<String>,
    /// The agent's working folder, then the data directory, each with a trailing `/`: a file
    /// tool's path under the first that holds it is shown relative to it, so a phone's row
    /// shows `hello.txt` or `apps/notes/App.jsx` rather than `/data/workspace/…`.
    roots: Vec<String>,
}

/// Tools whose input summary is one path.
const PATH_TOOLS: &[&str] = &["Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "Glob", "Grep", "LS"];

/// The overflow file of block `item_id` of chat `chat_id` under `dir` (`DATA_DIR/agent-output`).
pub fn overflow_file(dir: &Path, chat_id: &str, item_id: &str) -> PathBuf {
    let safe: String = item_id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .take(120)
        .collect();
    dir.join(chat_id).join(format!("{safe}.txt"))
}

/// The sources worth showing: http(s) URLs of bounded length, each once, titles one line and
/// short, at most [`MAX_SOURCES_PER_TOOL`].
fn web_sources(raw: Vec<(String, Option<String>)>) -> Vec<crate::protocol::WebSource> {
    let mut out: Vec<crate::protocol::WebSource> = Vec::new();
    for (url, title) in raw {
        let url = url.trim();
        let web = url.starts_with("https://") || url.starts_with("http://");
        if !web
            || url.len() > MAX_SOURCE_URL_BYTES
            || url.chars().any(char::is_whitespace)
            || out.iter().any(|s| s.url == url)
        {
            continue;
        }
        let title = title
            .map(|t| {
                t.split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
                    .chars()
                    .take(MAX_SOURCE_TITLE_CHARS)
                    .collect::<String>()
            })
            .filter(|t| !t.is_empty());
        out.push(crate::protocol::WebSource { url: url.to_owned(), title });
        if out.len() == MAX_SOURCES_PER_TOOL {
            break;
        }
    }
    out
}

/// The largest char boundary of `s` at or below `at`.
pub fn floor_boundary(s: &str, at: usize) -> usize {
    let mut i = at.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

impl ChatFold {
    /// A fold for a turn whose agent works in `workspace`.
    pub fn in_workspace(workspace: &Path) -> Self {
        Self::default().with_root(workspace)
    }

    /// Also shows paths under `dir` relative to it (after the roots given before).
    pub fn with_root(mut self, dir: &Path) -> Self {
        let mut dir = dir.to_string_lossy().into_owned();
        if !dir.ends_with('/') {
            dir.push('/');
        }
        self.roots.push(dir);
        self
    }

    /// `input` with the workspace prefix taken off, for tools whose input is a path.
    fn relative(&self, tool: &str, input: String) -> String {
        if !PATH_TOOLS.contains(&tool) {
            return input;
        }
        self.roots
            .iter()
            .find_map(|dir| input.strip_prefix(dir.as_str()).filter(|rest| !rest.is_empty()).map(str::to_owned))
            .unwrap_or(input)
    }

    /// A tool's diffs with workspace-relative paths, each cut to what the inline caps leave.
    fn files(&mut self, id: String, files: Vec<crate::protocol::FileDiff>) -> Folded {
        let mut stash = Vec::new();
        let mut kept = Vec::with_capacity(files.len());
        for (index, mut file) in files.into_iter().enumerate() {
            file.path = self.relative("Edit", std::mem::take(&mut file.path));
            let room = MAX_INLINE_DIFF_BYTES.min(MAX_TURN_DIFF_BYTES.saturating_sub(self.turn_diff));
            if file.diff.len() > room {
                let full_len = file.diff.len();
                let cut = file.diff[..floor_boundary(&file.diff, room)].rfind('\n').map_or(0, |end| end + 1);
                let mut whole = file.diff.split_off(cut);
                whole.insert_str(0, &file.diff);
                if whole.len() > MAX_STORED_DIFF_BYTES {
                    let end = whole[..floor_boundary(&whole, MAX_STORED_DIFF_BYTES)].rfind('\n').map_or(0, |e| e + 1);
                    whole.truncate(end);
                }
                let stash_id = format!("{id}:diff:{index}");
                file.full_len = u64::try_from(full_len).ok();
                file.stash_id = Some(stash_id.clone());
                stash.push((stash_id, whole));
            }
            self.turn_diff += file.diff.len();
            kept.push(file);
        }
        Folded::Files { event: ChatEvent::ToolFiles { tool_use_id: id, files: kept }, stash }
    }

    /// Folds one provider event.
    pub fn fold(&mut self, event: AgentEvent) -> Folded {
        match event {
            AgentEvent::Text { item_id, delta } => self.text(false, item_id, delta),
            AgentEvent::Thinking { item_id, delta } => self.text(true, item_id, delta),
            AgentEvent::TextFinal { item_id, text } => self.text_final(item_id, text),
            AgentEvent::Retrying { attempt, max_retries, reason } => {
                Folded::Chat(ChatEvent::Retrying { attempt, max_retries, reason })
            }
            AgentEvent::ToolStart { id, name, input, parent, subagent } => {
                let input = self.relative(&name, input);
                self.started.entry(id.clone()).or_insert_with(std::time::Instant::now);
                Folded::Chat(ChatEvent::ToolStart {
                    tool_use_id: id,
                    tool: name,
                    input,
                    parent_tool_use_id: parent,
                    subagent_type: subagent.map(|s| s.chars().take(MAX_SUBAGENT_TYPE_CHARS).collect()),
                })
            }
            AgentEvent::ToolInput { id, input } => {
                Folded::Chat(ChatEvent::ToolInput { tool_use_id: id, input: super::summarize_input("", &input.into()) })
            }
            AgentEvent::ToolFiles { id, files } => self.files(id, files),
            AgentEvent::Plan(plan) => Folded::Chat(ChatEvent::Plan(bounded_plan(plan))),
            AgentEvent::ToolSources { id, sources } => {
                let sources = web_sources(sources);
                if sources.is_empty() {
                    return Folded::Nothing;
                }
                Folded::Chat(ChatEvent::ToolSources { tool_use_id: id, sources })
            }
            AgentEvent::ToolOutput { id, text, append: true, .. } => {
                let sent = self.streamed.entry(id.clone()).or_insert(0);
                if *sent >= MAX_INLINE_TOOL_OUTPUT {
                    return Folded::Nothing;
                }
                *sent += text.chars().count();
                Folded::Chat(output(id, text, true, None))
            }
            AgentEvent::ToolOutput { id, text, append: false, exit_code } => {
                let reduced = reduce_output(&text);
                let mut event = output(id.clone(), reduced.inline, false, exit_code);
                if !reduced.truncated {
                    return Folded::Chat(event);
                }
                if let ChatEvent::ToolOutput { output_truncated, output_full_len, .. } = &mut event {
                    *output_truncated = true;
                    *output_full_len = u64::try_from(reduced.full_len).ok();
                }
                Folded::Truncated { event, tool_use_id: id, full: text }
            }
            AgentEvent::ToolEnd { id, is_error, interrupted } => {
                let elapsed_ms = self.started.remove(&id).and_then(|at| u64::try_from(at.elapsed().as_millis()).ok());
                Folded::Chat(ChatEvent::ToolEnd { tool_use_id: id, is_error, interrupted, elapsed_ms })
            }
            other @ (AgentEvent::Session(_)
            | AgentEvent::ToolImage { .. }
            | AgentEvent::Ask { .. }
            | AgentEvent::Usage(_)
            | AgentEvent::Limits(_)
            | AgentEvent::Warning(_)
            | AgentEvent::SteerAccepted
            | AgentEvent::SteerRejected(_)
            | AgentEvent::Finished(_)) => Folded::Turn(other),
        }
    }
}

impl ChatFold {
    /// Room left for block `item` within both caps.
    fn room(&self, item: &str) -> usize {
        let used = self.text.get(item).copied().unwrap_or(0);
        MAX_INLINE_TEXT_BYTES.saturating_sub(used).min(MAX_TURN_TEXT_BYTES.saturating_sub(self.turn_text))
    }

    fn count(&mut self, item: &str, bytes: usize) {
        *self.text.entry(item.to_owned()).or_insert(0) += bytes;
        self.turn_text += bytes;
    }

    /// A text or thinking delta: appended while the block and the turn have room; the first
    /// delta past it is cut (with the note), and every later one goes to the overflow file.
    fn text(&mut self, thinking: bool, item_id: String, delta: String) -> Folded {
        let event = |content: String, item_id: String| {
            if thinking { ChatEvent::Thinking { content, item_id } } else { ChatEvent::Text { content, item_id } }
        };
        // A block that overflowed, or a new one once the turn is full (not even tracked, so a
        // flood of new blocks costs no memory here), goes to the overflow file only.
        if self.overflowed.contains(&item_id)
            || (self.turn_text >= MAX_TURN_TEXT_BYTES && !self.text.contains_key(&item_id))
        {
            return Folded::Overflow { event: None, item_id, rest: delta };
        }
        let room = self.room(&item_id);
        if delta.len() <= room {
            self.count(&item_id, delta.len());
            return Folded::Chat(event(delta, item_id));
        }
        let cut = floor_boundary(&delta, room);
        self.count(&item_id, cut);
        self.overflowed.insert(item_id.clone());
        let rest = delta[cut..].to_owned();
        let mut kept = delta;
        kept.truncate(cut);
        kept.push_str(OVERFLOW_NOTE);
        Folded::Overflow { event: Some(event(kept, item_id.clone())), item_id, rest }
    }

    /// The authoritative text of a block, held to the same caps. A block that already
    /// overflowed keeps what it showed (its overflow file has the rest).
    fn text_final(&mut self, item_id: String, text: String) -> Folded {
        if self.overflowed.contains(&item_id) {
            return Folded::Nothing;
        }
        let used = self.text.remove(&item_id).unwrap_or(0);
        self.turn_text -= used.min(self.turn_text);
        let room = self.room(&item_id);
        if text.len() <= room {
            self.count(&item_id, text.len());
            return Folded::Chat(ChatEvent::TextFinal { content: text, item_id });
        }
        let cut = floor_boundary(&text, room);
        self.count(&item_id, cut);
        self.overflowed.insert(item_id.clone());
        let rest = text[cut..].to_owned();
        let mut kept = text;
        kept.truncate(cut);
        kept.push_str(OVERFLOW_NOTE);
        Folded::Overflow {
            event: Some(ChatEvent::TextFinal { content: kept, item_id: item_id.clone() }),
            item_id,
            rest,
        }
    }
}

fn output(tool_use_id: String, content: String, append: bool, exit_code: Option<i64>) -> ChatEvent {
    ChatEvent::ToolOutput {
        tool_use_id,
        content,
        append,
        output_truncated: false,
        output_full_len: None,
        output_exit_code: exit_code,
    }
}

/// A tool output ready to send: inline text plus the truncation facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReducedOutput {
    pub inline: String,
    pub truncated: bool,
    pub full_len: usize,
}

/// Keeps outputs up to [`MAX_INLINE_TOOL_OUTPUT`] characters whole; longer ones become head +
/// marker + tail, cut on character boundaries.
pub fn reduce_output(full: &str) -> ReducedOutput {
    let full_len = full.chars().count();
    if full_len <= MAX_INLINE_TOOL_OUTPUT {
        return ReducedOutput { inline: full.to_owned(), truncated: false, full_len };
    }
    let head: String = full.chars().take(TRUNCATED_HEAD).collect();
    let tail: String = full.chars().skip(full_len - TRUNCATED_TAIL).collect();
    let omitted = full_len - TRUNCATED_HEAD - TRUNCATED_TAIL;
    ReducedOutput {
        inline: format!("{head}\n… [{omitted} characters omitted; open the full output] …\n{tail}"),
        truncated: true,
        full_len,
    }
}

/// A plan as the journal keeps it: at most [`MAX_PLAN_STEPS`] steps (the [`plan_window`]), the
/// others counted by status in `omitted`, and every text cut to [`MAX_PLAN_TEXT_CHARS`].
fn bounded_plan(mut plan: PlanCard) -> PlanCard {
    let short = |t: &str| t.trim().chars().take(MAX_PLAN_TEXT_CHARS).collect::<String>();
    let window = plan_window(&plan.steps);
    for (i, step) in plan.steps.iter().enumerate() {
        if !window.contains(&i) {
            plan.omitted.add(step.status);
        }
    }
    plan.steps.truncate(window.end);
    plan.steps.drain(..window.start);
    for step in &mut plan.steps {
        step.text = short(&step.text);
    }
    plan.explanation = plan.explanation.map(|e| short(&e)).filter(|e| !e.is_empty());
    plan
}

/// Which steps of a plan the card keeps: all of a plan of at most [`MAX_PLAN_STEPS`]; of a
/// longer one, its first [`MAX_PLAN_STEPS`] while they hold the step being worked on (the first
/// in progress, else the first not completed), otherwise the [`MAX_PLAN_STEPS`] from
/// [`PLAN_STEPS_BEFORE_CURRENT`] steps before it (or the last ones). Keeping the first 50
/// always would hide step 70 while the agent works on it; this window always shows it, and a
/// plan that is still open always shows an open step.
fn plan_window(steps: &[PlanStep]) -> std::ops::Range<usize> {
    let last_start = steps.len().saturating_sub(MAX_PLAN_STEPS);
    let current = steps
        .iter()
        .position(|s| s.status == PlanStatus::InProgress)
        .or_else(|| steps.iter().position(|s| s.status != PlanStatus::Completed));
    let start = match current {
        Some(at) if at >= MAX_PLAN_STEPS => at.saturating_sub(PLAN_STEPS_BEFORE_CURRENT).min(last_start),
        _ => 0,
    };
    start..steps.len().min(start + MAX_PLAN_STEPS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::PlanCounts;

    #[test]
    fn long_outputs_are_reduced_on_char_boundaries() {
        let short = reduce_output("ok");
        assert!(!short.truncated);
        let long: String = "é".repeat(10_000);
        let r = reduce_output(&long);
        assert!(r.truncated);
        assert_eq!(r.full_len, 10_000);
        assert!(r.inline.contains("characters omitted"));
        assert!(r.inline.chars().count() < MAX_INLINE_TOOL_OUTPUT + 100);
    }

    #[test]
    fn diffs_are_relative_and_cut_at_a_line_end_with_the_whole_kept() {
        let mut fold = ChatFold::in_workspace(Path::new("/srv/data"));
        let big = super::super::diff::whole(&"x".repeat(99), '+').repeat(MAX_INLINE_DIFF_BYTES / 100 + 10);
        let files = vec![
            super::super::diff::file("/srv/data/a.rs", crate::protocol::FileChange::Update, "-a\n+b\n".into()),
            super::super::diff::file("/srv/data/big.txt", crate::protocol::FileChange::Write, big.clone()),
        ];
        let Folded::Files { event: ChatEvent::ToolFiles { files, .. }, stash } =
            fold.fold(AgentEvent::ToolFiles { id: "t".into(), files })
        else {
            panic!("not files")
        };
        assert_eq!(files[0].path, "a.rs");
        assert_eq!(files[0].diff, "-a\n+b\n");
        assert_eq!(files[0].full_len, None);
        let cut = &files[1];
        assert!(cut.diff.len() <= MAX_INLINE_DIFF_BYTES && cut.diff.ends_with('\n'));
        assert_eq!(
            (cut.added, cut.full_len),
            (u32::try_from(big.lines().count()).expect("count"), Some(big.len() as u64))
        );
        assert_eq!(stash, vec![("t:diff:1".to_owned(), big)]);
        assert_eq!(cut.stash_id.as_deref(), Some("t:diff:1"));
    }

    #[test]
    fn web_sources_keep_http_urls_once_with_short_titles() {
        let raw = vec![
            ("https://a.example/1".to_owned(), Some("  A\n title ".to_owned())),
            ("https://a.example/1".to_owned(), None),
            ("javascript:alert(1)".to_owned(), Some("x".to_owned())),
            ("http://b.example/".to_owned(), Some(String::new())),
        ];
        let kept = web_sources(raw);
        assert_eq!(kept.len(), 2);
        assert_eq!(kept[0].title.as_deref(), Some("A title"));
        assert_eq!((kept[1].url.as_str(), kept[1].title.as_deref()), ("http://b.example/", None));
        let many = (0..50).map(|i| (format!("https://e.example/{i}"), None)).collect();
        assert_eq!(web_sources(many).len(), MAX_SOURCES_PER_TOOL);
    }

    #[test]
    fn an_input_told_later_is_one_bounded_line() {
        let mut fold = ChatFold::in_workspace(Path::new("/srv/data"));
        let told = fold.fold(AgentEvent::ToolInput { id: "w".into(), input: format!("tokio\n{}", "x ".repeat(300)) });
        let Folded::Chat(ChatEvent::ToolInput { tool_use_id, input }) = told else { panic!("{told:?}") };
        assert_eq!(tool_use_id, "w");
        assert!(input.starts_with("tokio x") && input.chars().count() <= 200 && !input.contains('\n'), "{input}");
    }

    #[test]
    fn a_path_is_relative_to_the_chats_workspace_first_then_the_data_dir() {
        let fold = ChatFold::in_workspace(Path::new("/srv/data/workspace/c")).with_root(Path::new("/srv/data"));
        assert_eq!(fold.relative("Write", "/srv/data/workspace/c/agent-home/hello.txt".into()), "agent-home/hello.txt");
        assert_eq!(fold.relative("Edit", "/srv/data/apps/notes/App.jsx".into()), "apps/notes/App.jsx");
        assert_eq!(fold.relative("Read", "/etc/hosts".into()), "/etc/hosts");
    }

    #[test]
    fn file_tools_show_paths_relative_to_the_workspace() {
        let mut fold = ChatFold::in_workspace(Path::new("/srv/data"));
        let start = |name: &str, input: &str| AgentEvent::ToolStart {
            id: "t".into(),
            name: name.into(),
            input: input.into(),
            parent: None,
            subagent: None,
        };
        let shown = |folded: Folded| match folded {
            Folded::Chat(ChatEvent::ToolStart { input, .. }) => input,
            other => panic!("{other:?}"),
        };
        assert_eq!(shown(fold.fold(start("Write", "/srv/data/apps/notes/src/App.tsx"))), "apps/notes/src/App.tsx");
        // Outside the workspace, a look-alike prefix, the folder itself and commands stay as they are.
        assert_eq!(shown(fold.fold(start("Read", "/etc/hosts"))), "/etc/hosts");
        assert_eq!(shown(fold.fold(start("Read", "/srv/database/x"))), "/srv/database/x");
        assert_eq!(shown(fold.fold(start("Glob", "/srv/data/"))), "/srv/data/");
        assert_eq!(shown(fold.fold(start("Bash", "/srv/data/run.sh"))), "/srv/data/run.sh");
    }

    #[test]
    fn outputs_fold_whole_truncated_or_streamed_up_to_the_cap() {
        let mut fold = ChatFold::default();
        let out = |text: String, append| AgentEvent::ToolOutput { id: "t".into(), text, append, exit_code: Some(0) };
        assert!(matches!(
            fold.fold(out("ok".into(), false)),
            Folded::Chat(ChatEvent::ToolOutput { output_exit_code: Some(0), .. })
        ));
        match fold.fold(out("x".repeat(9_000), false)) {
            Folded::Truncated {
                event: ChatEvent::ToolOutput { output_truncated: true, output_full_len, .. },
                full,
                ..
            } => {
                assert_eq!((output_full_len, full.len()), (Some(9_000), 9_000));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(fold.fold(out("y".repeat(MAX_INLINE_TOOL_OUTPUT), true)), Folded::Chat(_)));
        assert!(matches!(fold.fold(out("more".into(), true)), Folded::Nothing), "past the cap nothing streams");
        assert!(matches!(fold.fold(AgentEvent::SteerAccepted), Folded::Turn(AgentEvent::SteerAccepted)));
    }

    #[test]
    fn text_past_the_block_cap_is_cut_once_then_only_overflows() {
        let mut fold = ChatFold::default();
        let delta = |fold: &mut ChatFold, item: &str, text: String| {
            fold.fold(AgentEvent::Text { item_id: item.into(), delta: text })
        };
        let chunk = "é".repeat(1000); // 2,000 bytes
        let mut journaled = 0usize;
        let mut overflow = 0usize;
        for _ in 0..200 {
            match delta(&mut fold, "a", chunk.clone()) {
                Folded::Chat(ChatEvent::Text { content, .. }) => journaled += content.len(),
                Folded::Overflow { event: Some(ChatEvent::Text { content, .. }), rest, .. } => {
                    assert!(content.ends_with(OVERFLOW_NOTE));
                    journaled += content.len() - OVERFLOW_NOTE.len();
                    overflow += rest.len();
                }
                Folded::Overflow { event: None, rest, .. } => overflow += rest.len(),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(journaled, MAX_INLINE_TEXT_BYTES, "cut exactly at the cap, on a char boundary");
        assert_eq!(journaled + overflow, 200 * 2000, "nothing lost");
        // The authoritative text of an overflowed block changes nothing.
        assert!(matches!(
            fold.fold(AgentEvent::TextFinal { item_id: "a".into(), text: "short".into() }),
            Folded::Nothing
        ));
        // Other blocks share the turn's cap.
        let mut blocks = 1;
        while !matches!(delta(&mut fold, &format!("b{blocks}"), "x".repeat(200_000)), Folded::Overflow { .. }) {
            blocks += 1;
        }
        assert!(fold.turn_text <= MAX_TURN_TEXT_BYTES && blocks < 10, "{blocks} blocks");
        assert_eq!(overflow_file(Path::new("/d"), "c1", "msg_1:0/../x"), PathBuf::from("/d/c1/msg_1_0____x.txt"));
    }

    #[test]
    fn an_authoritative_text_replaces_what_its_deltas_counted() {
        let mut fold = ChatFold::default();
        for _ in 0..10 {
            let _ = fold.fold(AgentEvent::Text { item_id: "a".into(), delta: "x".repeat(10_000) });
        }
        assert!(matches!(
            fold.fold(AgentEvent::TextFinal { item_id: "a".into(), text: "y".repeat(100_000) }),
            Folded::Chat(_)
        ));
        assert_eq!(fold.turn_text, 100_000);
    }

    /// A plan of `len` steps numbered from 1: those before `current` completed, `current` at
    /// `status`, the rest pending.
    fn long_plan(len: usize, current: usize, status: PlanStatus) -> PlanCard {
        let steps = (1..=len)
            .map(|n| PlanStep {
                text: format!("step {n}"),
                status: match n.cmp(&current) {
                    std::cmp::Ordering::Less => PlanStatus::Completed,
                    std::cmp::Ordering::Equal => status,
                    std::cmp::Ordering::Greater => PlanStatus::Pending,
                },
            })
            .collect();
        PlanCard { steps, ..PlanCard::default() }
    }

    fn folded_plan(plan: PlanCard) -> PlanCard {
        match ChatFold::default().fold(AgentEvent::Plan(plan)) {
            Folded::Chat(ChatEvent::Plan(plan)) => plan,
            other => panic!("not a plan: {other:?}"),
        }
    }

    fn texts(plan: &PlanCard) -> Vec<&str> {
        plan.steps.iter().map(|s| s.text.as_str()).collect()
    }

    #[test]
    fn a_long_plan_keeps_fifty_steps_and_counts_the_rest_by_status() {
        let plan = folded_plan(long_plan(60, 13, PlanStatus::InProgress));
        assert_eq!(plan.steps.len(), MAX_PLAN_STEPS);
        assert_eq!(
            (texts(&plan)[0], texts(&plan)[49]),
            ("step 1", "step 50"),
            "the step in progress fits: the first 50"
        );
        assert_eq!(plan.omitted, PlanCounts { pending: 10, in_progress: 0, completed: 0 });
        let json = serde_json::to_value(ChatEvent::Plan(plan.clone())).expect("json");
        assert_eq!(json["omitted"], serde_json::json!({"pending": 10, "in_progress": 0, "completed": 0}), "{json}");
        // Finishing the first 50 steps does not finish the plan.
        let plan = folded_plan(long_plan(60, 51, PlanStatus::Pending));
        assert!(plan.is_open() && !plan.is_done(), "{plan:?}");
    }

    #[test]
    fn the_step_being_worked_on_stays_on_the_card_past_the_fiftieth() {
        // Far into a long plan: two done steps before it, then the next 47.
        let plan = folded_plan(long_plan(200, 70, PlanStatus::InProgress));
        assert_eq!(plan.steps.len(), MAX_PLAN_STEPS);
        assert_eq!(texts(&plan)[..3], ["step 68", "step 69", "step 70"]);
        assert_eq!(plan.steps[2].status, PlanStatus::InProgress);
        assert_eq!(plan.omitted, PlanCounts { pending: 83, in_progress: 0, completed: 67 });
        // Near the end: the last 50 steps. With no step in progress, the first not done counts.
        let plan = folded_plan(long_plan(60, 58, PlanStatus::Pending));
        assert_eq!((texts(&plan)[0], texts(&plan)[49]), ("step 11", "step 60"));
        assert_eq!(plan.omitted, PlanCounts { pending: 0, in_progress: 0, completed: 10 });
        // A step in progress wins over an earlier one left to do.
        let mut plan = long_plan(60, 55, PlanStatus::InProgress);
        plan.steps[2].status = PlanStatus::Pending;
        let plan = folded_plan(plan);
        assert!(texts(&plan).contains(&"step 55"), "{:?}", texts(&plan));
        assert_eq!(plan.omitted, PlanCounts { pending: 1, in_progress: 0, completed: 9 });
    }

    #[test]
    fn a_plan_of_exactly_fifty_steps_omits_nothing() {
        let plan = folded_plan(long_plan(MAX_PLAN_STEPS, 50, PlanStatus::InProgress));
        assert_eq!(plan.steps.len(), MAX_PLAN_STEPS);
        assert!(plan.omitted.is_empty());
        let json = serde_json::to_value(ChatEvent::Plan(plan)).expect("json");
        assert!(json.get("omitted").is_none(), "nothing left out, nothing said: {json}");
        // A card stored before the count existed still reads.
        let old: PlanCard = serde_json::from_str(r#"{"steps":[{"text":"a","status":"pending"}]}"#).expect("old card");
        assert!(old.omitted.is_empty() && old.is_open());
    }
}
