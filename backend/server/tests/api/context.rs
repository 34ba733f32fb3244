//! The agent-context inspector (`GET /api/chats/{id}/context`, issue 37 item 5): the owner
//! sees what the agent is given for a chat — prompt, memory, model, sandbox — masked of
//! credentials; nobody else sees it.

use mobius::auth::Scope;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, assert_error};

/// A planted credential in Anthropic's key format.
const PLANTED_KEY: &str = "sk-ant-api03-PLANTEDplantedPLANTED0123456789";

#[tokio::test]
async fn the_owner_sees_the_chats_prompt_memory_and_model_with_secrets_masked() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let memory = app.data_dir().join("memory");
    std::fs::create_dir_all(&memory).expect("memory dir");
    std::fs::write(memory.join("owner.md"), format!("Likes green tea.\nMy key: {PLANTED_KEY}\n")).expect("memory");
    app.chat(&token, "c1").await;
    let r = app.patch_json("/api/chats/c1", json!({ "model": "claude-opus-4-1", "effort": "high" }), &token).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap_or_default());

    let r = app.get("/api/chats/c1/context", Some(&token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let context: Value = r.json().await.expect("json");
    assert_eq!(context["chat_id"], "c1");
    assert_eq!(context["model"], "claude-opus-4-1");
    assert_eq!(context["effort"], "high");
    // No turn yet: the prompt the first turn would pin, with the memory block in it.
    assert_eq!(context["pinned"], false);
    let prompt = context["system_prompt"]["text"].as_str().expect("prompt");
    assert!(prompt.contains("Likes green tea."), "{prompt}");
    let memory = context["memory"]["text"].as_str().expect("memory block");
    assert!(memory.starts_with("## Memory") && memory.contains("Likes green tea."), "{memory}");
    let body = context.to_string();
    assert!(!body.contains("PLANTEDplanted"), "the planted key is shown: {body}");
    assert!(memory.contains("My key: [redacted]"), "{memory}");
    assert_eq!(context["app_context"], Value::Null);
    assert_eq!(context["connectors"], json!([]));
    assert!(context["sandbox"]["mode"].is_string(), "{context}");
    let read_write: Vec<&str> =
        context["read_write"].as_array().expect("grants").iter().filter_map(Value::as_str).collect();
    assert!(read_write.contains(&"workspace/c1") && read_write.contains(&"memory"), "{read_write:?}");
    assert!(
        read_write.iter().all(|g| !g.starts_with('/')),
        "grants are relative to the data directory: {read_write:?}"
    );

    let r = app.get("/api/chats/nope/context", Some(&token)).await;
    assert_error(r, StatusCode::NOT_FOUND, "chat_not_found").await;
}

#[tokio::test]
async fn agents_apps_and_embedded_chats_cannot_inspect_a_context() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    app.chat(&token, "c1").await;
    app.chat(&token, "c2").await;
    // The agent's own chat: its token reaches only its table.
    let agent = app.run_token(&token, Scope::Agent, "c1");
    let r = app.get("/api/chats/c1/context", Some(&agent)).await;
    assert_error(r, StatusCode::FORBIDDEN, "agent_not_allowed").await;
    // An app's token, and an embedded chat's token for another chat.
    let (app_id, nonce) = app.register_app("notes").await;
    let r = app.get("/api/chats/c1/context", Some(&app.app_token(app_id, &nonce))).await;
    assert_error(r, StatusCode::FORBIDDEN, "wrong_scope").await;
    let embed = app.run_token(&token, Scope::ChatEmbed, "c2");
    let r = app.get("/api/chats/c1/context", Some(&embed)).await;
    assert_error(r, StatusCode::FORBIDDEN, "wrong_scope").await;
    let r = app.get("/api/chats/c1/context", None).await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}

/// An installed system app's `system_prompt` joins the prompt of chats that start while it is
/// installed, and its `skills` the skills index; both leave with the app (issue 34).
#[tokio::test]
async fn a_system_apps_prompt_and_skills_join_new_chats_and_leave_with_the_app() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let dir = app.data_dir().join("apps/helper");
    std::fs::create_dir_all(&dir).expect("app dir");
    std::fs::write(
        dir.join("mobius.json"),
        r#"{"id":"helper","name":"Helper","version":"1.0.0","description":"Helps.","entry":"index.jsx",
            "system_app":true,"system_prompt":"prompt.md","skills":["groceries.md"],
            "source_files":["prompt.md","groceries.md"]}"#,
    )
    .expect("manifest");
    std::fs::write(dir.join("index.jsx"), "export default function App() { return <p>hi</p>; }\n").expect("index");
    std::fs::write(dir.join("prompt.md"), "Always call the owner Captain.\n").expect("prompt");
    std::fs::write(
        dir.join("groceries.md"),
        "---\ndescription: Keep the grocery list in the Helper app.\n---\nUse it.\n",
    )
    .expect("skill");
    let r = app.post("/api/apps/apply", json!({ "slug": "helper" }), Some(&token)).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap_or_default());
    let applied: Value = r.json().await.expect("json");
    let id = applied["app"]["id"].as_i64().expect("id");
    let warnings = applied["warnings"].to_string();
    assert!(!warnings.contains("system_") && !warnings.contains("skills"), "{warnings}");
    // An edit not applied changes nothing: what counts is the installed version.
    std::fs::write(dir.join("prompt.md"), "Not applied.\n").expect("edit");

    let prompt_of = |chat: &'static str| {
        let (app, token) = (&app, &token);
        async move {
            app.chat(token, chat).await;
            let context: Value =
                app.get(&format!("/api/chats/{chat}/context"), Some(token)).await.json().await.expect("json");
            context["system_prompt"]["text"].as_str().expect("prompt").to_owned()
        }
    };
    let prompt = prompt_of("c1").await;
    assert!(
        prompt.contains(
            "<!-- From the system app \"Helper\" (apps/helper/prompt.md) -->\nAlways call the owner Captain."
        ),
        "{prompt}"
    );
    assert!(!prompt.contains("Not applied."), "{prompt}");
    assert!(prompt.contains("## Skills of installed apps") && prompt.contains("Keep the grocery list"), "{prompt}");
    let skills: Value = app.get("/api/skills", Some(&token)).await.json().await.expect("skills");
    let mine = skills["skills"].as_array().expect("list").iter().find(|s| s["origin"] == "app").cloned();
    let mine = mine.expect("the app's skill is in the index");
    assert_eq!(mine["name"], "groceries");
    assert!(mine["path"].as_str().is_some_and(|p| p.ends_with("apps/helper/groceries.md")), "{mine}");

    // Removed: new chats and the index no longer have them.
    let r = app.client.delete(app.url(&format!("/api/apps/{id}"))).bearer_auth(&token).send().await.expect("delete");
    assert!(r.status().is_success(), "{}", r.status());
    let prompt = prompt_of("c2").await;
    assert!(!prompt.contains("Captain") && !prompt.contains("grocery"), "{prompt}");
    let skills: Value = app.get("/api/skills", Some(&token)).await.json().await.expect("skills");
    assert!(!skills.to_string().contains("groceries"), "{skills}");
}
