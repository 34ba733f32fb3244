//! The live assistant message: client events folded into blocks, exactly as clients fold them.
//!
//! The server keeps one [`LiveMessage`] per running turn; snapshots of it are what the
//! writer persists and what the chat detail overlays, so a reader that applies the journal
//! after a snapshot's `upto_seq` arrives at the same blocks the server has.

use serde_json::{Map, Value, json};

/// Tool output kept inline in events and blocks; longer output is stored whole and truncated.
pub const MAX_INLINE_TOOL_OUTPUT: usize = 4096;
const TRUNCATED_HEAD: usize = 2048;
const TRUNCATED_TAIL: usize = 1024;

/// The in-flight assistant message of one turn.
#[derive(Debug, Clone)]
pub struct LiveMessage {
    ts: i64,
    blocks: Vec<Map<String, Value>>,
}

impl LiveMessage {
    /// An empty message started at `ts` (unix ms).
    pub fn new(ts: i64) -> Self {
        Self { ts, blocks: Vec::new() }
    }

    /// Rebuilds from a stored message body (used when resuming after an answer or a restart).
    pub fn from_body(body: &Value) -> Self {
        let ts = body.get("ts").and_then(Value::as_i64).unwrap_or_else(crate::db::now_ms);
        let blocks = body
            .get("blocks")
            .and_then(Value::as_array)
            .map(|b| b.iter().filter_map(|v| v.as_object().cloned()).collect())
            .unwrap_or_default();
        Self { ts, blocks }
    }

    /// True when nothing has been produced yet.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// The blocks so far.
    pub fn blocks(&self) -> &[Map<String, Value>] {
        &self.blocks
    }

    /// Folds one client event (`{"type": …}`) into the blocks. Unknown types are ignored.
    pub fn apply(&mut self, event: &Map<String, Value>) {
        let kind = event.get("type").and_then(Value::as_str).unwrap_or_default();
        let str_field = |k: &str| event.get(k).and_then(Value::as_str).unwrap_or_default();
        match kind {
            "text" | "thinking" => {
                let block_type = kind;
                let item = str_field("item_id");
                let piece = str_field("content");
                match self.blocks.last_mut() {
                    Some(b)
                        if is(b, block_type)
                            && b.get("item_id").and_then(Value::as_str).unwrap_or_default() == item =>
                    {
                        let mut content = b.get("content").and_then(Value::as_str).unwrap_or_default().to_owned();
                        content.push_str(piece);
                        b.insert("content".into(), content.into());
                    }
                    _ => self.blocks.push(obj(json!({ "type": block_type, "content": piece, "item_id": item }))),
                }
            }
            "text_final" => {
                let item = str_field("item_id");
                let text = str_field("content");
                let existing =
                    self.blocks.iter_mut().rev().find(|b| {
                        is(b, "text") && b.get("item_id").and_then(Value::as_str).unwrap_or_default() == item
                    });
                match existing {
                    Some(b) => {
                        b.insert("content".into(), text.into());
                    }
                    None if !text.is_empty() => {
                        self.blocks.push(obj(json!({ "type": "text", "content": text, "item_id": item })));
                    }
                    None => {}
                }
            }
            "tool_start" => {
                let id = str_field("tool_use_id");
                if self.tool_mut(id).is_none() {
                    self.blocks.push(obj(json!({
                        "type": "tool",
                        "tool": str_field("tool"),
                        "tool_use_id": id,
                        "input": event.get("input").cloned().unwrap_or(Value::String(String::new())),
                        "output": "",
                        "status": "running",
                    })));
                }
            }
            "tool_output" => {
                let id = str_field("tool_use_id").to_owned();
                if let Some(b) = self.tool_mut(&id) {
                    let piece = event.get("content").and_then(Value::as_str).unwrap_or_default();
                    let append = event.get("append").and_then(Value::as_bool).unwrap_or(false);
                    let output = if append {
                        let mut o = b.get("output").and_then(Value::as_str).unwrap_or_default().to_owned();
                        o.push_str(piece);
                        o
                    } else {
                        piece.to_owned()
                    };
                    b.insert("output".into(), output.into());
                    for key in ["output_truncated", "output_full_len", "output_exit_code"] {
                        if let Some(v) = event.get(key) {
                            b.insert(key.into(), v.clone());
                        }
                    }
                }
            }
            "tool_end" => {
                let id = str_field("tool_use_id").to_owned();
                let flag = |key: &str| event.get(key).and_then(Value::as_bool).unwrap_or(false);
                let status = match (flag("interrupted"), flag("is_error")) {
                    (true, _) => "stopped",
                    (false, true) => "error",
                    (false, false) => "done",
                };
                if let Some(b) = self.tool_mut(&id) {
                    b.insert("status".into(), status.into());
                }
            }
            "question" => {
                let mut block = event.clone();
                block.insert("type".into(), "question".into());
                block.remove("seq");
                self.blocks.push(block);
            }
            "answers_applied" => {
                let qid = str_field("question_id").to_owned();
                if let Some(b) =
                    self.blocks.iter_mut().rev().find(|b| {
                        is(b, "question") && b.get("question_id").and_then(Value::as_str) == Some(qid.as_str())
                    })
                {
                    b.insert("answers".into(), event.get("answers").cloned().unwrap_or(Value::Null));
                }
            }
            "error" => {
                if self.blocks.last().is_some_and(|b| is(b, "error")) {
                    self.blocks.pop();
                }
                let mut block = Map::new();
                block.insert("type".into(), "error".into());
                block.insert("message".into(), str_field("message").into());
                if let Some(r) = event.get("resumable") {
                    block.insert("resumable".into(), r.clone());
                }
                self.blocks.push(block);
            }
            _ => {}
        }
    }

    fn tool_mut(&mut self, id: &str) -> Option<&mut Map<String, Value>> {
        self.blocks.iter_mut().rev().find(|b| is(b, "tool") && b.get("tool_use_id").and_then(Value::as_str) == Some(id))
    }

    /// Marks tool blocks still running as done (or `status`) — used when a turn ends.
    pub fn close_running_tools(&mut self, status: &str) {
        for b in &mut self.blocks {
            if is(b, "tool") && b.get("status").and_then(Value::as_str) == Some("running") {
                b.insert("status".into(), status.into());
            }
        }
    }

    /// Appends a note/error block (e.g. "interrupted") without replacing an existing one.
    pub fn push_error(&mut self, message: &str, resumable: bool) {
        self.blocks.push(obj(json!({ "type": "error", "message": message, "resumable": resumable })));
    }

    /// The message as stored and served: `{role, content, blocks, ts}`.
    pub fn to_body(&self) -> Value {
        let content = self
            .blocks
            .iter()
            .filter(|b| is(b, "text"))
            .filter_map(|b| b.get("content").and_then(Value::as_str))
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n");
        json!({ "role": "assistant", "content": content, "blocks": self.blocks, "ts": self.ts })
    }
}

fn is(block: &Map<String, Value>, kind: &str) -> bool {
    block.get("type").and_then(Value::as_str) == Some(kind)
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// A tool output ready to send: inline text plus the truncation facts, and whether the full
/// text must be stored separately.
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

    fn ev(v: Value) -> Map<String, Value> {
        obj(v)
    }

    #[test]
    fn text_deltas_of_one_item_join_and_a_new_item_starts_a_block() {
        let mut m = LiveMessage::new(1);
        m.apply(&ev(json!({"type":"text","content":"Hel","item_id":"a"})));
        m.apply(&ev(json!({"type":"text","content":"lo","item_id":"a"})));
        m.apply(&ev(json!({"type":"tool_start","tool_use_id":"t1","tool":"Bash","input":"ls"})));
        m.apply(&ev(json!({"type":"text","content":"Done","item_id":"b"})));
        let body = m.to_body();
        assert_eq!(body["content"], "Hello\n\nDone");
        assert_eq!(body["blocks"].as_array().map(Vec::len), Some(3));
    }

    #[test]
    fn text_final_repairs_dropped_deltas() {
        let mut m = LiveMessage::new(1);
        m.apply(&ev(json!({"type":"text","content":"Hel","item_id":"a"})));
        m.apply(&ev(json!({"type":"text_final","content":"Hello there","item_id":"a"})));
        assert_eq!(m.to_body()["content"], "Hello there");
    }

    #[test]
    fn tools_run_output_and_end() {
        let mut m = LiveMessage::new(1);
        m.apply(&ev(json!({"type":"tool_start","tool_use_id":"t1","tool":"Bash","input":"ls"})));
        m.apply(&ev(json!({"type":"tool_output","tool_use_id":"t1","content":"a\n","append":true})));
        m.apply(&ev(json!({"type":"tool_output","tool_use_id":"t1","content":"b\n","append":true})));
        m.apply(&ev(json!({"type":"tool_end","tool_use_id":"t1","is_error":true})));
        let b = &m.blocks()[0];
        assert_eq!(b["output"], "a\nb\n");
        assert_eq!(b["status"], "error");
        m.apply(&ev(json!({"type":"tool_start","tool_use_id":"t2","tool":"Read","input":"x"})));
        m.close_running_tools("done");
        assert_eq!(m.blocks()[1]["status"], "done");
        // A step cut short by a steer's interrupt is stopped, not failed.
        m.apply(&ev(json!({"type":"tool_start","tool_use_id":"t3","tool":"Bash","input":"sleep 9"})));
        m.apply(&ev(json!({"type":"tool_end","tool_use_id":"t3","is_error":true,"interrupted":true})));
        assert_eq!(m.blocks()[2]["status"], "stopped");
    }

    #[test]
    fn answers_land_on_their_question_and_errors_replace_a_trailing_error() {
        let mut m = LiveMessage::new(1);
        m.apply(&ev(json!({"type":"question","question_id":"q1","questions":[{"question":"Which?"}]})));
        m.apply(&ev(json!({"type":"answers_applied","question_id":"q1","answers":{"Which?":"Blue"}})));
        assert_eq!(m.blocks()[0]["answers"]["Which?"], "Blue");
        m.apply(&ev(json!({"type":"error","message":"one"})));
        m.apply(&ev(json!({"type":"error","message":"two"})));
        assert_eq!(m.blocks().len(), 2);
        assert_eq!(m.blocks()[1]["message"], "two");
    }

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
}
