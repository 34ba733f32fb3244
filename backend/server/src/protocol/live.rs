//! The live assistant message: journal events folded into blocks, exactly as the PWA's reducer
//! (`frontend/src/chat/reducer.ts`) folds them.
//!
//! A running turn keeps one [`LiveMessage`]; snapshots of it are what the writer persists and
//! what the chat detail overlays, so a reader that applies the journal after a snapshot's
//! `upto_seq` arrives at the same blocks the server has.

use super::event::ChatEvent;
use super::message::{Block, Message, QuestionCard, ToolBlock, ToolStatus};

/// Images one tool block shows at most.
pub const MAX_TOOL_IMAGES: usize = 8;

/// The in-flight assistant message of one turn.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveMessage {
    ts: i64,
    blocks: Vec<Block>,
    /// The attempt a regenerating turn writes ([`Message::version`]).
    version: Option<u32>,
}

impl LiveMessage {
    /// An empty message started at `ts` (unix ms).
    pub fn new(ts: i64) -> Self {
        Self { ts, blocks: Vec::new(), version: None }
    }

    /// An empty message started at `ts` that is attempt `version` of a regenerated reply.
    pub fn regenerating(ts: i64, version: Option<u32>) -> Self {
        Self { ts, blocks: Vec::new(), version }
    }

    /// Continues a stored message (a snapshot after a restart, or an earlier state).
    pub fn from_message(message: Message) -> Self {
        Self { ts: message.ts, blocks: message.blocks.unwrap_or_default(), version: message.version }
    }

    /// True when nothing has been produced yet.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// The blocks so far.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// Folds one journal event into the blocks; events about anything else change nothing.
    pub fn apply(&mut self, event: &ChatEvent) {
        match event {
            ChatEvent::Text { content, item_id } => self.append(false, item_id, content),
            ChatEvent::Thinking { content, item_id } => self.append(true, item_id, content),
            ChatEvent::TextFinal { content, item_id } => {
                let existing = self.blocks.iter_mut().rev().find_map(|b| match b {
                    Block::Text { content, item_id: id } if id == item_id => Some(content),
                    _ => None,
                });
                match existing {
                    Some(text) => content.clone_into(text),
                    None if !content.is_empty() => {
                        self.blocks.push(Block::Text { content: content.clone(), item_id: item_id.clone() });
                    }
                    None => {}
                }
            }
            ChatEvent::ToolStart { tool_use_id, tool, input, parent_tool_use_id, subagent_type } => {
                if self.tool_mut(tool_use_id).is_none() {
                    self.blocks.push(Block::Tool(ToolBlock {
                        tool: tool.clone(),
                        tool_use_id: tool_use_id.clone(),
                        input: input.clone(),
                        output: String::new(),
                        status: ToolStatus::Running,
                        output_truncated: false,
                        output_full_len: None,
                        output_exit_code: None,
                        images: Vec::new(),
                        files: Vec::new(),
                        sources: Vec::new(),
                        elapsed_ms: None,
                        parent_tool_use_id: parent_tool_use_id.clone(),
                        subagent_type: subagent_type.clone(),
                    }));
                }
            }
            ChatEvent::Plan(plan) => {
                let existing = self.blocks.iter_mut().find_map(|b| match b {
                    Block::Plan(card) => Some(card),
                    _ => None,
                });
                match existing {
                    Some(card) => plan.clone_into(card),
                    None => self.blocks.push(Block::Plan(plan.clone())),
                }
            }
            ChatEvent::ToolInput { tool_use_id, input } => {
                if let Some(tool) = self.tool_mut(tool_use_id) {
                    input.clone_into(&mut tool.input);
                }
            }
            ChatEvent::ToolSources { tool_use_id, sources } => {
                if let Some(tool) = self.tool_mut(tool_use_id) {
                    sources.clone_into(&mut tool.sources);
                }
            }
            ChatEvent::ToolFiles { tool_use_id, files } => {
                if let Some(tool) = self.tool_mut(tool_use_id) {
                    files.clone_into(&mut tool.files);
                }
            }
            ChatEvent::ToolOutput {
                tool_use_id,
                content,
                append,
                output_truncated,
                output_full_len,
                output_exit_code,
            } => {
                if let Some(tool) = self.tool_mut(tool_use_id) {
                    if *append {
                        tool.output.push_str(content);
                    } else {
                        content.clone_into(&mut tool.output);
                    }
                    if *output_truncated {
                        tool.output_truncated = true;
                    }
                    if output_full_len.is_some() {
                        tool.output_full_len = *output_full_len;
                    }
                    if output_exit_code.is_some() {
                        tool.output_exit_code = *output_exit_code;
                    }
                }
            }
            ChatEvent::ToolImage { tool_use_id, url } => {
                if let Some(tool) = self.tool_mut(tool_use_id)
                    && tool.images.len() < MAX_TOOL_IMAGES
                    && !tool.images.contains(url)
                {
                    tool.images.push(url.clone());
                }
            }
            ChatEvent::ToolEnd { tool_use_id, is_error, interrupted, elapsed_ms } => {
                if let Some(tool) = self.tool_mut(tool_use_id) {
                    if elapsed_ms.is_some() {
                        tool.elapsed_ms = *elapsed_ms;
                    }
                    tool.status = match (interrupted, is_error) {
                        (true, _) => ToolStatus::Stopped,
                        (false, true) => ToolStatus::Error,
                        (false, false) => ToolStatus::Done,
                    };
                }
            }
            ChatEvent::Question(card) => {
                if self.card_mut(&card.question_id).is_none() {
                    self.blocks.push(Block::Question(card.clone()));
                }
            }
            ChatEvent::AnswersApplied { question_id, answers } => {
                if let Some(card) = self.card_mut(question_id) {
                    card.set_answers(answers);
                }
            }
            ChatEvent::Error { message, resumable, fix, pause } => {
                if matches!(self.blocks.last(), Some(Block::Error { .. })) {
                    self.blocks.pop();
                }
                self.blocks.push(Block::Error {
                    message: message.clone(),
                    resumable: *resumable,
                    fix: *fix,
                    pause: pause.clone(),
                });
            }
            ChatEvent::UserMessage { .. }
            | ChatEvent::Retrying { .. }
            | ChatEvent::Waiting(_)
            | ChatEvent::RunStarted { .. }
            | ChatEvent::QueueChanged { .. }
            | ChatEvent::QueuedTurnStarting { .. }
            | ChatEvent::SteeredIntoTurn { .. }
            | ChatEvent::Handoff { .. }
            | ChatEvent::Done { .. }
            | ChatEvent::ChatRenamed { .. }
            | ChatEvent::ChatDeleted
            | ChatEvent::GoalChanged { .. }
            | ChatEvent::AppUpdated { .. } => {}
        }
    }

    fn append(&mut self, thinking: bool, item: &str, piece: &str) {
        let existing = self.blocks.iter_mut().rev().find_map(|b| match b {
            Block::Text { content, item_id } if !thinking && item_id == item => Some(content),
            Block::Thinking { content, item_id } if thinking && item_id == item => Some(content),
            _ => None,
        });
        match existing {
            Some(content) => content.push_str(piece),
            None if thinking => {
                self.blocks.push(Block::Thinking { content: piece.to_owned(), item_id: item.to_owned() })
            }
            None => self.blocks.push(Block::Text { content: piece.to_owned(), item_id: item.to_owned() }),
        }
    }

    fn tool_mut(&mut self, id: &str) -> Option<&mut ToolBlock> {
        self.blocks.iter_mut().rev().find_map(|b| match b {
            Block::Tool(tool) if tool.tool_use_id == id => Some(tool),
            _ => None,
        })
    }

    fn card_mut(&mut self, id: &str) -> Option<&mut QuestionCard> {
        self.blocks.iter_mut().rev().find_map(|b| match b {
            Block::Question(card) if card.question_id == id => Some(card),
            _ => None,
        })
    }

    /// Tool calls still running end as `status` (the turn is over).
    pub fn close_running_tools(&mut self, status: ToolStatus) {
        for block in &mut self.blocks {
            if let Block::Tool(tool) = block
                && tool.status == ToolStatus::Running
            {
                tool.status = status;
            }
        }
    }

    /// The message as stored and served.
    pub fn to_message(&self) -> Message {
        Message { version: self.version, ..Message::assistant(self.ts, self.blocks.clone()) }
    }

    /// [`Self::to_message`] without copying the blocks.
    pub fn into_message(self) -> Message {
        Message { version: self.version, ..Message::assistant(self.ts, self.blocks) }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::message::Card;

    fn apply(m: &mut LiveMessage, event: serde_json::Value) {
        m.apply(&serde_json::from_value(event).expect("event"));
    }

    fn tool(m: &LiveMessage, i: usize) -> &ToolBlock {
        match &m.blocks()[i] {
            Block::Tool(t) => t,
            other => panic!("not a tool: {other:?}"),
        }
    }

    #[test]
    fn a_regenerating_message_keeps_its_version_through_a_snapshot() {
        let mut m = LiveMessage::regenerating(5, Some(3));
        apply(&mut m, json!({"type": "text", "content": "again", "item_id": "t"}));
        assert_eq!(m.to_message().version, Some(3));
        let again = LiveMessage::from_message(m.to_message());
        assert_eq!(again.into_message().version, Some(3));
        assert_eq!(LiveMessage::new(5).into_message().version, None);
    }

    #[test]
    fn text_deltas_of_one_item_join_and_a_new_item_starts_a_block() {
        let mut m = LiveMessage::new(1);
        apply(&mut m, json!({"type":"text","content":"Hel","item_id":"a"}));
        apply(&mut m, json!({"type":"text","content":"lo","item_id":"a"}));
        apply(&mut m, json!({"type":"tool_start","tool_use_id":"t1","tool":"Bash","input":"ls"}));
        apply(&mut m, json!({"type":"text","content":"Done","item_id":"b"}));
        let message = m.to_message();
        assert_eq!(message.content, "Hello\n\nDone");
        assert_eq!(message.blocks.as_ref().map(Vec::len), Some(3));
    }

    #[test]
    fn text_final_repairs_dropped_deltas() {
        let mut m = LiveMessage::new(1);
        apply(&mut m, json!({"type":"text","content":"Hel","item_id":"a"}));
        apply(&mut m, json!({"type":"text_final","content":"Hello there","item_id":"a"}));
        apply(&mut m, json!({"type":"text_final","content":"","item_id":"b"}));
        assert_eq!(m.to_message().content, "Hello there");
        assert_eq!(m.blocks().len(), 1, "an empty final text starts nothing");
    }

    #[test]
    fn a_tools_images_are_added_once_each_up_to_the_cap() {
        let mut m = LiveMessage::new(1);
        apply(&mut m, json!({"type":"tool_start","tool_use_id":"v1","tool":"Read","input":"shot.png"}));
        for i in 0..(MAX_TOOL_IMAGES + 3) {
            apply(&mut m, json!({"type":"tool_image","tool_use_id":"v1","url":format!("/api/chats/c/media/i{i}.png")}));
            apply(&mut m, json!({"type":"tool_image","tool_use_id":"v1","url":format!("/api/chats/c/media/i{i}.png")}));
        }
        apply(&mut m, json!({"type":"tool_image","tool_use_id":"nope","url":"/api/chats/c/media/x.png"}));
        assert_eq!(tool(&m, 0).images.len(), MAX_TOOL_IMAGES);
        assert_eq!(tool(&m, 0).images[0], "/api/chats/c/media/i0.png");
        let stored = serde_json::to_string(&m.to_message()).expect("json");
        assert!(stored.contains("\"images\":[\"/api/chats/c/media/i0.png\""), "{stored}");
    }

    #[test]
    fn tools_run_output_and_end() {
        let mut m = LiveMessage::new(1);
        apply(&mut m, json!({"type":"tool_start","tool_use_id":"t1","tool":"Bash","input":"ls"}));
        apply(&mut m, json!({"type":"tool_output","tool_use_id":"t1","content":"a\n","append":true}));
        apply(&mut m, json!({"type":"tool_output","tool_use_id":"t1","content":"b\n","append":true}));
        apply(&mut m, json!({"type":"tool_end","tool_use_id":"t1","is_error":true}));
        assert_eq!(tool(&m, 0).output, "a\nb\n");
        assert_eq!(tool(&m, 0).status, ToolStatus::Error);
        apply(&mut m, json!({"type":"tool_start","tool_use_id":"t2","tool":"Read","input":"x"}));
        m.close_running_tools(ToolStatus::Done);
        assert_eq!(tool(&m, 1).status, ToolStatus::Done);
        // A step cut short by a steer's interrupt is stopped, not failed.
        apply(&mut m, json!({"type":"tool_start","tool_use_id":"t3","tool":"Bash","input":"sleep 9"}));
        apply(&mut m, json!({"type":"tool_end","tool_use_id":"t3","is_error":true,"interrupted":true}));
        assert_eq!(tool(&m, 2).status, ToolStatus::Stopped);
        // Diffs land on their tool; diffs of an unknown tool change nothing.
        let files = json!([{"path":"a.rs","change":"update","added":1,"removed":0,"diff":"+x\n"}]);
        apply(&mut m, json!({"type":"tool_files","tool_use_id":"t3","files":files}));
        apply(&mut m, json!({"type":"tool_files","tool_use_id":"nope","files":files}));
        assert_eq!(tool(&m, 2).files[0].diff, "+x\n");
        apply(&mut m, json!({"type":"tool_end","tool_use_id":"t3","is_error":false,"elapsed_ms":1500}));
        assert_eq!(tool(&m, 2).elapsed_ms, Some(1500));
        apply(
            &mut m,
            json!({"type":"tool_sources","tool_use_id":"t3","sources":[{"url":"https://a.example/x","title":"A"}]}),
        );
        assert_eq!(tool(&m, 2).sources[0].title.as_deref(), Some("A"));
        // An input known only later replaces the summary the call started with.
        apply(&mut m, json!({"type":"tool_input","tool_use_id":"t3","input":"sleep 10"}));
        apply(&mut m, json!({"type":"tool_input","tool_use_id":"nope","input":"x"}));
        assert_eq!(tool(&m, 2).input, "sleep 10");
        // A plan is one card, updated in place.
        apply(
            &mut m,
            json!({"type":"plan","steps":[{"text":"a","status":"in_progress"},{"text":"b","status":"pending"}]}),
        );
        apply(&mut m, json!({"type":"text","item_id":"x","content":"working"}));
        apply(
            &mut m,
            json!({"type":"plan","steps":[{"text":"a","status":"completed"},{"text":"b","status":"in_progress"}]}),
        );
        let plans: Vec<_> =
            m.blocks().iter().filter_map(|b| if let Block::Plan(p) = b { Some(p) } else { None }).collect();
        assert_eq!(plans.len(), 1);
        assert_eq!(plans[0].steps[0].status, super::super::message::PlanStatus::Completed);
        assert!(matches!(m.blocks()[3], Block::Plan(_)));
        assert_eq!(m.blocks().len(), 5, "three tools, a plan and a text");
    }

    #[test]
    fn a_subagents_steps_keep_the_call_they_ran_under() {
        let mut m = LiveMessage::new(1);
        apply(
            &mut m,
            json!({"type":"tool_start","tool_use_id":"a1","tool":"Agent","input":"Find it","subagent_type":"Explore"}),
        );
        apply(
            &mut m,
            json!({"type":"tool_start","tool_use_id":"r1","tool":"Read","input":"x","parent_tool_use_id":"a1"}),
        );
        assert_eq!(tool(&m, 0).subagent_type.as_deref(), Some("Explore"));
        assert_eq!(tool(&m, 1).parent_tool_use_id.as_deref(), Some("a1"));
        let stored = serde_json::to_value(m.to_message()).expect("json");
        assert_eq!(stored["blocks"][1]["parent_tool_use_id"], "a1");
        assert!(stored["blocks"][0].get("parent_tool_use_id").is_none(), "absent unless set: {stored}");
    }

    #[test]
    fn answers_land_on_their_question_and_errors_replace_a_trailing_error() {
        let mut m = LiveMessage::new(1);
        let card = json!({"type":"question","question_id":"q1","kind":"question","questions":[{"question":"Which?"}]});
        apply(&mut m, card.clone());
        apply(&mut m, card);
        assert_eq!(m.blocks().len(), 1, "a replayed card is not shown twice");
        apply(&mut m, json!({"type":"answers_applied","question_id":"q1","answers":{"Which?":"Blue"}}));
        let Block::Question(card) = &m.blocks()[0] else { panic!("a card") };
        assert!(matches!(&card.card, Card::Question { answers: Some(a), .. } if a.contains_key("Which?")));
        apply(&mut m, json!({"type":"error","message":"one"}));
        apply(&mut m, json!({"type":"error","message":"two"}));
        assert_eq!(m.blocks().len(), 2);
        assert!(matches!(&m.blocks()[1], Block::Error { message, .. } if message == "two"));
    }
}
