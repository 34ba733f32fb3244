//! Generates `frontend/src/api/protocol.gen.ts` from the protocol types and fails when the
//! checked-in file differs. To regenerate after changing a type:
//!
//! ```sh
//! MOBIUS_WRITE_PROTOCOL=1 cargo test -p mobius --lib protocol::typescript
//! ```

use ts_rs::{Config, TS};

use super::*;

/// The generated file, relative to the checkout.
const GENERATED: &str = "frontend/src/api/protocol.gen.ts";

fn render() -> String {
    let cfg = Config::new().with_large_int("number");
    let declarations = [
        ChatId::decl(&cfg),
        RunId::decl(&cfg),
        Cid::decl(&cfg),
        QuestionId::decl(&cfg),
        ProviderKind::decl(&cfg),
        ApprovalPolicy::decl(&cfg),
        Role::decl(&cfg),
        Message::decl(&cfg),
        Block::decl(&cfg),
        ToolStatus::decl(&cfg),
        ErrorFix::decl(&cfg),
        HandoffCard::decl(&cfg),
        HandoffReason::decl(&cfg),
        HandoffSource::decl(&cfg),
        ToolBlock::decl(&cfg),
        FileChange::decl(&cfg),
        FileDiff::decl(&cfg),
        WebSource::decl(&cfg),
        PlanCard::decl(&cfg),
        PlanStep::decl(&cfg),
        PlanCounts::decl(&cfg),
        PlanStatus::decl(&cfg),
        GoalPin::decl(&cfg),
        Attachment::decl(&cfg),
        QuestionCard::decl(&cfg),
        Card::decl(&cfg),
        QuestionItem::decl(&cfg),
        QuestionOption::decl(&cfg),
        Choice::decl(&cfg),
        ApprovalAnswers::decl(&cfg),
        SecretAnswers::decl(&cfg),
        SecretStatus::decl(&cfg),
        Decision::decl(&cfg),
        Answers::decl(&cfg),
        RunStatus::decl(&cfg),
        TokenCounts::decl(&cfg),
        RunUsage::decl(&cfg),
        PlanWindow::decl(&cfg),
        PauseKind::decl(&cfg),
        Pause::decl(&cfg),
        Waiting::decl(&cfg),
        ChatEvent::decl(&cfg),
        StreamControl::decl(&cfg),
        StreamEvent::decl(&cfg),
        NotificationKind::decl(&cfg),
        NotificationAction::decl(&cfg),
        PushPayload::decl(&cfg),
        NotificationItem::decl(&cfg),
        SystemEvent::decl(&cfg),
        ChatDetail::decl(&cfg),
        AnswerTurn::decl(&cfg),
        SendResult::decl(&cfg),
        RegenerateResult::decl(&cfg),
        StopResult::decl(&cfg),
        crate::db::chat_list::ChatSummary::decl(&cfg),
        crate::agent::sandbox::SandboxState::decl(&cfg),
        crate::agent::sandbox::Signals::decl(&cfg),
        crate::chats::context::ContextText::decl(&cfg),
        crate::chats::context::ContextConnector::decl(&cfg),
        crate::chats::context::AgentContext::decl(&cfg),
    ];
    let mut out = String::from(
        "// Generated from backend/server/src/protocol by `MOBIUS_WRITE_PROTOCOL=1 cargo test -p mobius --lib \
         protocol::typescript`.\n// Do not edit: change the Rust types and regenerate.\n\n",
    );
    // Type aliases in Rust (ts-rs declares types, not aliases).
    out.push_str("/** Question text → the chosen label (a list for multi-select questions). */\n");
    out.push_str("export type Choices = Record<string, Choice>;\n");
    out.push_str("\n/** A journal event with its position: what the stream sends and the journal stores. */\n");
    out.push_str("export type JournalEntry = { seq: number } & ChatEvent;\n");
    for declaration in declarations {
        out.push('\n');
        out.push_str("export ");
        out.push_str(&one_line_docs(declaration.trim()));
        out.push('\n');
    }
    out
}

/// ts-rs writes each field's doc comment on lines of its own; keep them inline.
fn one_line_docs(declaration: &str) -> String {
    let mut out = String::with_capacity(declaration.len());
    let mut rest = declaration;
    while let Some(start) = rest.find("\n/**\n") {
        out.push_str(rest[..start].trim_end());
        let Some(end) = rest[start..].find(" */\n") else { break };
        let body = &rest[start + 5..start + end];
        let text: Vec<&str> =
            body.lines().map(|l| l.trim().trim_start_matches('*').trim()).filter(|l| !l.is_empty()).collect();
        out.push_str(" /** ");
        out.push_str(&text.join(" "));
        out.push_str(" */ ");
        rest = &rest[start + end + 4..];
    }
    out.push_str(rest);
    out
}

#[test]
fn the_generated_typescript_is_current() {
    let path = crate::config::checkout_root().join(GENERATED);
    let want = render();
    if std::env::var_os("MOBIUS_WRITE_PROTOCOL").is_some() {
        std::fs::write(&path, &want).expect("write the generated file");
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{GENERATED} is stale: run `MOBIUS_WRITE_PROTOCOL=1 cargo test -p mobius --lib protocol::typescript` and commit it"
    );
}
