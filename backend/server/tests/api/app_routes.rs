//! Routes the original's apps and jobs call: `/api/auth/providers/models` and the app-scoped
//! activity log (`/api/admin/activity`, `/api/admin/activity/emit`).

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, assert_error};

#[tokio::test]
async fn provider_models_answer_the_owner_and_apps_in_the_originals_shape() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let (_, app_token) = app.register_app("models").await;
    for who in [&token, &app_token] {
        let r = app.get("/api/auth/providers/models", Some(who)).await;
        assert_eq!(r.status(), StatusCode::OK);
        let body: Value = r.json().await.expect("json");
        let claude = body["claude"].as_array().expect("claude list");
        assert!(claude.iter().any(|m| m["id"] == "opus" && m["name"] == "Claude Opus"), "{body}");
        assert!(
            claude
                .iter()
                .all(|m| m.as_object().is_some_and(|o| o.keys().all(|k| ["id", "name", "tier"].contains(&k.as_str()))))
        );
        assert!(body["codex"].as_array().is_some_and(|l| !l.is_empty()), "{body}");
    }
    assert_error(app.get("/api/auth/providers/models", None).await, StatusCode::UNAUTHORIZED, "missing_token").await;
}

async fn emit(app: &TestApp, token: &str, body: Value) -> reqwest::Response {
    app.post("/api/admin/activity/emit", body, Some(token)).await
}

async fn entries(app: &TestApp, token: &str, query: &str) -> Vec<Value> {
    let r = app.get(&format!("/api/admin/activity{query}"), Some(token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let body: Value = r.json().await.expect("json");
    body["entries"].as_array().expect("entries").clone()
}

#[tokio::test]
async fn an_app_emits_only_into_its_own_activity_log_and_the_owner_reads_it() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let (a, a_token) = app.register_app("jobs-a").await;
    let (b, _) = app.register_app("jobs-b").await;

    // The original's scheduled-job report, from app A's token (its app_id may be named or left out).
    let outcome = json!({ "ev": "cron_outcome", "app_id": a, "job": "daily.sh", "exit_code": 3, "duration_ms": 1250 });
    let r = emit(&app, &a_token, outcome).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let r = emit(&app, &a_token, json!({ "note": "hello" })).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    // App A's token on app B's log: refused, nothing stored.
    assert_error(emit(&app, &a_token, json!({ "ev": "x", "app_id": b })).await, StatusCode::FORBIDDEN, "forbidden")
        .await;
    assert!(entries(&app, &token, &format!("?app_id={b}")).await.is_empty());
    // Only the owner reads the log.
    assert_error(app.get("/api/admin/activity", Some(&a_token)).await, StatusCode::FORBIDDEN, "wrong_scope").await;

    let list = entries(&app, &token, &format!("?app_id={a}")).await;
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["ev"], "event");
    assert_eq!(list[0]["data"], json!({ "note": "hello" }));
    assert_eq!(list[1]["ev"], "cron_outcome");
    assert_eq!(list[1]["app_id"], a);
    assert_eq!(list[1]["data"]["exit_code"], 3);
    assert_eq!(list[1]["data"]["duration_ms"], 1250);
    assert!(list[1]["created_at"].as_str().is_some_and(|t| t.ends_with('Z')));

    // The owner emits into any live app's log, or the owner-level one; not a missing app's.
    assert_eq!(emit(&app, &token, json!({ "ev": "owner.note", "app_id": b })).await.status(), StatusCode::CREATED);
    assert_eq!(emit(&app, &token, json!({ "ev": "owner.note" })).await.status(), StatusCode::CREATED);
    assert_error(emit(&app, &token, json!({ "app_id": 999_999 })).await, StatusCode::NOT_FOUND, "app_not_found").await;
    assert_eq!(entries(&app, &token, &format!("?app_id={b}")).await.len(), 1);
    let all = entries(&app, &token, "").await;
    assert_eq!(all.len(), 4);
    assert!(all[0]["app_id"].is_null());
    // Pages, newest first.
    let r = app.get("/api/admin/activity?limit=3", Some(&token)).await;
    let page: Value = r.json().await.expect("json");
    assert_eq!(page["entries"].as_array().map(Vec::len), Some(3));
    let next = page["next_before"].as_i64().expect("next_before");
    let rest = entries(&app, &token, &format!("?limit=3&before={next}")).await;
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0]["data"]["job"], "daily.sh");
}

#[tokio::test]
async fn malformed_and_oversized_activity_is_refused_and_each_log_keeps_its_newest_entries() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let (a, a_token) = app.register_app("noisy").await;

    for bad in [
        json!([1, 2]),
        json!("text"),
        json!({ "exit_code": "zero" }),
        json!({ "duration_ms": -5 }),
        json!({ "ev": "has space" }),
        json!({ "app_id": "a" }),
    ] {
        assert_error(emit(&app, &a_token, bad).await, StatusCode::BAD_REQUEST, "invalid_activity").await;
    }
    let r = app
        .client
        .post(app.url("/api/admin/activity/emit"))
        .bearer_auth(&a_token)
        .header("content-type", "application/json")
        .body("{\"ev\": ")
        .send()
        .await
        .expect("send");
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_json").await;
    let huge = json!({ "ev": "big", "output": "x".repeat(9 * 1024) });
    assert_error(emit(&app, &a_token, huge).await, StatusCode::PAYLOAD_TOO_LARGE, "body_too_large").await;
    assert!(entries(&app, &token, "").await.is_empty());

    // 500 kept per log: the 501st append trims the oldest.
    for i in 0..501 {
        let r = emit(&app, &a_token, json!({ "ev": "tick", "n": i })).await;
        assert_eq!(r.status(), StatusCode::CREATED);
    }
    let kept = entries(&app, &token, &format!("?app_id={a}&limit=500")).await;
    assert_eq!(kept.len(), 500);
    assert_eq!(kept[0]["data"]["n"], 500);
    assert_eq!(kept[499]["data"]["n"], 1);
    let older = entries(&app, &token, &format!("?app_id={a}&before={}", kept[499]["id"])).await;
    assert!(older.is_empty(), "{older:?}");
}

async fn import(app: &TestApp, token: &str, id: &str, title: &str, messages: Value) {
    let r = app.post("/api/chats", json!({ "id": id, "title": title, "messages": messages }), Some(token)).await;
    assert_eq!(r.status(), StatusCode::CREATED, "{}", r.text().await.unwrap_or_default());
}

#[tokio::test]
async fn chat_logs_follow_the_apps_tier_and_leave_out_tools_attachments_and_secrets() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let (_, none_token) = app.register_app("no-logs").await;
    let (_, summary_token) = app.register_app_with("digest", r#"{"chat_log_access":"summary"}"#).await;
    let (_, deleted_token) = app.register_app_with("archive", r#"{"chat_log_access":"summary_with_deleted"}"#).await;
    import(
        &app,
        &token,
        "c-trip",
        "Trip plans",
        json!([
            { "role": "user", "ts": 1_000, "content": "Plan Lisbon. My key is sk-ant-api03-abcdefghijklmnopqrst" },
            { "role": "user", "ts": 1_500, "content": "agent-only note", "hidden": true },
            { "role": "assistant", "ts": 2_000, "blocks": [
                { "type": "text", "content": "Day one: Alfama." },
                { "type": "tool", "tool_use_id": "t1", "tool": "Bash", "input": { "command": "cat ~/.ssh/id_rsa" },
                  "output": "PRIVATE KEY zanzibar", "status": "done" },
                { "type": "thinking", "content": "pondering quetzal" },
            ]},
        ]),
    )
    .await;
    import(&app, &token, "c-gone", "Old draft", json!([{ "role": "user", "ts": 3_000, "content": "bin me" }])).await;
    assert_eq!(app.delete_with("/api/chats/c-gone", &token).await.status(), StatusCode::NO_CONTENT);

    // `none` (the default): refused on both routes.
    for path in ["/api/chat-logs", "/api/chat-logs/c-trip"] {
        assert_error(app.get(path, Some(&none_token)).await, StatusCode::FORBIDDEN, "chat_log_access_denied").await;
    }

    // `summary`: live chats only, their prose only.
    let list: Value = app.get("/api/chat-logs", Some(&summary_token)).await.json().await.expect("json");
    let ids: Vec<&str> = list["chats"].as_array().expect("chats").iter().filter_map(|c| c["id"].as_str()).collect();
    assert_eq!(ids, ["c-trip"], "{list}");
    assert_eq!(list["chats"][0]["title"], "Trip plans");
    let r = app.get("/api/chat-logs/c-trip", Some(&summary_token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let log: Value = r.json().await.expect("json");
    let messages = log["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 2, "{log}");
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(messages[0]["text"], "Plan Lisbon. My key is [redacted]");
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["text"], "Day one: Alfama.");
    let whole = log.to_string();
    for hidden in ["sk-ant", "agent-only", "zanzibar", "id_rsa", "quetzal", "blocks", "attachments"] {
        assert!(!whole.contains(hidden), "{hidden} leaked: {whole}");
    }
    assert_error(app.get("/api/chat-logs/c-gone", Some(&summary_token)).await, StatusCode::NOT_FOUND, "chat_not_found")
        .await;

    // `summary_with_deleted`: the bin too, marked.
    let list: Value = app.get("/api/chat-logs", Some(&deleted_token)).await.json().await.expect("json");
    let gone =
        list["chats"].as_array().expect("chats").iter().find(|c| c["id"] == "c-gone").expect("deleted chat listed");
    assert!(gone["deleted_at"].as_str().is_some_and(|t| t.ends_with('Z')), "{gone}");
    let log: Value = app.get("/api/chat-logs/c-gone", Some(&deleted_token)).await.json().await.expect("json");
    assert_eq!(log["messages"][0]["text"], "bin me");
    assert_error(app.get("/api/chat-logs/nope", Some(&deleted_token)).await, StatusCode::NOT_FOUND, "chat_not_found")
        .await;
}
