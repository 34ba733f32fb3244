//! The one fold from provider events ([`AgentEvent`]) to chat events ([`ChatEvent`]): what a
//! delta, a tool call or its output becomes in the journal, with long outputs truncated
//! inline and kept whole elsewhere. Events that are not part of the transcript (the session,
//! usage, questions, steering, the end) go back to the turn.

use std::collections::HashMap;

use super::AgentEvent;
use crate::protocol::ChatEvent;

/// Tool output kept inline in events and blocks; longer output is stored whole and truncated.
pub const MAX_INLINE_TOOL_OUTPUT: usize = 4096;
/// Characters kept from the start and the end of a truncated output.
const TRUNCATED_HEAD: usize = 2048;
const TRUNCATED_TAIL: usize = 1024;

/// What one provider event means for the chat.
#[derive(Debug)]
pub enum Folded {
    /// A journal event.
    Chat(ChatEvent),
    /// A journal event whose output was truncated: `full` is stored for `/tool-output/{id}`.
    Truncated { event: ChatEvent, tool_use_id: String, full: String },
    /// Nothing to record (streamed output past the inline cap).
    Nothing,
    /// Not part of the transcript: the turn handles it.
    Turn(AgentEvent),
}

/// The fold's state for one turn: how much output each tool has streamed.
#[derive(Debug, Default)]
pub struct ChatFold {
    streamed: HashMap<String, usize>,
}

impl ChatFold {
    /// Folds one provider event.
    pub fn fold(&mut self, event: AgentEvent) -> Folded {
        match event {
            AgentEvent::Text { item_id, delta } => Folded::Chat(ChatEvent::Text { content: delta, item_id }),
            AgentEvent::TextFinal { item_id, text } => Folded::Chat(ChatEvent::TextFinal { content: text, item_id }),
            AgentEvent::Thinking { item_id, delta } => Folded::Chat(ChatEvent::Thinking { content: delta, item_id }),
            AgentEvent::ToolStart { id, name, input } => {
                Folded::Chat(ChatEvent::ToolStart { tool_use_id: id, tool: name, input })
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
                Folded::Chat(ChatEvent::ToolEnd { tool_use_id: id, is_error, interrupted })
            }
            other @ (AgentEvent::Session(_)
            | AgentEvent::Ask { .. }
            | AgentEvent::Usage(_)
            | AgentEvent::Warning(_)
            | AgentEvent::SteerAccepted
            | AgentEvent::SteerRejected(_)
            | AgentEvent::Finished(_)) => Folded::Turn(other),
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
