//! Chat search (`GET /api/chats/search`): snippets, hostile queries, deleted and recovered
//! chats, cursor paging, app chats, and the back-fill of a database written before the index.

use std::borrow::Cow;
use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::Connection;

use crate::helpers::{PASSWORD, TestApp, USERNAME, assert_error, eventually, token_of};

async fn search(app: &TestApp, token: &str, query: &[(&str, &str)]) -> Value {
    let r = app.client.get(app.url("/api/chats/search")).query(query).bearer_auth(token).send().await.expect("search");
    assert_eq!(r.status(), StatusCode::OK, "{query:?}");
    r.json().await.expect("json")
}

async fn hits(app: &TestApp, token: &str, q: &str) -> Vec<Value> {
    search(app, token, &[("q", q)]).await["hits"].as_array().expect("hits").clone()
}

async fn import(app: &TestApp, token: &str, id: &str, title: Option<&str>, messages: Value) {
    let r = app.post("/api/chats", json!({ "id": id, "title": title, "messages": messages }), Some(token)).await;
    assert_eq!(r.status(), StatusCode::CREATED, "{}", r.text().await.unwrap_or_default());
    indexed(app, token).await;
}

/// Waits until no imported message waits for the index (an import's are indexed after it answers).
async fn indexed(app: &TestApp, token: &str) {
    eventually("imported messages are indexed", || async {
        (search(app, token, &[("q", "")]).await["indexing"] == json!(false)).then_some(())
    })
    .await
}

fn assistant(text: &str, ts: i64) -> Value {
    json!({ "role": "assistant", "ts": ts, "blocks": [
        { "type": "text", "content": text },
        { "type": "tool", "tool_use_id": "t1", "tool": "Bash", "input": { "command": "echo zanzibar" },
          "output": "zanzibar", "status": "done" },
        { "type": "thinking", "content": "pondering quetzal" },
    ]})
}

#[tokio::test]
async fn snippets_mark_matches_and_fold_case_and_diacritics() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    import(
        &app,
        &token,
        "trip",
        Some("Crème brûlée for the <b>party</b>"),
        json!([
            { "role": "user", "content": "Where can I buy a Résumé template? <script>alert(1)</script>", "ts": 1000 },
            assistant("Try the stationery shop near the CAFÉ on Main Street.", 2000),
            { "role": "user", "content": "secret hidden answer", "hidden": true, "ts": 3000 },
        ]),
    )
    .await;

    let found = hits(&app, &token, "resume").await;
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["chat_id"], "trip");
    assert_eq!(found[0]["message_idx"], 0);
    assert_eq!(found[0]["ts"], 1000);
    assert_eq!(found[0]["title"], "Crème brûlée for the <b>party</b>");
    let snippet = found[0]["snippet"].as_str().expect("snippet");
    assert!(snippet.contains("\u{2}Résumé\u{3}"), "{snippet}");
    assert!(snippet.contains("<script>alert(1)</script>"), "stored as text, unescaped: {snippet}");

    // Case and diacritics fold both ways; the agent's text is found, its tool calls are not.
    let cafe = hits(&app, &token, "cafe").await;
    assert_eq!(cafe.len(), 1);
    assert_eq!(cafe[0]["message_idx"], 1);
    assert!(cafe[0]["snippet"].as_str().expect("snippet").contains("\u{2}CAFÉ\u{3}"));
    assert!(hits(&app, &token, "zanzibar ").await.is_empty(), "tool input/output is not indexed");
    assert!(hits(&app, &token, "quetzal ").await.is_empty(), "thinking is not indexed");
    assert!(hits(&app, &token, "secret ").await.is_empty(), "hidden messages are not indexed");

    // Titles: a title hit has no message index.
    let title = hits(&app, &token, "creme brulee").await;
    assert_eq!(title.len(), 1, "{title:?}");
    assert_eq!(title[0]["message_idx"], Value::Null);
    assert!(title[0]["snippet"].as_str().expect("snippet").contains("\u{2}Crème\u{3} \u{2}brûlée\u{3}"));

    // Prefix: the last word as typed; a finished word (trailing space) is whole.
    assert_eq!(hits(&app, &token, "statio").await.len(), 1);
    assert!(hits(&app, &token, "statio ").await.is_empty());
    assert_eq!(hits(&app, &token, "statio* shop ").await.len(), 1);

    // Phrases: words in order, next to each other.
    assert_eq!(hits(&app, &token, "\"main street\"").await.len(), 1);
    assert!(hits(&app, &token, "\"street main\"").await.is_empty());
    // Every word must occur.
    assert!(hits(&app, &token, "resume cafe").await.is_empty());

    // A rename is indexed in the same commit; the old title is gone.
    let r = app
        .client
        .patch(app.url("/api/chats/trip"))
        .bearer_auth(&token)
        .json(&json!({ "title": "Vacation logistics" }))
        .send()
        .await
        .expect("rename");
    assert!(r.status().is_success());
    assert!(hits(&app, &token, "brulee").await.is_empty());
    let renamed = hits(&app, &token, "logistics").await;
    assert_eq!(renamed.len(), 1);
    assert_eq!(renamed[0]["title"], "Vacation logistics");
}

#[tokio::test]
async fn whatever_the_owner_types_is_text() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    import(
        &app,
        &token,
        "ops",
        Some("Ops"),
        json!([
            { "role": "user", "content": "NEAR the AND gate, col: x - y * z (draft) \"quoted\" ^caret", "ts": 1000 },
        ]),
    )
    .await;
    let hostile = [
        "\"",
        "\"\"",
        "\"unbalanced",
        "*",
        "**",
        "a*b*",
        "NEAR(",
        "NEAR(gate",
        "NEAR(a b, 2)",
        "-",
        "-gate",
        "AND",
        "OR",
        "NOT",
        "gate AND",
        "OR gate",
        "(",
        ")",
        "((gate",
        "gate)",
        "col:x",
        "text:gate",
        "^",
        "^gate",
        "{gate}",
        "'",
        "\\",
        "%",
        "_",
        "\u{0}",
        "\u{2}gate\u{3}",
        " ",
        "\t\n",
        "",
        "🙂",
        "gate\u{301}",
    ];
    for q in hostile {
        let body = search(&app, &token, &[("q", q)]).await;
        assert!(body["hits"].is_array(), "{q:?}: {body}");
    }
    // Operator words are plain words: they match where the text has them.
    assert_eq!(hits(&app, &token, "NEAR(").await.len(), 1);
    assert_eq!(hits(&app, &token, "AND").await.len(), 1);
    assert_eq!(hits(&app, &token, "(draft").await.len(), 1);
    assert_eq!(hits(&app, &token, "\"quoted").await.len(), 1);
    assert!(hits(&app, &token, "   ").await.is_empty());

    // Bounds: the query's length, the limit and the cursor.
    let long = "a".repeat(257);
    let r = app.client.get(app.url("/api/chats/search")).query(&[("q", &long)]).bearer_auth(&token).send().await;
    assert_error(r.expect("long"), StatusCode::BAD_REQUEST, "query_too_long").await;
    let at_bound = "a ".repeat(128);
    assert!(search(&app, &token, &[("q", &at_bound)]).await["hits"].is_array());
    for (key, value, code) in [
        ("limit", "zero", "invalid_limit"),
        ("limit", "0", "invalid_limit"),
        ("limit", "-3", "invalid_limit"),
        ("cursor", "abc", "invalid_cursor"),
        ("cursor", "-1", "invalid_cursor"),
    ] {
        let r = app
            .client
            .get(app.url("/api/chats/search"))
            .query(&[("q", "gate"), (key, value)])
            .bearer_auth(&token)
            .send()
            .await;
        assert_error(r.expect("bad"), StatusCode::BAD_REQUEST, code).await;
    }
    let r = app.get("/api/chats/search?q=a&q=b", Some(&token)).await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_query").await;
    let r = app.get("/api/chats/search?q=%FF%FE", Some(&token)).await;
    assert!(r.status() == StatusCode::OK || r.status() == StatusCode::BAD_REQUEST, "{}", r.status());
    // Owner only.
    let r = app.get("/api/chats/search?q=gate", None).await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn deleted_chats_drop_out_and_recovered_ones_come_back() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    import(&app, &token, "keep", None, json!([{ "role": "user", "content": "walrus keep", "ts": 1000 }])).await;
    import(
        &app,
        &token,
        "gone",
        Some("Walrus notes"),
        json!([{ "role": "user", "content": "walrus gone", "ts": 2000 }]),
    )
    .await;
    let chats =
        |found: Vec<Value>| found.iter().map(|h| h["chat_id"].as_str().unwrap_or("").to_owned()).collect::<Vec<_>>();
    assert_eq!(chats(hits(&app, &token, "walrus").await), ["gone", "gone", "keep"]);

    let r = app.client.delete(app.url("/api/chats/gone")).bearer_auth(&token).send().await.expect("delete");
    assert!(r.status().is_success());
    assert_eq!(chats(hits(&app, &token, "walrus").await), ["keep"]);

    let r = app.post("/api/chats/gone/recover", json!({}), Some(&token)).await;
    assert!(r.status().is_success());
    assert_eq!(chats(hits(&app, &token, "walrus").await), ["gone", "gone", "keep"]);

    // An app's chat the owner does not see in the drawer is not found either.
    let (app_id, _) = app.register_app("finder").await;
    let mut conn =
        sqlx::SqliteConnection::connect(&format!("sqlite://{}", app.data_dir().join("db/mobius.sqlite3").display()))
            .await
            .expect("db");
    sqlx::query("UPDATE chats SET app_id = ?, owner_visible = 0 WHERE id = 'keep'")
        .bind(app_id)
        .execute(&mut conn)
        .await
        .expect("hide");
    conn.close().await.expect("close");
    assert_eq!(chats(hits(&app, &token, "walrus").await), ["gone", "gone"]);
}

#[tokio::test]
async fn pages_follow_a_stable_cursor_newest_first() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let messages: Vec<Value> =
        (0..60).map(|i| json!({ "role": "user", "content": format!("pelican number {i}"), "ts": 1000 + i })).collect();
    import(&app, &token, "birds", None, Value::Array(messages)).await;

    let first = search(&app, &token, &[("q", "pelican")]).await;
    assert_eq!(first["hits"].as_array().expect("hits").len(), 20, "default limit");
    assert_eq!(first["hits"][0]["message_idx"], 59, "newest first");

    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut query = vec![("q", "pelican"), ("limit", "25")];
        if let Some(c) = cursor.as_deref() {
            query.push(("cursor", c));
        }
        let page = search(&app, &token, &query).await;
        let page_hits = page["hits"].as_array().expect("hits");
        assert!(page_hits.len() <= 25);
        seen.extend(page_hits.iter().map(|h| h["message_idx"].as_i64().expect("idx")));
        // A message written between pages does not shift the next one.
        if cursor.is_none() {
            let r = app
                .post(
                    "/api/chats",
                    json!({ "id": "late", "messages": [{ "role": "user", "content": "pelican late" }] }),
                    Some(&token),
                )
                .await;
            assert_eq!(r.status(), StatusCode::CREATED);
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen, (0..60).rev().collect::<Vec<i64>>(), "every hit once, in order");

    let capped = search(&app, &token, &[("q", "pelican"), ("limit", "500")]).await;
    assert_eq!(capped["hits"].as_array().expect("hits").len(), 50, "limit is capped");
}

#[tokio::test]
async fn a_database_written_before_the_index_is_back_filled() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let db_dir = dir.path().join("db");
    std::fs::create_dir_all(&db_dir).expect("db dir");
    let url = format!("sqlite://{}?mode=rwc", db_dir.join("mobius.sqlite3").display());
    let before_index = sqlx::migrate::Migrator {
        migrations: Cow::Owned(mobius::db::MIGRATOR.iter().filter(|m| m.version < 10).cloned().collect()),
        ..sqlx::migrate::Migrator::DEFAULT
    };
    let mut conn = sqlx::SqliteConnection::connect(&url).await.expect("create");
    before_index.run(&mut conn).await.expect("old migrations");
    sqlx::raw_sql(
        r#"INSERT INTO chats (id, title, created_at, updated_at, activity_at) VALUES
             ('old', 'Otter habitats', 1, 1, 1), ('plain', 'New chat', 2, 2, 2);
           INSERT INTO chat_messages (chat_id, idx, role, ts, body) VALUES
             ('old', 0, 'user', 10, '{"role":"user","content":"Tell me about river otters","ts":10}'),
             ('old', 1, 'assistant', 11, '{"role":"assistant","content":"","ts":11,"blocks":[{"type":"text","content":"Otters live"},{"type":"tool","tool_use_id":"x","tool":"Bash","input":{"command":"beaver"},"status":"done"},{"type":"text","content":"near rivers"}]}'),
             ('old', 2, 'user', 12, '{"role":"user","content":"hidden otter","hidden":true,"ts":12}'),
             ('plain', 0, 'user', 20, 'not json at all'),
             ('plain', 1, 'assistant', 21, '{"role":"assistant","blocks":["odd",7,{"type":"text","content":42}],"ts":21}');
           UPDATE chats SET message_count = 3 WHERE id = 'old';
           UPDATE chats SET message_count = 2 WHERE id = 'plain';"#,
    )
    .execute(&mut conn)
    .await
    .expect("old rows");
    conn.close().await.expect("close");

    let app = TestApp::spawn_in(dir, |_| {}).await;
    let r = app.post("/api/auth/setup", json!({ "username": USERNAME, "password": PASSWORD }), None).await;
    let token = token_of(r).await;
    let found = hits(&app, &token, "otter").await;
    let idx: Vec<Value> = found.iter().map(|h| h["message_idx"].clone()).collect();
    assert_eq!(idx, [json!(1), json!(0), Value::Null], "{found:?}");
    assert!(found[0]["snippet"].as_str().expect("snippet").contains("\u{3} live\nnear rivers"));
    assert!(hits(&app, &token, "beaver").await.is_empty(), "tool inputs are not back-filled");
    assert!(hits(&app, &token, "new chat").await.is_empty(), "default titles are not indexed");

    // New messages join the back-filled index.
    let r = app
        .post(
            "/api/chats",
            json!({ "id": "fresh", "messages": [{ "role": "user", "content": "otter again" }] }),
            Some(&token),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    indexed(&app, &token).await;
    assert_eq!(hits(&app, &token, "otter").await[0]["chat_id"], "fresh");
}

#[tokio::test]
async fn an_import_is_indexed_after_it_answers_and_a_restart_finishes_what_was_left() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let app = TestApp::spawn_in(dir, |_| {}).await;
    let token = app.setup_owner().await;
    let messages: Vec<Value> = (0..1200)
        .map(|i| json!({ "role": "user", "content": format!("heron sighting {i}"), "ts": 1000 + i }))
        .collect();
    import(&app, &token, "birds", Some("Heron log"), Value::Array(messages)).await;
    let page = search(&app, &token, &[("q", "heron"), ("limit", "50")]).await;
    assert_eq!(page["hits"][0]["message_idx"], 1199, "every imported message is found once indexed");
    assert_eq!(page["indexing"], json!(false));
    let dir = app.stop().await;

    // Messages an import stored but whose documents were never written (it committed just
    // before the server stopped) are indexed by the next start; a range that runs past the
    // transcript's end, a hidden message and a body that no longer reads are harmless. Until
    // then a note turn reads their words from the messages themselves.
    let path = dir.path().join("db/mobius.sqlite3");
    let url = format!("sqlite://{}", path.display());
    let mut conn = sqlx::SqliteConnection::connect(&url).await.expect("db");
    sqlx::raw_sql(
        r#"INSERT INTO chats (id, title, created_at, updated_at, activity_at, message_count) VALUES
             ('cut', 'New chat', 5, 5, 5, 4);
           INSERT INTO chat_messages (chat_id, idx, role, ts, body) VALUES
             ('cut', 0, 'user', 10, '{"role":"user","content":"ibis left waiting","ts":10}'),
             ('cut', 1, 'user', 11, '{"role":"user","content":"ibis hidden","hidden":true,"ts":11}'),
             ('cut', 2, 'user', 12, 'not a message'),
             ('cut', 3, 'assistant', 13, '{"role":"assistant","ts":13,"blocks":[{"type":"text","content":"an ibis reply"}]}');
           INSERT INTO chat_search_backlog (chat_id, next_idx, end_idx) VALUES ('cut', 0, 9);"#,
    )
    .execute(&mut conn)
    .await
    .expect("waiting rows");
    conn.close().await.expect("close");
    let pool = sqlx::SqlitePool::connect(&url).await.expect("pool");
    let lines = mobius::db::notes::transcript_since(&pool, "cut", 0, 10).await.expect("transcript");
    let words: Vec<(i64, &str)> = lines.iter().map(|l| (l.idx, l.text.as_str())).collect();
    assert_eq!(words, [(0, "ibis left waiting"), (3, "an ibis reply")]);
    let lines = mobius::db::notes::transcript_since(&pool, "cut", 1, 1).await.expect("transcript");
    assert_eq!(lines.iter().map(|l| l.idx).collect::<Vec<_>>(), [3]);
    pool.close().await;
    let app = TestApp::spawn_in(dir, |_| {}).await;
    let r = app.post("/api/auth/token", json!({ "username": USERNAME, "password": PASSWORD }), None).await;
    let token = token_of(r).await;
    indexed(&app, &token).await;
    let found = hits(&app, &token, "ibis").await;
    let found: Vec<&Value> = found.iter().map(|h| &h["message_idx"]).collect();
    assert_eq!(found, [&json!(3), &json!(0)], "newest document first");
    // The index agrees with its documents.
    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display())).await.expect("db");
    sqlx::query("INSERT INTO chat_search (chat_search, rank) VALUES ('integrity-check', 1)")
        .execute(&mut conn)
        .await
        .expect("the full-text index matches its documents");
    conn.close().await.expect("close");
}
