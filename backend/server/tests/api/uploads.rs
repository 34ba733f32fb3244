//! Chat files: uploads streamed to disk (limits, sniffed types, names, aborted transfers,
//! quota), photos stripped and oriented with previews, media tokens, the agent's images, and
//! messages that carry their files to the CLI.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use crate::helpers::{TestApp, assert_error, eventually, script};

const BOUNDARY: &str = "mobius-test-boundary";

/// A multipart body of `(field, file name, bytes)` parts, built by hand so names go as given.
fn form(parts: &[(&str, &[u8], &[u8])]) -> Vec<u8> {
    let mut body = Vec::new();
    for (field, name, bytes) in parts {
        body.extend_from_slice(
            format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{field}\"; filename=\"").as_bytes(),
        );
        body.extend_from_slice(name);
        body.extend_from_slice(b"\"\r\nContent-Type: application/octet-stream\r\n\r\n");
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
    body
}

pub async fn upload(app: &TestApp, token: &str, chat: &str, parts: &[(&str, &[u8], &[u8])]) -> reqwest::Response {
    app.client
        .post(app.url(&format!("/api/chats/{chat}/uploads")))
        .bearer_auth(token)
        .header("content-type", format!("multipart/form-data; boundary={BOUNDARY}"))
        .body(form(parts))
        .send()
        .await
        .expect("upload")
}

/// A JPEG of `w`×`h` (left half red, right half blue) whose EXIF says `orientation` and holds
/// a GPS position.
fn photo(w: u32, h: u32, orientation: u16) -> Vec<u8> {
    let img = image::RgbImage::from_fn(
        w,
        h,
        |x, _| if x < w / 2 { image::Rgb([250, 0, 0]) } else { image::Rgb([0, 0, 250]) },
    );
    let mut plain = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut plain, 90).encode_image(&img).expect("encode");
    let mut tiff = b"MM\0\x2a\0\0\0\x08\0\x01\x01\x12\0\x03\0\0\0\x01".to_vec();
    tiff.extend_from_slice(&orientation.to_be_bytes());
    tiff.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    tiff.extend_from_slice(b"GPSLatitude 52.37N 4.89E");
    let mut app1 = b"Exif\0\0".to_vec();
    app1.extend_from_slice(&tiff);
    let mut out = plain[..2].to_vec();
    out.extend_from_slice(&[0xFF, 0xE1]);
    out.extend_from_slice(&u16::try_from(app1.len() + 2).expect("len").to_be_bytes());
    out.extend_from_slice(&app1);
    out.extend_from_slice(&plain[2..]);
    out
}

fn png(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbaImage::from_pixel(w, h, image::Rgba([10, 200, 30, 255]));
    let mut out = Vec::new();
    image::DynamicImage::ImageRgba8(img)
        .write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .expect("png");
    out
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// The server's own signing key, to mint tokens the tests need (expired, another chat's).
fn keys(app: &TestApp) -> mobius::auth::Keys {
    app.keys()
}

fn media_claims(chat: &str, ttl: i64) -> mobius::auth::Claims {
    let mut claims = mobius::auth::Claims::new(crate::helpers::USERNAME, mobius::auth::Scope::Media, 0, ttl);
    claims.chat_id = Some(chat.to_owned());
    claims
}

async fn media_token(app: &TestApp, token: &str, chat: &str) -> String {
    let r = app.post(&format!("/api/chats/{chat}/media-token"), json!({}), Some(token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["expires_in"], 900);
    body["token"].as_str().expect("token").to_owned()
}

/// Files under the chat's folder and the staging folder (nothing may be left behind).
fn files_on_disk(data: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut pending = vec![data.join("uploads")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            if entry.path().is_dir() {
                pending.push(entry.path());
            } else {
                out.push(entry.path());
            }
        }
    }
    out
}

async fn listed(app: &TestApp, token: &str, chat: &str) -> Vec<Value> {
    let r = app.get(&format!("/api/chats/{chat}/uploads"), Some(token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    r.json::<Vec<Value>>().await.expect("json")
}

#[tokio::test]
async fn a_photo_is_stored_upright_without_its_location_with_a_preview_behind_a_media_token() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    app.chat(&token, "c").await;
    app.chat(&token, "other").await;
    let original = photo(1600, 1200, 6);
    let r =
        upload(&app, &token, "c", &[("files", b"IMG 0001.png", &original), ("files", b"notes.md", b"# Plan\n")]).await;
    assert_eq!(r.status(), StatusCode::OK);
    let files: Vec<Value> = r.json().await.expect("json");
    let photo_row = &files[0];
    assert_eq!(photo_row["name"], "IMG_0001.jpg", "a safe name with the sniffed type's extension");
    assert_eq!(photo_row["mime_type"], "image/jpeg", "the bytes decide, not the name");
    assert_eq!((photo_row["width"].as_i64(), photo_row["height"].as_i64()), (Some(1200), Some(1600)), "turned upright");
    assert_eq!(photo_row["preview"], true);
    assert_eq!(photo_row["url"], "/api/chats/c/uploads/IMG_0001.jpg");
    assert!(photo_row["path"].as_str().expect("path").ends_with("uploads/c/files/IMG_0001.jpg"));
    assert_eq!(files[1]["mime_type"], "text/markdown");
    assert_eq!(listed(&app, &token, "c").await.len(), 2);

    let url = app.url("/api/chats/c/uploads/IMG_0001.jpg");
    let r = app.client.get(&url).send().await.expect("get");
    assert_error(r, StatusCode::UNAUTHORIZED, "missing_token").await;
    let r = app.client.get(format!("{url}?token={token}")).send().await.expect("get");
    assert_error(r, StatusCode::FORBIDDEN, "wrong_scope").await;
    let media = media_token(&app, &token, "c").await;
    let r = app.client.get(format!("{url}?token={media}")).send().await.expect("get");
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "image/jpeg");
    assert!(r.headers().get("content-disposition").is_none(), "images are shown inline");
    let stored = r.bytes().await.expect("bytes");
    assert!(!contains(&stored, b"GPSLatitude") && !contains(&stored, b"Exif"), "no location left");
    let upright = image::load_from_memory(&stored).expect("decode");
    assert_eq!((upright.width(), upright.height()), (1200, 1600));
    let r = app.client.get(format!("{url}?token={media}&preview=true")).send().await.expect("preview");
    assert_eq!(r.status(), StatusCode::OK);
    let preview = image::load_from_memory(&r.bytes().await.expect("bytes")).expect("preview");
    assert_eq!((preview.width(), preview.height()), (768, 1024));
    let doc =
        app.client.get(app.url(&format!("/api/chats/c/uploads/notes.md?token={media}"))).send().await.expect("doc");
    assert_eq!(doc.status(), StatusCode::OK);
    assert!(doc.headers()["content-disposition"].to_str().expect("text").starts_with("attachment"));
    assert_eq!(doc.headers()["content-security-policy"], "default-src 'none'; sandbox");

    // A media token opens its own chat only; expired and forged ones are refused.
    let r = app
        .client
        .get(app.url(&format!("/api/chats/other/uploads/IMG_0001.jpg?token={media}")))
        .send()
        .await
        .expect("get");
    assert_error(r, StatusCode::FORBIDDEN, "media_token_wrong_chat").await;
    let keys = keys(&app);
    let expired = keys.issue(&media_claims("c", -3600)).expect("issue");
    let r = app.client.get(format!("{url}?token={expired}")).send().await.expect("get");
    assert_error(r, StatusCode::UNAUTHORIZED, "token_expired").await;
    let forged = mobius::auth::Keys::from_secret(b"not the server's key, 32 bytes long")
        .issue(&media_claims("c", 600))
        .expect("forge");
    let r = app.client.get(format!("{url}?token={forged}")).send().await.expect("get");
    assert_error(r, StatusCode::UNAUTHORIZED, "invalid_token").await;
    // A media token is no owner token.
    assert_error(app.get("/api/chats", Some(&media)).await, StatusCode::FORBIDDEN, "wrong_scope").await;

    // Removing a file removes its bytes and preview.
    let del =
        app.client.delete(app.url("/api/chats/c/uploads/IMG_0001.jpg")).bearer_auth(&token).send().await.expect("del");
    assert_eq!(del.status(), StatusCode::NO_CONTENT);
    assert_eq!(listed(&app, &token, "c").await.len(), 1);
    let left = files_on_disk(app.data_dir());
    assert!(left.iter().all(|p| !p.to_string_lossy().contains("IMG_0001")), "{left:?}");
    let r = app.client.get(format!("{url}?token={media}")).send().await.expect("get");
    assert_error(r, StatusCode::NOT_FOUND, "file_not_found").await;
}

#[tokio::test]
async fn bad_uploads_get_a_clear_error_and_leave_nothing_behind() {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let app = TestApp::spawn_in(dir, |c| c.upload_max_file_bytes = 1 << 20).await;
    let token = app.setup_owner().await;
    app.chat(&token, "c").await;
    let big = vec![b'a'; (1 << 20) + 1];
    let r = upload(&app, &token, "c", &[("files", b"ok.txt", b"fine"), ("files", b"big.txt", &big)]).await;
    assert_error(r, StatusCode::PAYLOAD_TOO_LARGE, "file_too_large").await;
    let r = upload(&app, &token, "c", &[("files", b"tool", b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0")]).await;
    assert_error(r, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_type").await;
    let eleven: Vec<(&str, &[u8], &[u8])> = (0..11).map(|_| ("files", &b"n.txt"[..], &b"note"[..])).collect();
    let r = upload(&app, &token, "c", &eleven).await;
    assert_error(r, StatusCode::BAD_REQUEST, "too_many_files").await;
    let long = "x".repeat(300);
    for name in [&b"../../secret.key"[..], b"a/b.txt", b"a\\b.txt", long.as_bytes()] {
        let r = upload(&app, &token, "c", &[("files", name, b"text")]).await;
        let body = assert_error(r, StatusCode::BAD_REQUEST, "invalid_file_name").await;
        assert!(body["message"].as_str().expect("message").contains("File names"), "{body}");
    }
    // A NUL in the part's header is not even a valid form.
    let r = upload(&app, &token, "c", &[("files", b"nul\0.txt", b"text")]).await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let r = upload(&app, &token, "c", &[("files", b"empty.txt", b"")]).await;
    assert_error(r, StatusCode::BAD_REQUEST, "empty_file").await;
    let r = upload(&app, &token, "nope", &[("files", b"a.txt", b"text")]).await;
    assert_error(r, StatusCode::NOT_FOUND, "chat_not_found").await;
    app.chat(&token, "gone").await;
    let del = app.client.delete(app.url("/api/chats/gone")).bearer_auth(&token).send().await.expect("delete");
    assert_eq!(del.status(), StatusCode::NO_CONTENT);
    let r = upload(&app, &token, "gone", &[("files", b"a.txt", b"text")]).await;
    assert_error(r, StatusCode::NOT_FOUND, "chat_not_found").await;
    assert!(listed(&app, &token, "c").await.is_empty(), "a failed request keeps none of its files");
    assert_eq!(files_on_disk(app.data_dir()), Vec::<PathBuf>::new());

    // Paths outside the chat's folder name nothing.
    let media = media_token(&app, &token, "c").await;
    for path in ["uploads/..%2F..%2Fsecret.key", "media/..%2F..%2F..%2Fsecret.key", "uploads/.staging"] {
        let r = app.client.get(app.url(&format!("/api/chats/c/{path}?token={media}"))).send().await.expect("get");
        assert_error(r, StatusCode::NOT_FOUND, "file_not_found").await;
    }
    // Apps cannot attach files, even to their own chats.
    let (_, app_token) = app.register_app("notes").await;
    let r = upload(&app, &app_token, "c", &[("files", b"a.txt", b"text")]).await;
    assert_error(r, StatusCode::FORBIDDEN, "wrong_scope").await;
    let r = app.post("/api/chats/c/media-token", json!({}), Some(&app_token)).await;
    assert_error(r, StatusCode::FORBIDDEN, "wrong_scope").await;
}

#[tokio::test]
async fn an_upload_aborted_half_way_leaves_nothing_on_disk() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    app.chat(&token, "c").await;
    let head = format!(
        "POST /api/chats/c/uploads HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: 10000000\r\n\r\n\
         --{BOUNDARY}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"half.txt\"\r\n\r\n",
        app.addr.port()
    );
    let mut socket = tokio::net::TcpStream::connect(app.addr).await.expect("connect");
    socket.write_all(head.as_bytes()).await.expect("head");
    socket.write_all(&vec![b'x'; 2 << 20]).await.expect("half the file");
    socket.flush().await.expect("flush");
    let staging = app.data_dir().join("uploads/.staging");
    let staged = || std::fs::read_dir(&staging).map(|d| d.flatten().count()).unwrap_or(0);
    // The transfer is being written to disk ...
    eventually("the upload streams to a staging file", || async { (staged() > 0).then_some(()) }).await;
    assert_eq!(staged(), 1, "the upload streams to a staging file");
    // ... and the client goes away.
    drop(socket);
    eventually("the half file is gone", || async { (staged() == 0).then_some(()) }).await;
    assert!(listed(&app, &token, "c").await.is_empty());
    assert_eq!(files_on_disk(app.data_dir()), Vec::<PathBuf>::new());
}

#[tokio::test]
async fn uploads_count_against_the_quota_and_go_with_their_chat() {
    use sqlx::Connection;
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let app = TestApp::spawn_in(dir, |c| {
        c.upload_quota_bytes = 1 << 20;
        c.purge_every = Duration::from_millis(100);
    })
    .await;
    let token = app.setup_owner().await;
    app.chat(&token, "a").await;
    app.chat(&token, "b").await;
    let part = vec![b'q'; 600 * 1024];
    assert_eq!(upload(&app, &token, "a", &[("files", b"one.txt", &part)]).await.status(), StatusCode::OK);
    let r = upload(&app, &token, "b", &[("files", b"two.txt", &part)]).await;
    assert_error(r, StatusCode::PAYLOAD_TOO_LARGE, "upload_quota_exceeded").await;
    assert!(listed(&app, &token, "b").await.is_empty());
    // Deleting the chat and purging it frees its files and its share of the quota.
    let del = app.client.delete(app.url("/api/chats/a")).bearer_auth(&token).send().await.expect("delete");
    assert_eq!(del.status(), StatusCode::NO_CONTENT);
    let url = format!("sqlite://{}", app.data_dir().join("db/mobius.sqlite3").display());
    let mut db = sqlx::SqliteConnection::connect(&url).await.expect("db");
    let old = mobius::db::now_ms() - 8 * 24 * 3600 * 1000;
    sqlx::query("UPDATE chats SET deleted_at = ? WHERE id = 'a'").bind(old).execute(&mut db).await.expect("age");
    db.close().await.expect("close");
    // The agent's overflow text and scratch folder of the chat go with it too.
    let folders = ["uploads/a", "agent-output/a", "agent-scratch/a"].map(|f| app.data_dir().join(f));
    for f in &folders[1..] {
        std::fs::create_dir_all(f).expect("folder");
        std::fs::write(f.join("left.txt"), b"x").expect("file");
    }
    // Housekeeping purges every 100 ms here.
    eventually("the purge removes the chat's folders", || async { folders.iter().all(|f| !f.exists()).then_some(()) })
        .await;
    for f in &folders {
        assert!(!f.exists(), "the purged chat's {} is gone", f.display());
    }
    assert_eq!(upload(&app, &token, "b", &[("files", b"two.txt", &part)]).await.status(), StatusCode::OK);
}

/// A stream-json Claude imitation that keeps the user line it was sent, then replies with
/// `reply` (an assistant text) after a tool call whose result holds an image.
fn recording_claude(dir: &Path, reply: &str, tool_image_b64: &str) -> PathBuf {
    let record = dir.join("claude-input.jsonl");
    let reply = serde_json::to_string(reply).expect("json");
    script(
        dir,
        "fake-claude",
        &format!(
            r#"IFS= read -r init
IFS= read -r user
printf '%s\n' "$user" > '{record}'
sid="s-1"
printf '{{"type":"system","subtype":"init","session_id":"%s"}}\n' "$sid"
printf '{{"type":"assistant","message":{{"id":"m0","content":[{{"type":"tool_use","id":"t1","name":"Read","input":{{"file_path":"shot.png"}}}}]}},"session_id":"%s"}}\n' "$sid"
printf '{{"type":"user","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t1","content":[{{"type":"image","source":{{"type":"base64","media_type":"image/png","data":"{tool_image_b64}"}}}}]}}]}},"session_id":"%s"}}\n' "$sid"
printf '{{"type":"assistant","message":{{"id":"m1","content":[{{"type":"text","text":%s}}]}},"session_id":"%s"}}\n' '{reply}' "$sid"
printf '{{"type":"result","subtype":"success","is_error":false,"session_id":"%s","usage":{{"input_tokens":5,"output_tokens":7}}}}\n' "$sid"
cat >/dev/null"#,
            record = record.display()
        ),
    )
}

#[tokio::test]
async fn a_message_carries_its_files_to_claude_and_the_agents_images_become_chat_media() {
    use base64::Engine;
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let tool_png = png(3, 2);
    let b64 = base64::engine::general_purpose::STANDARD.encode(&tool_png);
    let bin = recording_claude(
        dir.path(),
        "Here is the chart: ![chart](agent-home/chart.png) and not ![key](db/mobius.sqlite3) nor ![web](https://example.com/a.png)",
        &b64,
    );
    let app = TestApp::spawn_in(dir, |c| c.claude_bin = bin).await;
    let token = app.setup_owner().await;
    app.connect_claude(&token).await;
    app.chat(&token, "c").await;
    std::fs::create_dir_all(app.data_dir().join("agent-home")).expect("home");
    std::fs::write(app.data_dir().join("agent-home/chart.png"), png(4, 4)).expect("chart");
    let shot = png(40, 30);
    let r = upload(&app, &token, "c", &[("files", b"shot.png", &shot), ("files", b"data.csv", b"a,b\n1,2\n")]).await;
    assert_eq!(r.status(), StatusCode::OK);

    let bad = app
        .post(
            "/api/chats/c/messages",
            json!({ "content": "look", "cid": "m0", "attachments": ["nope.png"] }),
            Some(&token),
        )
        .await;
    assert_error(bad, StatusCode::BAD_REQUEST, "unknown_attachment").await;
    let mut stream = app.stream(&token, "c", None).await;
    let r = app
        .post(
            "/api/chats/c/messages",
            json!({ "content": "", "cid": "m1", "attachments": [{ "name": "shot.png" }, { "name": "data.csv" }] }),
            Some(&token),
        )
        .await;
    assert_eq!(r.status(), StatusCode::ACCEPTED, "files alone make a message");
    let events = stream.until("done", 60).await;
    assert_eq!(events.last().expect("done").data["status"], "completed");

    // What Claude Code was sent: the image as a base64 block, the files by path.
    let sent: Value =
        serde_json::from_str(&std::fs::read_to_string(app.data_dir().join("claude-input.jsonl")).expect("recorded"))
            .expect("json line");
    let content = sent["message"]["content"].as_array().expect("content blocks");
    assert_eq!(content[0]["type"], "image");
    assert_eq!(content[0]["source"]["media_type"], "image/png");
    let data = base64::engine::general_purpose::STANDARD
        .decode(content[0]["source"]["data"].as_str().expect("data"))
        .expect("b64");
    assert_eq!(data, shot, "the model sees the uploaded image");
    let text = content.last().expect("text")["text"].as_str().expect("text");
    assert!(text.contains("uploads/c/files/shot.png") && text.contains("uploads/c/files/data.csv"), "{text}");
    assert_eq!(content.iter().filter(|b| b["type"] == "image").count(), 1, "the CSV is named, not shown");

    let detail = app.detail(&token, "c").await;
    let user = &detail["messages"][0];
    assert_eq!(user["attachments"][0]["name"], "shot.png");
    assert_eq!(user["attachments"][0]["mime_type"], "image/png");
    assert_eq!(user["attachments"][1]["name"], "data.csv");
    let blocks = detail["messages"][1]["blocks"].as_array().expect("blocks");
    let tool = blocks.iter().find(|b| b["type"] == "tool").expect("tool block");
    let tool_url = tool["images"][0].as_str().expect("the tool's image is chat media");
    assert!(tool_url.starts_with("/api/chats/c/media/tool-"), "{tool_url}");
    let reply = detail["messages"][1]["content"].as_str().expect("text");
    assert!(reply.contains("![chart](/api/chats/c/media/chart-"), "a local image is shown from the chat: {reply}");
    assert!(reply.contains("![key](db/mobius.sqlite3)"), "nothing outside the agent's folders: {reply}");
    assert!(reply.contains("https://example.com/a.png"));
    let media = media_token(&app, &token, "c").await;
    for url in [
        tool_url.to_owned(),
        reply.split("![chart](").nth(1).expect("chart").split(')').next().expect("url").to_owned(),
    ] {
        let r = app.client.get(app.url(&format!("{url}?token={media}"))).send().await.expect("media");
        assert_eq!(r.status(), StatusCode::OK, "{url}");
        assert_eq!(r.headers()["content-type"], "image/png");
    }
    assert_eq!(
        crate::helpers::fold_transcript(&crate::helpers::journal(&app, &token, "c").await),
        crate::helpers::transcript(&app, &token, "c").await,
        "the journal folds to what was stored"
    );
}

#[tokio::test]
async fn images_published_to_a_chat_are_served_from_its_media() {
    use sha2::Digest;
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    app.chat(&token, "c").await;
    let plot = png(8, 6);
    let named = format!("/api/chats/c/media/plot-{}.png", &hex::encode(sha2::Sha256::digest(&plot))[..8]);
    let r = app
        .client
        .post(app.url("/api/chats/c/media?name=plot.png&alt=A%20plot"))
        .bearer_auth(&token)
        .body(plot)
        .send()
        .await
        .expect("publish");
    assert_eq!(r.status(), StatusCode::CREATED);
    let body: Value = r.json().await.expect("json");
    let url = body["media_url"].as_str().expect("url");
    assert_eq!(url, named, "named after the image's bytes");
    assert_eq!(body["embed"], format!("![A plot]({url})"));
    let media = media_token(&app, &token, "c").await;
    let r = app.client.get(app.url(&format!("{url}?token={media}"))).send().await.expect("get");
    assert_eq!(r.status(), StatusCode::OK);
    let r = app
        .client
        .post(app.url("/api/chats/c/media?name=x.txt"))
        .bearer_auth(&token)
        .body("not an image")
        .send()
        .await
        .expect("publish");
    assert_error(r, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_type").await;
    let r = app
        .client
        .post(app.url("/api/chats/nope/media"))
        .bearer_auth(&token)
        .body(png(2, 2))
        .send()
        .await
        .expect("publish");
    assert_error(r, StatusCode::NOT_FOUND, "chat_not_found").await;
}

#[tokio::test]
async fn a_backup_carries_the_chat_files_and_not_transfers_in_progress() {
    let app = TestApp::spawn().await;
    let token = app.setup_owner().await;
    app.chat(&token, "c").await;
    let r = upload(&app, &token, "c", &[("files", b"photo.jpg", &photo(64, 48, 1))]).await;
    assert_eq!(r.status(), StatusCode::OK);
    std::fs::create_dir_all(app.data_dir().join("uploads/.staging")).expect("staging");
    std::fs::write(app.data_dir().join("uploads/.staging/half"), b"partial").expect("half a transfer");
    let backups = tempfile::tempdir().expect("tmp");
    let dest = backups.path().join("b");
    mobius::backup::backup(app.data_dir(), &dest).await.expect("backup");
    assert!(dest.join("uploads/c/files/photo.jpg").is_file(), "the file is in the backup");
    assert!(dest.join("uploads/c/previews/upload-photo.jpg.jpg").is_file(), "with its preview");
    assert!(!dest.join("uploads/.staging").exists(), "transfers in progress are not");
    app.stop().await;
    let restored = Arc::new(tempfile::tempdir().expect("tmp"));
    mobius::backup::restore(&dest, restored.path(), false).await.expect("restore");
    let again = TestApp::spawn_in(restored, |_| {}).await;
    let media = media_token(&again, &token, "c").await;
    let r = again
        .client
        .get(again.url(&format!("/api/chats/c/uploads/photo.jpg?token={media}")))
        .send()
        .await
        .expect("get");
    assert_eq!(r.status(), StatusCode::OK, "the restored server serves it");
}

/// A Claude imitation that works in its working directory the way a real turn does: writes a
/// text file and a chart there, plants a link to the server's key, and shows the chart.
fn workspace_claude(dir: &Path, png_b64: &str) -> PathBuf {
    script(
        dir,
        "fake-claude-workspace",
        &format!(
            r#"IFS= read -r init
IFS= read -r user
echo hi > hello.txt
mkdir -p out
printf '%s' '{png_b64}' | base64 -d > out/chart.png
ln -s ../../secret.key key.txt
printf '%s|%s' "$PWD" "$MOBIUS_WORKSPACE" > where.txt
test -d apps/ && echo linked > shared/seen-from-workspace.txt
sid="s-1"
printf '{{"type":"system","subtype":"init","session_id":"%s"}}\n' "$sid"
printf '{{"type":"assistant","message":{{"id":"m1","content":[{{"type":"text","text":"Made it: ![chart](out/chart.png)"}}]}},"session_id":"%s"}}\n' "$sid"
printf '{{"type":"result","subtype":"success","is_error":false,"session_id":"%s","usage":{{"input_tokens":5,"output_tokens":7}}}}\n' "$sid"
cat >/dev/null"#
        ),
    )
}

#[tokio::test]
async fn a_turn_works_in_its_chats_workspace_and_the_owner_downloads_what_it_made() {
    use base64::Engine;
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let chart = png(5, 5);
    let bin = workspace_claude(dir.path(), &base64::engine::general_purpose::STANDARD.encode(&chart));
    let app = TestApp::spawn_in(dir, |c| c.claude_bin = bin).await;
    let token = app.setup_owner().await;
    app.connect_claude(&token).await;
    app.chat(&token, "c").await;
    app.chat(&token, "other").await;
    let r = app.get("/api/chats/c/workspace", Some(&token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.json::<Value>().await.expect("json"), json!({ "files": [], "truncated": false }));

    let mut stream = app.stream(&token, "c", None).await;
    app.send(&token, "c", "write me hello.txt and a chart", "m1").await;
    let events = stream.until("done", 60).await;
    assert_eq!(events.last().expect("done").data["status"], "completed");

    let workspace = app.data_dir().join("workspace/c");
    let where_ = std::fs::read_to_string(workspace.join("where.txt")).expect("the turn wrote in its cwd");
    let (pwd, env) = where_.split_once('|').expect("pwd|env");
    assert_eq!(std::fs::canonicalize(pwd).expect("pwd"), std::fs::canonicalize(&workspace).expect("ws"));
    assert_eq!(env, workspace.display().to_string());
    assert!(app.data_dir().join("shared/seen-from-workspace.txt").is_file(), "the skills' folders are reachable");

    let r = app.get("/api/chats/c/workspace", Some(&token)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let listed: Value = r.json().await.expect("json");
    let mut paths: Vec<&str> =
        listed["files"].as_array().expect("files").iter().filter_map(|f| f["path"].as_str()).collect();
    paths.sort_unstable();
    assert_eq!(paths, ["hello.txt", "out/chart.png", "where.txt"], "no link listed: {listed}");
    let media = media_token(&app, &token, "c").await;
    let r =
        app.client.get(app.url(&format!("/api/chats/c/workspace/hello.txt?token={media}"))).send().await.expect("get");
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-disposition"], "attachment; filename=\"hello.txt\"; filename*=UTF-8''hello.txt");
    assert_eq!(r.headers()["content-security-policy"], "default-src 'none'; sandbox");
    assert_eq!(r.bytes().await.expect("body").as_ref(), b"hi\n");
    let r = app
        .client
        .get(app.url(&format!("/api/chats/c/workspace/out/chart.png?token={media}")))
        .send()
        .await
        .expect("get");
    assert_eq!(r.bytes().await.expect("body").as_ref(), chart.as_slice());
    for bad in ["key.txt", "apps", "shared/seen-from-workspace.txt", "..%2F..%2Fsecret.key", "out", "missing.txt"] {
        let r =
            app.client.get(app.url(&format!("/api/chats/c/workspace/{bad}?token={media}"))).send().await.expect("get");
        assert_error(r, StatusCode::NOT_FOUND, "file_not_found").await;
    }
    // The chat's media token opens only its own chat's workspace.
    let r = app
        .client
        .get(app.url(&format!("/api/chats/other/workspace/hello.txt?token={media}")))
        .send()
        .await
        .expect("get");
    assert_error(r, StatusCode::FORBIDDEN, "media_token_wrong_chat").await;
    let r = app.client.get(app.url("/api/chats/c/workspace/hello.txt")).send().await.expect("get");
    assert_error(r, StatusCode::UNAUTHORIZED, "missing_token").await;

    // The reply's relative image is the workspace's, shown from the chat's media.
    let detail = app.detail(&token, "c").await;
    let reply = detail["messages"][1]["content"].as_str().expect("text");
    assert!(reply.contains("![chart](/api/chats/c/media/chart-"), "{reply}");
}
