//! Command-line entry: `mobius [serve]` runs the server; `--version` and `help` inform.

use std::process::ExitCode;
use std::time::Duration;

use tokio::net::TcpListener;
use tracing_subscriber::EnvFilter;

use crate::config::Config;

/// After a shutdown signal, the process exits no later than this.
const HARD_EXIT_AFTER_SIGNAL: Duration = Duration::from_secs(10);

const HELP: &str = "mobius — self-hosted agent platform

USAGE:
    mobius [serve]     run the server (configured by environment variables)
    mobius launch      run the server under the launcher (the image's default): the newest good
                       version, updates tried and rolled back when they do not become ready
    mobius update [--check] [--yes]
                                    check for a new release; apply it (needs `mobius launch`)
    mobius backup --to DIR          consistent copy of DATA_DIR, safe while the server runs
    mobius restore --from DIR --to DATA_DIR [--force]
                                    restore a backup into a stopped deployment
    mobius healthcheck [PATH]       exit 0 when the local server answers /api/ready (or PATH)
    mobius app apply <slug>         (agents) validate, commit, bundle and publish apps/<slug>/
    mobius app screenshot <slug> [--size phone|desktop] [--path /in-app/path] [--out FILE.png]
                                    (agents) render the installed app as the owner's phone (or a
                                    desktop) shows it, once it settled: writes the PNG (default
                                    screenshots/<slug>-<size>.png) and prints its console errors
                                    and failed requests
    mobius page screenshot <path-or-url> [--size phone|desktop] [--out FILE.png]
                                    (agents) the same for a page of this server (/settings, …)
    mobius theme apply              (agents) check DATA_DIR/theme/theme.css and make it the
                                    platform's theme on every open device (errors say where)
    mobius shell rebuild            (agents) build DATA_DIR/platform/shell/ and serve it on every
                                    device (a failed build keeps the current one; errors printed)
    mobius notify <title> <body> [--chat [ID]] [--app ID]
                                    (agents) tell the owner: a notification on their devices,
                                    opening this chat (--chat) or an app (--app)
    mobius secret request <NAME> --app <SLUG> [--reason TEXT]
    mobius secret request [NAME] --connector <ID|NAME> [--reason TEXT]
                                    (agents) ask the owner for a secret: a card in this chat
                                    where they type it; it is stored as the app's secret NAME
                                    (or as the connector's key, which then reconnects) and this
                                    prints only whether it was stored (never the value)
    mobius secret wait <ID>         (agents) keep waiting for a request that is still open
    mobius git-credential get|store|erase
                                    (agents) git's credential helper for GitHub over https (set in
                                    the agent's git config): asks the server for each operation;
                                    answers only for repositories the owner allowed
    mobius media publish <file> [--alt TEXT]
                                    (agents) show an image (PNG, JPEG, WebP, GIF) in this chat:
                                    prints its media_url and the Markdown embed for the reply
    mobius schedule add --cron '<m h dom mon dow>' [--tz ZONE] [--new-chat] [--name NAME]
                        [--skip-missed] <prompt>
                                    (agents) send <prompt> into this chat (or a new chat each
                                    time) on a cron cadence, in the owner's time zone
    mobius schedule list            (agents) this chat's schedules (and those it made), with
                                    their next run
    mobius schedule remove <id>     (agents) remove one of them
    mobius remind (--in 2h | --at 07:30 | --at 2025-06-01T07:30) <text>
                                    (agents) <text> comes back to this chat as a turn then
    mobius toolbox [--json] [--require]
                                    the tools on PATH (Python, npm, sqlite3, jq, ripgrep, unzip,
                                    git, curl, Chromium) and their versions; --require: exit 1
                                    when one is missing
    mobius --version   print the version
    mobius help        print this help

ENVIRONMENT:
    DATA_DIR                 where everything is stored (default ./data)
    MOBIUS_BIND              listen address (default 127.0.0.1:8000)
    MOBIUS_PUBLIC_ORIGIN     the https://… origin browsers use (default http://<bind>; required
                             when MOBIUS_BIND is not a loopback address)
    MOBIUS_TRUSTED_PROXIES   addresses/CIDRs whose X-Forwarded-For is believed (default none)
    MOBIUS_EXTRA_HOSTS       further host[:port] names to answer, e.g. a LAN address (default none)
    MOBIUS_HEADER_READ_TIMEOUT_SECS, MOBIUS_REQUEST_BODY_TIMEOUT_SECS, MOBIUS_KEEP_ALIVE_SECS,
    MOBIUS_MAX_CONNECTIONS, MOBIUS_MAX_CONNECTIONS_PER_ADDRESS, MOBIUS_MAX_STREAMS,
    MOBIUS_MAX_STREAMS_PER_ADDRESS   connection limits (defaults 10, 30, 75, 1024, 64, 512, 32)
    MOBIUS_REQUEST_BODY_MIN_RATE, MOBIUS_REQUEST_BODY_GRACE_SECS, MOBIUS_MAX_UPLOADS_PER_ADDRESS,
    MOBIUS_RESERVED_CONNECTIONS      slow bodies and the owner's reserve (defaults 1024 B/s, 10, 8, 64)
    MOBIUS_MAX_BLOCKING_THREADS      threads for blocking work (files, hashes, git; default 32)
    MOBIUS_FRONTEND_DIR      the built PWA (default frontend/dist)
    MOBIUS_LOG               log filter, e.g. info or mobius=debug (default info)
    MOBIUS_SECRET_KEY        the first JWT key, written into DATA_DIR/secret.key (default: generated);
                             sign-out-everywhere and a new password replace it there
    MOBIUS_SKILL_DIR         the agent's constitution and skills (default skill)
    MOBIUS_CLAUDE_BIN        Claude Code CLI (default claude on PATH)
    MOBIUS_CODEX_BIN         Codex CLI (default codex on PATH)
    MOBIUS_CHROMIUM          the screenshot browser (default chromium-headless-shell or chromium on PATH)
    MOBIUS_CLAUDE_BASE_URL   model endpoint for Claude Code (optional)
    MOBIUS_AGENT_START_TIMEOUT_SECS  fail a turn whose CLI stays silent this long (default 90)
    MOBIUS_AGENT_TURN_MAX_SECS       end a turn after this long (default 21600)
    MOBIUS_AGENT_SILENCE_MAX_SECS    end a turn whose CLI says nothing this long (default 1800)
    MOBIUS_AGENT_SANDBOX     on (default): confine the agent with Landlock; off: do not
    MOBIUS_APP_NODE_MODULES  the libraries mini-apps may import (default frontend/node_modules)
    MOBIUS_MAX_UPLOAD_MB     largest file attached to a chat, in MiB (default 25)
    MOBIUS_UPLOAD_QUOTA_MB   chat files of all chats together, in MiB (default 2048)
    MOBIUS_APP_RUNTIME_DIR   the app runtime: mobius-runtime.js, mobius-chat.js, app-runtime-inject.js (default frontend/public)
    MOBIUS_PUSH_ALLOW_LOOPBACK  1: Web Push may reach plain-http loopback endpoints (tests only)
    MOBIUS_UPDATE_FEED       the release feed (default: this build's; off: no update checks)
    MOBIUS_UPDATE_READY_TIMEOUT_SECS  a new version not ready this long is rolled back (default 90)
    MOBIUS_UPDATE_TEST_KEY   a further release key, honoured only with a loopback feed (tests)
";

/// Runs the command named by `args` (without the program name).
pub fn main(args: Vec<String>) -> ExitCode {
    match args.first().map(String::as_str) {
        None | Some("serve") => serve(),
        Some("backup") => crate::backup::backup_command(&args[1..]),
        Some("restore") => crate::backup::restore_command(&args[1..]),
        Some("healthcheck") => crate::backup::healthcheck_command(&args[1..]),
        Some("launch") => crate::platform::launcher::launch_command(),
        Some("update") => crate::platform::command::update_command(&args[1..]),
        // Internal: what `scripts/release` writes into a release's manifest.
        Some("release-info") => {
            println!(
                "{}",
                serde_json::json!({
                    "version": env!("CARGO_PKG_VERSION"),
                    "build_sha": crate::ops::BUILD_SHA,
                    "image_key": crate::platform::IMAGE_KEY,
                    "arch": crate::platform::verify::this_arch(),
                })
            );
            ExitCode::SUCCESS
        }
        Some("--version" | "-V" | "version") => {
            println!("mobius {} ({} {})", env!("CARGO_PKG_VERSION"), crate::ops::BUILD_SHA, crate::ops::BUILD_DATE);
            ExitCode::SUCCESS
        }
        Some("app") => app_command(&args[1..]),
        Some("theme") => theme_command(&args[1..]),
        Some("shell") => shell_command(&args[1..]),
        Some("page") => page_command(&args[1..]),
        Some("notify") => notify_command(&args[1..]),
        Some("secret") => secret_command(&args[1..]),
        // Internal: the server's Web Push sender (see push/deliver.rs).
        Some("push-deliver") => crate::push::deliver_command(),
        Some("git-credential") => git_credential_command(&args[1..]),
        Some("media") => media_command(&args[1..]),
        Some("toolbox") => toolbox_command(&args[1..]),
        Some("schedule") => schedule_command(&args[1..]),
        Some("remind") => remind_command(&args[1..]),
        Some("help" | "--help" | "-h") => {
            print!("{HELP}");
            ExitCode::SUCCESS
        }
        Some(other) => {
            eprintln!("mobius: unknown command {other:?}; see `mobius help`");
            ExitCode::from(2)
        }
    }
}

fn serve() -> ExitCode {
    let config = match Config::from_env().and_then(|c| c.check_serve().map(|()| c)) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("mobius: {e}");
            return ExitCode::from(2);
        }
    };
    // Everything the server (and the agent it runs) creates is the owner's alone: files 0600,
    // folders 0700, whatever the shell's umask.
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::new(&config.log_filter))
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .compact()
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .max_blocking_threads(config.max_blocking_threads)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mobius: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let listener = match listen(&config).await {
            Ok(listener) => listener,
            Err(e) => {
                eprintln!("mobius: {e}");
                return ExitCode::FAILURE;
            }
        };
        match crate::app::serve(listener, config, shutdown_signal()).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("mobius: {e}");
                ExitCode::FAILURE
            }
        }
    })
}

/// The listener: the one `mobius launch` passed (`MOBIUS_LISTEN_FD`), else `MOBIUS_BIND`.
async fn listen(config: &Config) -> Result<TcpListener, String> {
    let inherited = std::env::var("MOBIUS_LISTEN_FD").ok().and_then(|fd| fd.trim().parse::<i32>().ok());
    match inherited {
        Some(fd) => mobius_sys::listener::inherited_listener(fd)
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .and_then(TcpListener::from_std)
            .map_err(|e| format!("cannot use the launcher's listener (descriptor {fd}): {e}")),
        None => TcpListener::bind(config.bind).await.map_err(|e| format!("cannot listen on {}: {e}", config.bind)),
    }
}

/// `mobius app apply <slug>`: asks the running server to apply `apps/<slug>/`, using the
/// API URL and run-bound token the agent runtime puts in the environment. Prints the
/// receipt as JSON, or the server's explanation (with compile diagnostics) and exits 1.
fn app_command(args: &[String]) -> ExitCode {
    if args.first().map(String::as_str) == Some("screenshot") {
        return screenshot_command(args, true);
    }
    let (Some("apply"), Some(slug)) = (args.first().map(String::as_str), args.get(1)) else {
        eprintln!("usage: mobius app apply <slug>\n       {APP_SHOT_USAGE}");
        return ExitCode::from(2);
    };
    let chat_id = std::env::var("MOBIUS_CHAT_ID").or_else(|_| std::env::var("CHAT_ID")).ok().filter(|v| !v.is_empty());
    let body = serde_json::json!({ "slug": slug, "chat_id": chat_id });
    // A build of a large app can take a while; the server bounds it, this only outlasts it.
    agent_request("/api/apps/apply", &body, Duration::from_secs(180), |json| {
        let app = &json["app"];
        let receipt = serde_json::json!({
            "mode": json["mode"], "app_id": app["id"], "slug": app["slug"], "name": app["name"],
            "version": app["version"], "open_path": format!("/?app={}", app["id"]), "standalone_url": app["standalone_url"],
            "warnings": json["warnings"],
        });
        println!("{}", serde_json::to_string_pretty(&receipt).unwrap_or_default());
    })
}

const APP_SHOT_USAGE: &str =
    "mobius app screenshot <slug> [--size phone|desktop] [--path /in-app/path] [--out FILE.png]";
const PAGE_SHOT_USAGE: &str =
    "mobius page screenshot <path-or-url-on-this-server> [--size phone|desktop] [--out FILE.png]";
/// How long `mobius … screenshot` waits for the server: a turn for the browser, then the shot.
const SCREENSHOT_WAIT: Duration = Duration::from_secs(60);

/// `mobius app screenshot …` (`app`) or `mobius page screenshot …`: renders it in the server's
/// screenshot browser (`POST /api/screenshots`), writes the PNG (default
/// `screenshots/<slug>-<size>.png` under the working directory) and prints its path, size,
/// whether the page settled, and its console errors and failed requests.
fn screenshot_command(args: &[String], app: bool) -> ExitCode {
    let usage = if app { APP_SHOT_USAGE } else { PAGE_SHOT_USAGE };
    let mut target = None;
    let (mut size, mut path, mut out) = ("phone".to_owned(), None, None);
    let mut rest = args.iter().skip(1);
    while let Some(arg) = rest.next() {
        let slot = match arg.as_str() {
            "--size" => &mut size,
            "--path" if app => path.insert(String::new()),
            "--out" => out.insert(String::new()),
            other if other.starts_with("--") || target.is_some() => {
                eprintln!("mobius: unexpected {other:?}\nusage: {usage}");
                return ExitCode::from(2);
            }
            other => {
                target = Some(other.to_owned());
                continue;
            }
        };
        let Some(value) = rest.next() else {
            eprintln!("mobius: {arg} needs a value\nusage: {usage}");
            return ExitCode::from(2);
        };
        *slot = value.clone();
    }
    let Some(target) = target else {
        eprintln!("usage: {usage}");
        return ExitCode::from(2);
    };
    if size != "phone" && size != "desktop" {
        eprintln!("mobius: --size is phone or desktop\nusage: {usage}");
        return ExitCode::from(2);
    }
    let body = if app {
        serde_json::json!({ "app": target, "size": size, "path": path })
    } else {
        serde_json::json!({ "url": target, "size": size })
    };
    let name: String = if app { target.clone() } else { "page".into() };
    let name: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' }).collect();
    let out = std::path::PathBuf::from(out.unwrap_or_else(|| format!("screenshots/{name}-{size}.png")));
    let mut written = Ok(());
    let code = agent_call(reqwest::Method::POST, "/api/screenshots", AgentBody::Json(&body), SCREENSHOT_WAIT, |json| {
        written = write_screenshot(&out, json);
    });
    match written {
        Ok(()) => code,
        Err(e) => {
            eprintln!("mobius: cannot write {}: {e}", out.display());
            ExitCode::FAILURE
        }
    }
}

/// Writes the answer's PNG to `out` and prints what the agent needs to know.
fn write_screenshot(out: &std::path::Path, json: &serde_json::Value) -> std::io::Result<()> {
    use base64::Engine;
    let png = base64::engine::general_purpose::STANDARD
        .decode(json["png_base64"].as_str().unwrap_or_default())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(out, &png)?;
    let shown = std::fs::canonicalize(out).unwrap_or_else(|_| out.to_path_buf());
    let list = |key: &str| -> Vec<String> {
        json[key]
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
            .unwrap_or_default()
    };
    println!(
        "screenshot: {} ({}x{} PNG, {} bytes; {} of {})",
        shown.display(),
        json["width"],
        json["height"],
        png.len(),
        json["size"].as_str().unwrap_or("phone"),
        json["target"].as_str().unwrap_or("?")
    );
    let took = json["elapsed_ms"].as_u64().unwrap_or(0) as f64 / 1000.0;
    if json["settled"].as_bool() == Some(true) {
        println!("settled: yes ({took:.1} s)");
    } else {
        println!("settled: NO ({took:.1} s)");
    }
    for note in list("notes") {
        println!("note: {note}");
    }
    for (key, title) in [("console", "console errors and warnings"), ("failed_requests", "failed requests")] {
        let lines = list(key);
        if lines.is_empty() {
            println!("{title}: none");
        } else {
            println!("{title} ({}):", lines.len());
            for line in lines {
                println!("  {line}");
            }
        }
    }
    println!("Look at the PNG before saying it is done (Claude: Read the file; Codex: view_image).");
    Ok(())
}

/// `mobius page screenshot …`.
fn page_command(args: &[String]) -> ExitCode {
    if args.first().map(String::as_str) != Some("screenshot") {
        eprintln!("usage: {PAGE_SHOT_USAGE}");
        return ExitCode::from(2);
    }
    screenshot_command(args, false)
}

/// `mobius toolbox [--json] [--require]`: what `agent::toolbox` finds on this `PATH`.
fn toolbox_command(args: &[String]) -> ExitCode {
    let (json, require) = (args.iter().any(|a| a == "--json"), args.iter().any(|a| a == "--require"));
    if let Some(other) = args.iter().find(|a| *a != "--json" && *a != "--require") {
        eprintln!("mobius toolbox: unknown argument {other}\nusage: mobius toolbox [--json] [--require]");
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mobius toolbox: {e}");
            return ExitCode::FAILURE;
        }
    };
    let path = std::env::var("PATH").unwrap_or_default();
    let home = std::env::var_os("HOME").map_or_else(std::env::temp_dir, std::path::PathBuf::from);
    let tools = runtime.block_on(crate::agent::toolbox::probe(&path, &home));
    if json {
        println!("{}", serde_json::to_string_pretty(&tools).unwrap_or_default());
    } else {
        for t in &tools {
            let state = match (&t.command, &t.version) {
                (Some(c), Some(v)) => format!("{v} ({c})"),
                (Some(c), None) => format!("installed, no version ({c})"),
                (None, _) => "not installed".to_owned(),
            };
            println!("{:<10} {:<28} {}", t.name, state, t.purpose);
        }
    }
    let missing: Vec<&str> = tools.iter().filter(|t| t.version.is_none()).map(|t| t.name).collect();
    if require && !missing.is_empty() {
        eprintln!("mobius toolbox: missing or not answering: {}", missing.join(", "));
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// `mobius theme apply`: asks the running server to check and serve `DATA_DIR/theme/theme.css`.
/// Prints the served version, or the server's refusal (line, column, why) and exits 1.
fn theme_command(args: &[String]) -> ExitCode {
    if args.first().map(String::as_str) != Some("apply") || args.len() > 1 {
        eprintln!("usage: mobius theme apply");
        return ExitCode::from(2);
    }
    agent_request("/api/theme/apply", &serde_json::json!({}), Duration::from_secs(30), |json| {
        let receipt = serde_json::json!({
            "applied": true, "version": json["version"], "changed": json["changed"], "stock": json["stock"],
        });
        println!("{}", serde_json::to_string_pretty(&receipt).unwrap_or_default());
    })
}

/// `mobius shell rebuild`: asks the running server to build `DATA_DIR/platform/shell/` and
/// serve it. Prints the new build, or the build's output and exits 1 (the current shell stays).
fn shell_command(args: &[String]) -> ExitCode {
    if args.first().map(String::as_str) != Some("rebuild") || args.len() > 1 {
        eprintln!("usage: mobius shell rebuild");
        return ExitCode::from(2);
    }
    // The build's own limit, and room for the copy and the switch.
    let wait = crate::shell::build::BUILD_TIMEOUT + Duration::from_secs(60);
    agent_request("/api/shell/rebuild", &serde_json::json!({}), wait, |json| {
        let receipt = serde_json::json!({
            "rebuilt": true,
            "build": json["build"]["n"],
            "note": "Served now. Open devices offer a reload; a shell that does not start on the owner's device is rolled back.",
        });
        println!("{}", serde_json::to_string_pretty(&receipt).unwrap_or_default());
        if let Some(output) = json["output"].as_str().filter(|o| !o.trim().is_empty()) {
            eprintln!("{output}");
        }
    })
}

/// `mobius notify <title> <body> [--chat [ID]] [--app ID]`: a notification to the owner's
/// devices through `POST /api/notifications/send`, attributed to the agent's chat. `--chat`
/// links it to this chat (or chat ID), `--app` to an app.
fn notify_command(args: &[String]) -> ExitCode {
    const USAGE: &str = "usage: mobius notify <title> <body> [--chat [ID]] [--app ID]";
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let mut words = Vec::new();
    let mut target = None;
    let mut rest = args.iter().peekable();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--chat" => {
                let id = match rest.peek() {
                    Some(next) if !next.starts_with("--") && words.len() >= 2 => rest.next().cloned(),
                    _ => env("MOBIUS_CHAT_ID").or_else(|| env("CHAT_ID")),
                };
                let Some(id) = id else {
                    eprintln!("mobius: --chat needs a chat id outside an agent turn\n{USAGE}");
                    return ExitCode::from(2);
                };
                target = Some(format!("/shell/?chat={id}"));
            }
            "--app" => {
                let Some(id) = rest.next() else {
                    eprintln!("{USAGE}");
                    return ExitCode::from(2);
                };
                target = Some(format!("/shell/?app={id}"));
            }
            other if other.starts_with("--") => {
                eprintln!("mobius: unknown option {other:?}\n{USAGE}");
                return ExitCode::from(2);
            }
            word => words.push(word.to_owned()),
        }
    }
    let (Some(title), body, true) = (words.first(), words.get(1), words.len() <= 2) else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let body = serde_json::json!({ "title": title, "body": body, "target": target });
    agent_request("/api/notifications/send", &body, Duration::from_secs(30), |json| {
        println!("notified ({})", json["id"].as_str().unwrap_or("sent"));
    })
}

/// How long `mobius secret request` / `wait` wait for the owner before handing back (the
/// agent can wait again with `mobius secret wait`).
const SECRET_WAIT_TOTAL: Duration = Duration::from_secs(540);

/// `mobius secret request <NAME> --app <SLUG> [--reason TEXT]` and `mobius secret wait <ID>`:
/// secure input (`/api/secure-inputs`). The owner types the value into a card in the chat; this
/// prints whether it was stored as the app's secret NAME, never the value.
fn secret_command(args: &[String]) -> ExitCode {
    const USAGE: &str = "usage: mobius secret request <NAME> --app <SLUG> [--reason TEXT]\n       mobius secret request [NAME] --connector <ID|NAME> [--reason TEXT]\n       mobius secret wait <ID>";
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let Some(chat) = env("MOBIUS_CHAT_ID").or_else(|| env("CHAT_ID")) else {
        eprintln!("mobius: MOBIUS_CHAT_ID is not set (this command runs inside an agent turn)");
        return ExitCode::from(2);
    };
    let id = match args.first().map(String::as_str) {
        Some("wait") if args.len() == 2 => args[1].clone(),
        Some("request") => {
            let (mut name, mut app, mut connector, mut reason) = (None, None, None, None);
            let mut rest = args[1..].iter();
            while let Some(arg) = rest.next() {
                match arg.as_str() {
                    "--app" => app = rest.next().cloned(),
                    "--connector" => connector = rest.next().cloned(),
                    "--reason" => reason = rest.next().cloned(),
                    other if other.starts_with("--") => {
                        eprintln!("mobius: unknown option {other:?}\n{USAGE}");
                        return ExitCode::from(2);
                    }
                    word if name.is_none() => name = Some(word.to_owned()),
                    _ => {
                        eprintln!("{USAGE}");
                        return ExitCode::from(2);
                    }
                }
            }
            let body = match (name, app, connector) {
                (Some(name), Some(app), None) => serde_json::json!({ "name": name, "app": app, "reason": reason }),
                (name, None, Some(connector)) => {
                    serde_json::json!({ "name": name, "connector": connector, "reason": reason })
                }
                _ => {
                    eprintln!("{USAGE}");
                    return ExitCode::from(2);
                }
            };
            let mut id = None;
            let path = format!("/api/secure-inputs/{chat}");
            let code = agent_request(&path, &body, Duration::from_secs(30), |json| {
                id = json["id"].as_str().map(str::to_owned);
                eprintln!("asked the owner (a card in this chat); waiting for them to enter it…");
            });
            match id {
                Some(id) => id,
                None => return code,
            }
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let started = std::time::Instant::now();
    let path = format!("/api/secure-inputs/{chat}/{id}/wait");
    loop {
        let mut status = None;
        let code = agent_call(reqwest::Method::GET, &path, AgentBody::Empty, Duration::from_secs(70), |json| {
            status = Some((
                json["status"].as_str().unwrap_or_default().to_owned(),
                json["name"].as_str().unwrap_or_default().to_owned(),
                json["app_id"].as_i64(),
                json["connector_id"].as_i64(),
            ));
        });
        let Some((status, name, app_id, connector_id)) = status else { return code };
        match status.as_str() {
            "stored" => {
                let place = match (app_id, connector_id) {
                    (Some(app), _) => format!("app {app}'s secret {name}"),
                    (None, Some(connector)) => format!("connector {connector}'s key (it reconnected with it)"),
                    (None, None) => name.clone(),
                };
                println!(
                    "stored: the owner entered {name}; it is now {place}, sealed on the server. You never see the value: do not ask the owner to paste it in the chat."
                );
                return ExitCode::SUCCESS;
            }
            "declined" => {
                println!("declined: the owner chose not to give {name}. Do not ask again unless they say so.");
                return ExitCode::from(3);
            }
            "pending" if started.elapsed() < SECRET_WAIT_TOTAL => {}
            "pending" => {
                println!("still waiting for the owner to enter {name}; run `mobius secret wait {id}` to keep waiting.");
                return ExitCode::from(4);
            }
            _ => {
                println!("expired: the request for {name} ended unanswered.");
                return ExitCode::from(3);
            }
        }
    }
}

/// Longest credential request git writes on the helper's stdin.
const MAX_CREDENTIAL_INPUT_BYTES: u64 = 64 * 1024;

/// `mobius git-credential get|store|erase`: git's credential-helper protocol (`key=value` lines
/// on stdin up to a blank line) for GitHub over https. `get` asks `POST /api/github/credential`
/// with the turn's own token and prints `username=`/`password=` for an allowed repository, or
/// `quit=1` (git neither prompts nor tries another helper) with the server's reason on stderr.
/// `erase` tells the server GitHub refused the credential; `store` keeps nothing. The token
/// never touches a file, an argument or the environment.
fn git_credential_command(args: &[String]) -> ExitCode {
    use std::io::{Read, Write};
    const USAGE: &str = "usage: mobius git-credential get|store|erase  (git's credential helper)";
    let Some(operation) = args.first().filter(|_| args.len() == 1).map(String::as_str) else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let mut input = String::new();
    if std::io::stdin().take(MAX_CREDENTIAL_INPUT_BYTES).read_to_string(&mut input).is_err() {
        eprintln!("mobius: git's credential request is not text");
        return ExitCode::from(2);
    }
    let mut fields = serde_json::Map::new();
    for line in input.lines().take_while(|l| !l.is_empty()) {
        if let Some((key, value)) = line.split_once('=')
            && matches!(key, "protocol" | "host" | "path")
        {
            fields.insert(key.to_owned(), serde_json::Value::String(value.to_owned()));
        }
    }
    match operation {
        // Nothing is kept on this side: the server answers each time.
        "store" => return ExitCode::SUCCESS,
        "get" | "erase" => {}
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    }
    fields.insert("operation".to_owned(), serde_json::Value::String(operation.to_owned()));
    let body = serde_json::Value::Object(fields);
    let mut answer = None;
    // A refusal is printed on stderr by `agent_request` (git shows it); the exit status of a
    // helper means nothing to git, what it prints does.
    let _refused = agent_request("/api/github/credential", &body, Duration::from_secs(30), |json| {
        answer = json["password"]
            .as_str()
            .map(|p| (json["username"].as_str().unwrap_or("x-access-token").to_owned(), p.to_owned()));
    });
    if operation == "erase" {
        return ExitCode::SUCCESS;
    }
    let mut out = std::io::stdout().lock();
    let written = match answer {
        Some((user, password)) if !user.contains('\n') && !password.contains('\n') => {
            writeln!(out, "username={user}\npassword={password}")
        }
        _ => writeln!(out, "quit=1"),
    };
    match written.and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

/// `mobius media publish <file> [--alt TEXT]`: sends an image the agent made (or found) to its
/// chat through `POST /api/chats/{id}/media` (the CLI reads the file, inside the agent's
/// sandbox; the server never opens a path it is given). Prints `{source_path, media_path,
/// media_url, embed}`; the reply shows the image when it contains `embed`.
fn media_command(args: &[String]) -> ExitCode {
    const USAGE: &str = "usage: mobius media publish <file> [--alt TEXT]";
    let (Some("publish"), Some(file)) = (args.first().map(String::as_str), args.get(1)) else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let alt = match args.get(2..).unwrap_or_default() {
        [] => None,
        [flag, text] if flag == "--alt" => Some(text.clone()),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let Some(chat_id) = env("MOBIUS_CHAT_ID").or_else(|| env("CHAT_ID")) else {
        eprintln!("mobius: MOBIUS_CHAT_ID is not set (this command runs inside an agent turn)");
        return ExitCode::from(2);
    };
    let path = std::path::Path::new(file);
    let bytes = match std::fs::metadata(path) {
        Ok(meta) if meta.len() > MAX_PUBLISHED_IMAGE_BYTES => {
            eprintln!("mobius: {file} is larger than {} MiB", MAX_PUBLISHED_IMAGE_BYTES >> 20);
            return ExitCode::FAILURE;
        }
        Ok(_) => std::fs::read(path),
        Err(e) => Err(e),
    };
    let bytes = match bytes {
        Ok(bytes) => bytes,
        Err(e) => {
            eprintln!("mobius: cannot read {file}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let source = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("image").to_owned();
    let mut query = vec![("name", name)];
    if let Some(alt) = alt {
        query.push(("alt", alt));
    }
    let url = format!("/api/chats/{chat_id}/media");
    let request = AgentBody::Bytes { bytes, query };
    agent_call(reqwest::Method::POST, &url, request, Duration::from_secs(60), |json| {
        let receipt = serde_json::json!({
            "source_path": source.display().to_string(), "media_path": json["media_path"],
            "media_url": json["media_url"], "embed": json["embed"],
        });
        println!("{}", serde_json::to_string_pretty(&receipt).unwrap_or_default());
    })
}

/// Largest image `mobius media publish` sends (the server's own limit may be lower).
const MAX_PUBLISHED_IMAGE_BYTES: u64 = 64 * 1024 * 1024;

/// What an agent command sends.
enum AgentBody<'a> {
    Empty,
    Json(&'a serde_json::Value),
    /// Raw bytes with query parameters.
    Bytes {
        bytes: Vec<u8>,
        query: Vec<(&'static str, String)>,
    },
}

/// A schedule's next run as the owner reads it: local time in its zone.
fn next_run_text(schedule: &serde_json::Value) -> String {
    let zone = schedule["zone"].as_str().unwrap_or("UTC");
    match schedule["next_due_at"].as_i64().and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok()) {
        Some(at) => match jiff::tz::TimeZone::get(zone) {
            Ok(tz) => at.to_zoned(tz).strftime("%a %Y-%m-%d %H:%M %Z").to_string(),
            Err(_) => at.to_string(),
        },
        None if schedule["paused_at"].is_i64() => {
            format!("paused ({})", schedule["paused_reason"].as_str().unwrap_or("by the owner"))
        }
        None if schedule["finished_at"].is_i64() => "done".to_owned(),
        None => "on demand".to_owned(),
    }
}

/// `mobius schedule add|list|remove`: the agent's scheduled prompts (`/api/schedules`).
fn schedule_command(args: &[String]) -> ExitCode {
    const USAGE: &str = "usage: mobius schedule add --cron \"<m h dom mon dow>\" [--tz ZONE] [--new-chat] [--name NAME] [--skip-missed] <prompt>\n       mobius schedule list\n       mobius schedule remove <id>";
    match args.first().map(String::as_str) {
        Some("list") => {
            agent_call(reqwest::Method::GET, "/api/schedules", AgentBody::Empty, Duration::from_secs(30), |json| {
                let schedules = json["schedules"].as_array().cloned().unwrap_or_default();
                if schedules.is_empty() {
                    println!("no schedules");
                }
                for s in schedules {
                    let when = s["cron"].as_str().map_or_else(|| "once".to_owned(), |c| format!("cron \"{c}\""));
                    println!(
                        "#{} {} [{}] {when} · next: {} · last: {}",
                        s["id"],
                        s["name"].as_str().unwrap_or_default(),
                        s["kind"].as_str().unwrap_or_default(),
                        next_run_text(&s),
                        s["last_status"].as_str().unwrap_or("never ran"),
                    );
                }
            })
        }
        Some("remove") => {
            let Some(id) = args.get(1).filter(|id| id.trim_start_matches('#').parse::<i64>().is_ok()) else {
                eprintln!("{USAGE}");
                return ExitCode::from(2);
            };
            let path = format!("/api/schedules/{}", id.trim_start_matches('#'));
            agent_call(reqwest::Method::DELETE, &path, AgentBody::Empty, Duration::from_secs(30), |_| {
                println!("removed")
            })
        }
        Some("add") => {
            let mut body = serde_json::Map::new();
            let mut words = Vec::new();
            let mut rest = args[1..].iter();
            while let Some(arg) = rest.next() {
                let key = match arg.as_str() {
                    "--cron" => "cron",
                    "--tz" | "--timezone" => "timezone",
                    "--name" => "name",
                    "--new-chat" => {
                        body.insert("new_chat".into(), true.into());
                        continue;
                    }
                    "--skip-missed" => {
                        body.insert("missed".into(), "skip".into());
                        continue;
                    }
                    other if other.starts_with("--") => {
                        eprintln!("mobius: unknown option {other:?}\n{USAGE}");
                        return ExitCode::from(2);
                    }
                    word => {
                        words.push(word.to_owned());
                        continue;
                    }
                };
                let Some(value) = rest.next() else {
                    eprintln!("mobius: {arg} needs a value\n{USAGE}");
                    return ExitCode::from(2);
                };
                body.insert(key.into(), value.clone().into());
            }
            if words.is_empty() || !body.contains_key("cron") {
                eprintln!("{USAGE}");
                return ExitCode::from(2);
            }
            body.insert("prompt".into(), words.join(" ").into());
            let body = serde_json::Value::Object(body);
            agent_call(
                reqwest::Method::POST,
                "/api/schedules",
                AgentBody::Json(&body),
                Duration::from_secs(30),
                |json| {
                    println!(
                        "scheduled #{} \"{}\" · next: {}",
                        json["id"],
                        json["name"].as_str().unwrap_or_default(),
                        next_run_text(json)
                    );
                },
            )
        }
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// `mobius remind (--in SPAN | --at TIME) <text>`: the text comes back into this chat as a turn
/// at that time (`POST /api/schedules` with `in`/`at`; times are the owner's zone).
fn remind_command(args: &[String]) -> ExitCode {
    const USAGE: &str = "usage: mobius remind (--in 2h | --at 07:30 | --at 2025-06-01T07:30) <text>";
    let mut body = serde_json::Map::new();
    let mut words = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let key = match arg.as_str() {
            "--in" => "in",
            "--at" => "at",
            other if other.starts_with("--") => {
                eprintln!("mobius: unknown option {other:?}\n{USAGE}");
                return ExitCode::from(2);
            }
            word => {
                words.push(word.to_owned());
                continue;
            }
        };
        let Some(value) = rest.next() else {
            eprintln!("mobius: {arg} needs a value\n{USAGE}");
            return ExitCode::from(2);
        };
        body.insert(key.into(), value.clone().into());
    }
    if words.is_empty() || (body.contains_key("in") == body.contains_key("at")) {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    }
    let text = words.join(" ");
    body.insert("name".into(), format!("Reminder: {}", text.chars().take(60).collect::<String>()).into());
    body.insert("prompt".into(), format!("Reminder (you set it earlier in this chat): {text}").into());
    let body = serde_json::Value::Object(body);
    agent_call(reqwest::Method::POST, "/api/schedules", AgentBody::Json(&body), Duration::from_secs(30), |json| {
        println!("reminder #{} set for {}", json["id"], next_run_text(json));
    })
}

/// POSTs `body` to the running server with the agent's run-bound token (from the environment
/// the agent runtime sets), waiting at most `timeout`; prints the server's explanation (with any
/// compile diagnostics) on failure and exits 1.
fn agent_request(
    path: &str,
    body: &serde_json::Value,
    timeout: Duration,
    on_success: impl FnOnce(&serde_json::Value),
) -> ExitCode {
    agent_call(reqwest::Method::POST, path, AgentBody::Json(body), timeout, on_success)
}

/// Calls the running server as [`agent_request`] does, with any method and body.
fn agent_call(
    method: reqwest::Method,
    path: &str,
    body: AgentBody<'_>,
    timeout: Duration,
    on_success: impl FnOnce(&serde_json::Value),
) -> ExitCode {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let Some(base) = env("MOBIUS_API_URL").or_else(|| env("API_BASE_URL")) else {
        eprintln!("mobius: MOBIUS_API_URL is not set (this command runs inside an agent turn)");
        return ExitCode::from(2);
    };
    let Some(token) = env("MOBIUS_AGENT_TOKEN").or_else(|| env("AGENT_TOKEN")) else {
        eprintln!("mobius: MOBIUS_AGENT_TOKEN is not set (this command runs inside an agent turn)");
        return ExitCode::from(2);
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mobius: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let client = reqwest::Client::builder().timeout(timeout).build().unwrap_or_default();
        let url = format!("{}{path}", base.trim_end_matches('/'));
        let request = client.request(method, url).bearer_auth(token);
        let request = match body {
            AgentBody::Empty => request,
            AgentBody::Json(json) => request.json(json),
            AgentBody::Bytes { bytes, query } => {
                request.query(&query).header(reqwest::header::CONTENT_TYPE, "application/octet-stream").body(bytes)
            }
        };
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => {
                eprintln!("mobius: cannot reach the server at {base}: {e}");
                return ExitCode::FAILURE;
            }
        };
        let status = response.status();
        let json: serde_json::Value = response.json().await.unwrap_or_default();
        if status.is_success() {
            on_success(&json);
            ExitCode::SUCCESS
        } else {
            eprintln!(
                "failed ({}): {}\n{}",
                status.as_u16(),
                json["code"].as_str().unwrap_or("error"),
                json["message"].as_str().unwrap_or("no details")
            );
            ExitCode::FAILURE
        }
    })
}

/// Resolves on SIGINT or SIGTERM, and arms a watchdog that ends the process if the
/// graceful shutdown takes too long.
async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for SIGTERM");
            let _ = ctrl_c.await;
            return arm_watchdog();
        }
    };
    tokio::select! {
        _ = ctrl_c => {}
        _ = term.recv() => {}
    }
    arm_watchdog();
}

fn arm_watchdog() {
    std::thread::spawn(|| {
        std::thread::sleep(HARD_EXIT_AFTER_SIGNAL);
        eprintln!("mobius: shutdown took longer than {HARD_EXIT_AFTER_SIGNAL:?}; exiting");
        std::process::exit(1);
    });
}
