//! The drawer list in pages (`GET /api/chats?limit=&cursor=`): the drawer's order, a cursor
//! that stays put while chats are created, pinned and deleted around it, the last page, the
//! bounded unpaginated list, one-row answers, and the WAL given back when the server is idle.

use std::collections::HashSet;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, assert_error, eventually};

async fn create(app: &TestApp, token: &str, id: &str) -> Value {
    let r = app
        .post(
            "/api/chats",
            json!({ "id": id, "title": format!("Chat {id}"), "messages": [{ "role": "user", "content": "hi", "ts": 1 }] }),
            Some(token),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    r.json().await.expect("summary")
}

async fn patch(app: &TestApp, token: &str, id: &str, body: Value) {
    let r = app
        .client
        .patch(app.url(&format!("/api/chats/{id}")))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .expect("patch");
    assert_eq!(r.status(), StatusCode::OK);
}

async fn delete(app: &TestApp, token: &str, id: &str) {
    let r = app.client.delete(app.url(&format!("/api/chats/{id}"))).bearer_auth(token).send().await.expect("delete");
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
}

/// Ids of the unpaginated list.
async fn all_ids(app: &TestApp, token: &str) -> Vec<String> {
    let r = app.get("/api/chats", Some(token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let list: Vec<Value> = r.json().await.expect("list");
    list.iter().map(|c| c["id"].as_str().expect("id").to_owned()).collect()
}

/// One page: its ids and the next cursor.
async fn page(app: &TestApp, token: &str, limit: i64, cursor: Option<&str>) -> (Vec<String>, Option<String>) {
    let mut path = format!("/api/chats?limit={limit}");
    if let Some(c) = cursor {
        path.push_str(&format!("&cursor={}", urlencode(c)));
    }
    let r = app.get(&path, Some(token)).await;
    assert_eq!(r.status(), StatusCode::OK, "{path}");
    let body: Value = r.json().await.expect("page");
    let ids =
        body["chats"].as_array().expect("chats").iter().map(|c| c["id"].as_str().expect("id").to_owned()).collect();
    (ids, body["next_cursor"].as_str().map(str::to_owned))
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Every page from the top, as one list of ids, and how many pages it took.
async fn walk(app: &TestApp, token: &str, limit: i64) -> (Vec<String>, usize) {
    let (mut ids, mut next) = page(app, token, limit, None).await;
    let mut pages = 1;
    while let Some(cursor) = next {
        let (more, after) = page(app, token, limit, Some(&cursor)).await;
        assert!(!more.is_empty(), "a page with a cursor after it is never empty");
        assert!(more.len() <= usize::try_from(limit).expect("limit"));
        ids.extend(more);
        next = after;
        pages += 1;
    }
    (ids, pages)
}

#[tokio::test]
async fn pages_follow_the_drawer_order_ties_included_and_end_with_a_null_cursor() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    for i in 0..23 {
        create(&app, &token, &format!("c{i:02}")).await;
    }
    for id in ["c05", "c17", "c11"] {
        patch(&app, &token, id, json!({ "pinned": true })).await;
    }
    let expected = all_ids(&app, &token).await;
    assert_eq!(expected.len(), 23);
    assert_eq!(&expected[..3], ["c05", "c17", "c11"], "pinned first, oldest pin first");
    for limit in [1, 5, 23, 50] {
        let (ids, pages) = walk(&app, &token, limit).await;
        assert_eq!(ids, expected, "limit {limit}");
        assert_eq!(pages, 23usize.div_ceil(usize::try_from(limit).expect("limit")).max(1), "limit {limit}");
    }
    // A page that ends exactly at the last chat says so.
    let (ids, next) = page(&app, &token, 23, None).await;
    assert_eq!((ids.len(), next), (23, None));
}

#[tokio::test]
async fn a_cursor_stays_put_while_chats_are_created_pinned_and_deleted_around_it() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    for i in 0..20 {
        create(&app, &token, &format!("k{i:02}")).await;
    }
    let before = all_ids(&app, &token).await;
    let (first, cursor) = page(&app, &token, 6, None).await;
    assert_eq!(first, before[..6]);
    let mut cursor = cursor.expect("more pages");

    // Around the cursor: three new chats (they go to the top), a chat already seen pinned, the
    // chat the cursor points at deleted, an unseen chat deleted and another unseen one pinned.
    for id in ["n1", "n2", "n3"] {
        create(&app, &token, id).await;
    }
    patch(&app, &token, &first[1], json!({ "pinned": true })).await;
    delete(&app, &token, &first[5]).await;
    let (gone, pinned_unseen) = (before[9].clone(), before[14].clone());
    delete(&app, &token, &gone).await;
    patch(&app, &token, &pinned_unseen, json!({ "pinned": true })).await;

    let mut seen: Vec<String> = first.clone();
    loop {
        let (ids, next) = page(&app, &token, 4, Some(&cursor)).await;
        seen.extend(ids);
        match next {
            Some(c) => cursor = c,
            None => break,
        }
    }
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "no chat twice: {seen:?}");
    for id in ["n1", "n2", "n3"] {
        assert!(!seen.contains(&id.to_owned()), "a chat created above the cursor is not on later pages");
    }
    assert!(!seen.contains(&gone), "a deleted chat is not listed");
    // Every other chat that was below the cursor comes, in the order they had.
    let rest: Vec<&String> = before[6..].iter().filter(|id| **id != gone && **id != pinned_unseen).collect();
    let later: Vec<&String> = seen[6..].iter().collect();
    assert_eq!(later, rest);
    // The one pinned above the cursor is announced by the system stream; its row is one call.
    let r = app.get(&format!("/api/chats/{pinned_unseen}/summary"), Some(&token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let row: Value = r.json().await.expect("summary");
    assert!(row["pinned_at"].is_i64(), "{row}");
    // And a fresh walk has everything live exactly once.
    let (ids, _) = walk(&app, &token, 7).await;
    assert_eq!(ids, all_ids(&app, &token).await);
    assert_eq!(ids.len(), 20 + 3 - 2);
}

#[tokio::test]
async fn bad_limits_and_cursors_are_refused_and_unknown_positions_still_page() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    create(&app, &token, "only").await;
    for (path, code) in [
        ("/api/chats?limit=0", "invalid_limit"),
        ("/api/chats?limit=-4", "invalid_limit"),
        ("/api/chats?limit=lots", "invalid_limit"),
        ("/api/chats?limit=5&cursor=nonsense", "invalid_cursor"),
        ("/api/chats?cursor=r.soon.only", "invalid_cursor"),
        ("/api/chats?cursor=p.1.2", "invalid_cursor"),
        ("/api/chats?limit=1&limit=2", "invalid_query"),
    ] {
        assert_error(app.get(path, Some(&token)).await, StatusCode::BAD_REQUEST, code).await;
    }
    // A cursor names a position, not a chat: one that no chat holds still pages.
    let (ids, next) = page(&app, &token, 5, Some(&format!("r.{}.zzz", i64::MAX))).await;
    assert_eq!((ids, next), (vec!["only".to_owned()], None));
    let (ids, next) = page(&app, &token, 5, Some("r.0.a")).await;
    assert_eq!((ids.len(), next), (0, None));
    // A huge limit is capped, a cursor alone takes the default page size.
    let (ids, _) = page(&app, &token, 100_000, None).await;
    assert_eq!(ids, ["only"]);
    let r = app.get("/api/chats?cursor=", Some(&token)).await;
    let body: Value = r.json().await.expect("page");
    assert_eq!(body["chats"].as_array().map(Vec::len), Some(1));
    assert!(body["next_cursor"].is_null());
    // Without a token, nothing.
    assert_error(app.get("/api/chats?limit=5", None).await, StatusCode::UNAUTHORIZED, "missing_token").await;
}

#[tokio::test]
async fn create_answers_its_own_row_and_the_summary_route_answers_one_row() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    let created = create(&app, &token, "mine").await;
    assert_eq!(created["id"], "mine");
    assert_eq!(created["title"], "Chat mine");
    assert_eq!(created["has_messages"], true);
    let r = app.get("/api/chats/mine/summary", Some(&token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let summary: Value = r.json().await.expect("summary");
    assert_eq!(summary, created);
    patch(&app, &token, "mine", json!({ "title": "Renamed", "pinned": true })).await;
    let summary: Value = app.get("/api/chats/mine/summary", Some(&token)).await.json().await.expect("summary");
    assert_eq!(summary["title"], "Renamed");
    assert!(summary["pinned_at"].is_i64());
    delete(&app, &token, "mine").await;
    assert_error(app.get("/api/chats/mine/summary", Some(&token)).await, StatusCode::NOT_FOUND, "chat_not_found").await;
    assert_error(app.get("/api/chats/no%20such/summary", Some(&token)).await, StatusCode::NOT_FOUND, "chat_not_found")
        .await;
}

#[tokio::test]
async fn the_unpaginated_list_old_clients_read_is_bounded_to_the_top_of_the_drawer() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    for i in 0..1_005 {
        let r = app.post("/api/chats", json!({ "id": format!("b{i:04}") }), Some(&token)).await;
        assert_eq!(r.status(), StatusCode::CREATED);
    }
    let ids = all_ids(&app, &token).await;
    assert_eq!(ids.len(), 1_000);
    let (paged, _) = walk(&app, &token, 200).await;
    assert_eq!(paged.len(), 1_005);
    assert_eq!(ids, paged[..1_000]);
}

#[tokio::test]
async fn the_wal_is_truncated_once_writes_stop() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    for i in 0..50 {
        create(&app, &token, &format!("w{i}")).await;
    }
    let wal = app.data_dir().join("db/mobius.sqlite3-wal");
    eventually("the WAL is checkpointed to nothing", || async {
        (std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0) == 0).then_some(())
    })
    .await;
    // The data is all there after the checkpoint.
    assert_eq!(all_ids(&app, &token).await.len(), 50);
}
