use super::*;

fn ev(method: &str, params: Value) -> Value {
    json!({ "method": method, "params": params, "sessionId": "S" })
}

#[test]
fn a_page_settles_once_loaded_with_no_request_open_and_no_change_for_a_while() {
    let mut page = Observer::new();
    page.apply(
        &ev(
            "Network.requestWillBeSent",
            json!({ "requestId": "1", "request": { "method": "GET", "url": "http://h/a.js?token=x" } }),
        ),
        "S",
    );
    page.apply(&ev("Page.loadEventFired", json!({})), "S");
    let later = Instant::now() + QUIET * 2;
    assert!(!page.settled(later), "a request is open");
    assert!(page.unsettled_note(Duration::from_secs(17)).contains("GET http://h/a.js)"), "named without its query");
    page.apply(&ev("Network.loadingFinished", json!({ "requestId": "1" })), "S");
    assert!(!page.settled(Instant::now()), "not quiet yet");
    assert!(page.settled(Instant::now() + QUIET * 2));
    // Another page's events are not this one's.
    page.apply(&json!({ "method": "Network.requestWillBeSent", "sessionId": "T", "params": { "requestId": "2", "request": {} } }), "S");
    assert!(page.settled(Instant::now() + QUIET * 2));
}

#[test]
fn an_event_stream_does_not_hold_the_page_and_failures_and_console_are_kept_bounded() {
    let mut page = Observer::new();
    page.apply(&ev("Page.loadEventFired", json!({})), "S");
    page.apply(
        &ev(
            "Network.requestWillBeSent",
            json!({ "requestId": "s", "request": { "method": "GET", "url": "http://h/api/events/system" } }),
        ),
        "S",
    );
    page.apply(
        &ev(
            "Network.responseReceived",
            json!({ "requestId": "s", "response": { "status": 200, "mimeType": "text/event-stream" } }),
        ),
        "S",
    );
    assert!(page.settled(Instant::now() + QUIET * 2), "the stream stays open by design");
    page.apply(
        &ev(
            "Network.requestWillBeSent",
            json!({ "requestId": "m", "request": { "method": "GET", "url": "http://h/missing.png" } }),
        ),
        "S",
    );
    page.apply(
        &ev(
            "Network.responseReceived",
            json!({ "requestId": "m", "response": { "status": 404, "mimeType": "text/html" } }),
        ),
        "S",
    );
    page.apply(&ev("Network.loadingFinished", json!({ "requestId": "m" })), "S");
    page.apply(
        &ev(
            "Network.requestWillBeSent",
            json!({ "requestId": "x", "request": { "method": "POST", "url": "http://h/api/x" } }),
        ),
        "S",
    );
    page.apply(
        &ev("Network.loadingFailed", json!({ "requestId": "x", "errorText": "net::ERR_CONNECTION_REFUSED" })),
        "S",
    );
    page.apply(
        &ev(
            "Network.requestWillBeSent",
            json!({ "requestId": "c", "request": { "method": "GET", "url": "http://h/c" } }),
        ),
        "S",
    );
    page.apply(
        &ev("Network.loadingFailed", json!({ "requestId": "c", "errorText": "net::ERR_ABORTED", "canceled": true })),
        "S",
    );
    assert_eq!(
        page.failed,
        vec!["GET http://h/missing.png → 404", "POST http://h/api/x → net::ERR_CONNECTION_REFUSED"]
    );
    page.apply(
        &ev("Runtime.consoleAPICalled", json!({ "type": "log", "args": [{ "type": "string", "value": "fine" }] })),
        "S",
    );
    page.apply(&ev("Runtime.consoleAPICalled", json!({ "type": "error", "args": [{ "type": "string", "value": "boom" }, { "type": "number", "value": 3 }] })), "S");
    page.apply(&ev("Runtime.exceptionThrown", json!({ "exceptionDetails": { "text": "Uncaught", "exception": { "description": "TypeError: x is undefined\n    at f" } } })), "S");
    assert_eq!(page.console, vec!["console.error: boom 3", "uncaught: TypeError: x is undefined"]);
    for _ in 0..MAX_CONSOLE_LINES + 10 {
        page.apply(
            &ev(
                "Runtime.consoleAPICalled",
                json!({ "type": "warning", "args": [{ "type": "string", "value": "again" }] }),
            ),
            "S",
        );
    }
    assert_eq!(page.console.len(), MAX_CONSOLE_LINES + 1);
    assert_eq!(page.console.last().map(String::as_str), Some("… 12 more console lines not kept"));
}

#[test]
fn dom_changes_keep_a_page_busy_and_are_named_when_it_never_settles() {
    let mut page = Observer::new();
    page.apply(&ev("Page.loadEventFired", json!({})), "S");
    page.apply(&ev("Runtime.bindingCalled", json!({ "name": MUTATED, "payload": "" })), "S");
    assert!(!page.settled(Instant::now()));
    let note = page.unsettled_note(Duration::from_millis(17_000));
    assert!(note.contains("17.0 s") && note.contains("DOM was still changing"), "{note}");
}

#[test]
fn a_png_header_gives_its_size_and_the_sign_in_stays_in_the_top_document() {
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    png.extend_from_slice(&780u32.to_be_bytes());
    png.extend_from_slice(&1688u32.to_be_bytes());
    assert_eq!(png_size(&png), Some((780, 1688)));
    assert_eq!(png_size(b"GIF89a..........................."), None);
    let js = sign_in_js(&Target {
        url: "http://127.0.0.1:1/".into(),
        origin: "http://127.0.0.1:1".into(),
        token: "t\"k".into(),
        app_id: Some(4),
    });
    assert!(js.contains("window !== window.top") && js.contains(r#""t\"k""#), "{js}");
    assert!(js.contains("'mobius.install-offer.4', 'dismissed'"), "{js}");
}
