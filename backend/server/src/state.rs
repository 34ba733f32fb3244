//! The shared state of the routes ([`AppState`]), built once at start-up.
//!
//! Runtime code does not take `AppState`: turns get [`Agents`], app builds get [`Apps`],
//! storage a [`Store`]; each is built here from the handles it needs and shared with the
//! routes through its field.

use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use axum::extract::FromRef;
use tokio::sync::watch;
use tracing::{Instrument, info_span, warn};

use crate::agent::notes::NoteRunner;
use crate::agent::registry::Turns;
use crate::agent::sandbox::{Sandbox, SandboxState, Signals};
use crate::agent::turn::{Agents, TurnLimits};
use crate::apps::apply::Apps;
use crate::apps::proxy::client::Proxy;
use crate::auth::jwt::Keys;
use crate::auth::limits::LoginLimiter;
use crate::auth::owner::OwnerCache;
use crate::auth::password::Passwords;
use crate::chats::ResponseCache;
use crate::config::Config;
use crate::db::{self, Db};
use crate::error::Result;
use crate::events::Hub;
use crate::locks::KeyedLocks;
use crate::ops::Boot;
use crate::providers::Providers;
use crate::push::Push;
use crate::recall::notes::NoteSignals;
use crate::skills::Skills;
use crate::storage::Store;
use crate::telemetry::reports::ClientReports;
use crate::uploads::Uploads;
use crate::writer::{WriteCommand, WriterHandle};

/// Everything handlers share. Cheap to clone.
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

/// The contents of [`AppState`].
pub struct Inner {
    pub config: Config,
    pub db: Db,
    pub writer: WriterHandle,
    pub hub: Arc<Hub>,
    pub keys: Keys,
    pub passwords: Passwords,
    pub login_limits: LoginLimiter,
    pub owner: Arc<OwnerCache>,
    /// Signed-in devices' live sessions (owner tokens name one).
    pub sessions: Arc<crate::auth::sessions::Sessions>,
    /// The pending pairing code of a signed-in device.
    pub pairing: Arc<crate::auth::pairing::Pairing>,
    /// The owner's device credentials, in memory (the listener's reserve for known devices).
    pub devices: Arc<crate::auth::known::KnownDevices>,
    pub boot: Arc<Boot>,
    /// Flips to `true` when shutdown begins; long-lived streams end on it.
    pub shutdown: watch::Receiver<bool>,
    /// The agent CLIs and their credentials.
    pub providers: Arc<Providers>,
    /// Turns: what they use, and the running one of each chat.
    pub agents: Arc<Agents>,
    /// Per-chat decision locks (send / stop / answer / delete; the scheduler's sends too).
    pub chat_locks: Arc<KeyedLocks>,
    /// Serialized chat list and chat pages between writer commits.
    pub response_cache: ResponseCache,
    /// App registry rows between writer commits (token checks, storage authorisation).
    pub app_rows: crate::db::apps::RowCache,
    /// De-duplication and rate limit of browser error reports.
    pub client_reports: ClientReports,
    /// App builds: sources, bundles, the bundler and the per-app locks.
    pub apps: Arc<Apps>,
    /// Locks and quota accounting of app and shared storage.
    pub storage: Arc<Store>,
    /// The app proxy's client and concurrency limit.
    pub proxy: Proxy,
    /// Connectors' outbound client and the broker's concurrency limit.
    pub connectors: crate::connectors::Connectors,
    /// The agent's open requests for a secret (secure-input cards).
    pub secure_inputs: crate::chats::secure_requests::SecureInputs,
    /// Review and icon limits, update-check state and the store's catalog cache.
    pub lifecycle: crate::apps::lifecycle::limits::Lifecycle,
    /// Notifications: the centre, Web Push and its worker.
    pub push: Arc<Push>,
    /// Open event streams, capped per client address and in all.
    pub streams: Arc<crate::events::StreamLimits>,
    /// The built-in and agent-written skills.
    pub skills: Arc<Skills>,
    /// The platform's theme: the one served, its versions.
    pub theme: Arc<crate::theme::Theme>,
    /// The shell: what is served, its builds, rebuilds.
    pub shell: Arc<crate::shell::Shell>,
    /// Chat files: the owner's attachments and the agent's images.
    pub uploads: Arc<Uploads>,
    /// App jobs and scheduled agent turns (its loop starts once the server is ready).
    pub schedules: Arc<crate::schedules::Scheduler>,
    /// The screenshot browser's slot (`mobius app screenshot`).
    pub screenshots: crate::browser::Screenshots,
    /// Platform updates: the feed's last answer, an apply's progress, the launcher.
    pub updates: crate::platform::Updates,
    /// The frame bootstrap inlined into app frame documents, read on first use.
    frame_bootstrap: OnceLock<crate::apps::bootstrap::FrameBootstrap>,
}

impl Inner {
    /// The frame bootstrap (`app-frame.js`) and its version key, read once.
    pub fn frame_bootstrap(&self) -> &crate::apps::bootstrap::FrameBootstrap {
        self.frame_bootstrap.get_or_init(|| crate::apps::bootstrap::FrameBootstrap::load(&self.config.frontend_dir))
    }
}

impl Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl FromRef<AppState> for Arc<Boot> {
    fn from_ref(state: &AppState) -> Self {
        state.boot.clone()
    }
}

impl FromRef<AppState> for crate::config::TrustedProxies {
    fn from_ref(state: &AppState) -> Self {
        state.config.trusted_proxies.clone()
    }
}

impl AppState {
    /// Opens the database, runs migrations, starts the writer, closes what the last run left
    /// open, and builds every runtime part.
    pub async fn build(
        mut config: Config,
        api_url: String,
        boot: Arc<Boot>,
        shutdown: watch::Receiver<bool>,
    ) -> Result<(Self, tokio::task::JoinHandle<()>)> {
        create_private_dir(&config.data_dir)?;
        config.data_dir = std::fs::canonicalize(&config.data_dir)?;
        let path = config.database_path();
        let mut conn = db::open_writer(&path).await?;
        boot.step("open the database");
        db::migrate(&mut conn).await?;
        boot.step("migrations");
        // Nothing is read through the pool during start-up: its first connection opens when
        // something first reads (each one costs a schema parse, ~1 ms at boot).
        let db = db::open_read_pool(&path)?;
        let keys = Keys::load_or_create(&config)?;
        let hub = Arc::new(Hub::default());
        // Start-up's reads go through the writer's connection before the writer takes it.
        let owner = Arc::new(OwnerCache::default());
        if let Some(row) = db::owner::get(&mut conn).await? {
            owner.set(row.username, row.token_epoch);
        }
        let sessions = Arc::new(crate::auth::sessions::Sessions::default());
        sessions.reload(&mut conn).await?;
        let devices = Arc::new(crate::auth::known::KnownDevices::default());
        devices.reload(&mut conn).await?;
        let secrets = db::apps::all_secrets(&mut conn).await?;
        let (writer, task) = WriterHandle::spawn(conn, hub.clone());
        boot.step("keys + writer + owner");
        if !crate::agent::process::become_subreaper() {
            warn!(
                "the kernel refused to make the server a child subreaper; escaped agent processes are found only while their parents live"
            );
        }
        let providers = Arc::new(Providers::new(&config, &config.data_dir, api_url));
        let reaper = providers.trees().clone();
        let orphans = tokio::task::spawn_blocking(move || reaper.reap_orphans()).await.unwrap_or(0);
        if orphans > 0 {
            warn!(orphans, "killed agent processes left behind by the previous run");
        }
        boot.step("orphaned agents");
        let resealed = crate::apps::sealed::reseal_legacy(secrets, &writer, &keys).await?;
        if resealed > 0 {
            tracing::info!(resealed, "app secrets sealed again under the data key");
        }
        boot.step("legacy secrets");
        // Credentials of the old layout (in the CLIs' folders, which the agent can write) move
        // to the server's own folder before anything reads them.
        if let Err(e) = providers.credentials.migrate() {
            warn!(error = %e, "the credentials of the old layout could not be moved");
        }
        boot.step("providers");
        // Cut turns of chats whose provider is connected continue by themselves.
        let connected: Vec<_> =
            crate::agent::ProviderKind::ALL.into_iter().filter(|k| providers.status(*k).connected).collect();
        let interrupted = writer.call(|ack| WriteCommand::ReconcileStartup { resume: connected, ack }).await?;
        if !interrupted.is_empty() {
            warn!(
                chats = interrupted.len(),
                "turns interrupted by the last shutdown were closed; their chats can resume"
            );
        }
        boot.step("interrupted turns");
        let sandbox = Sandbox::detect(
            config.agent_sandbox,
            config.agent_landlock_max_abi,
            &config.data_dir,
            vec![config.skill_dir.clone(), config.app_node_modules.clone(), config.app_runtime_dir.clone()],
        );
        match sandbox.state() {
            SandboxState::Landlock { abi, signals: Signals::Scoped } => {
                tracing::info!(abi, "agent sandbox: Landlock, signals kept within each agent's processes")
            }
            SandboxState::Landlock { abi, signals: Signals::Open { reason } } => {
                warn!(abi, %reason, "agent sandbox: Landlock, but the agent can signal the server and other processes")
            }
            SandboxState::Off { reason } => {
                warn!(%reason, "agent sandbox OFF: the agent can read every file the server can")
            }
        }
        boot.step("sandbox");
        let storage = Store::new(config.app_quota_bytes);
        let skills = Arc::new(Skills::new(&config.skill_dir.join("skills"), config.data_dir.join("skills")));
        skills.watch();
        boot.step("skills");
        let theme = {
            let (data_dir, hub) = (config.data_dir.clone(), hub.clone());
            let loaded = tokio::task::spawn_blocking(move || crate::theme::Theme::load(&data_dir, hub)).await;
            Arc::new(loaded.map_err(|e| crate::error::Error::Internal(format!("theme: {e}")))??)
        };
        boot.step("theme");
        let notes = match config.note_idle {
            Some(idle) => {
                let (notes, receiver) = NoteSignals::channel();
                let runner = NoteRunner {
                    read: db.read.clone(),
                    writer: writer.clone(),
                    providers: providers.clone(),
                    data_dir: config.data_dir.clone(),
                    sandbox: sandbox.clone(),
                    idle,
                };
                tokio::spawn(runner.run(receiver).instrument(info_span!("notes")));
                notes
            }
            None => NoteSignals::off(),
        };
        let push = Arc::new(Push::start(&config, db.clone(), writer.clone()));
        let uploads = Arc::new(Uploads::new(
            &config.data_dir,
            config.upload_max_file_bytes,
            config.upload_quota_bytes,
            db.read.clone(),
            writer.clone(),
        ));
        uploads.sweep_staging().await;
        boot.step("notes + push + uploads");
        let (schedule_ends, schedule_ends_rx) = crate::agent::schedule_ends::TurnEnds::channel();
        let agents = Arc::new(Agents {
            writer: writer.clone(),
            read: db.read.clone(),
            providers: providers.clone(),
            keys: keys.clone(),
            owner: owner.clone(),
            push: push.clone(),
            skill_dir: config.skill_dir.clone(),
            data_dir: config.data_dir.clone(),
            turns: Turns::default(),
            notes,
            skills: skills.clone(),
            schedule_ends,
            sandbox,
            limits: TurnLimits { max_duration: config.agent_turn_max, max_silence: config.agent_silence_max },
            overflow_dir: config.data_dir.join(crate::agent::fold::OVERFLOW_DIR),
            uploads: uploads.clone(),
            warm: crate::agent::warm::WarmPool::new(config.agent_warm_max, config.agent_warm_idle),
            resumer: crate::agent::park::Resumer::default(),
            slots: crate::agent::slots::Slots::new(config.agent_max_running),
        });
        let shell = {
            let builder =
                crate::shell::build::Builder { sandbox: agents.sandbox.clone(), providers: providers.clone() };
            let (config, hub, push) = (config.clone(), hub.clone(), push.clone());
            let loaded =
                tokio::task::spawn_blocking(move || crate::shell::Shell::load(&config, hub, builder, push)).await;
            Arc::new(loaded.map_err(|e| crate::error::Error::Internal(format!("shell: {e}")))??)
        };
        boot.step("shell");
        let apps = Arc::new(Apps::new(
            config.data_dir.clone(),
            config.app_runtime_dir.clone(),
            config.app_node_modules.clone(),
            db.read.clone(),
            writer.clone(),
            storage.clone(),
        ));
        // Repositories apps kept in their folders (where the agent could write them) move to
        // the server's own `app-repos/` before anything opens one.
        let migrating = apps.clone();
        match tokio::task::spawn_blocking(move || migrating.migrate_legacy_repos()).await {
            Ok(Ok(0)) => {}
            Ok(Ok(moved)) => tracing::info!(moved, "app repositories moved out of the agent's folders"),
            Ok(Err(e)) => warn!(error = %e, "app repositories could not be moved"),
            Err(e) => warn!(error = %e, "app repositories could not be moved"),
        }
        let chat_locks = Arc::new(KeyedLocks::default());
        let schedules = Arc::new(crate::schedules::Scheduler::new(
            agents.clone(),
            chat_locks.clone(),
            hub.clone(),
            schedule_ends_rx,
            config.job_timeout,
        ));
        boot.step("agents + apps");
        schedules.reconcile().await?;
        boot.step("schedules");
        let login_limits = LoginLimiter::new(config.login.clone());
        let streams = crate::events::StreamLimits::new(config.net.max_streams, config.net.max_streams_per_address);
        let updates = crate::platform::Updates::new(&config.data_dir, config.updates.clone());
        let connectors = crate::connectors::Connectors::new(config.connectors_allow_loopback);
        let screenshots = crate::browser::Screenshots::new(config.chromium_bin.clone(), &config.data_dir);
        let state = Self(Arc::new(Inner {
            updates,
            config,
            db,
            writer,
            hub,
            keys,
            passwords: Passwords::default(),
            login_limits,
            owner,
            sessions,
            pairing: Arc::default(),
            devices,
            boot,
            shutdown,
            providers,
            agents,
            chat_locks,
            response_cache: ResponseCache::default(),
            app_rows: crate::db::apps::RowCache::default(),
            client_reports: ClientReports::default(),
            apps,
            storage,
            proxy: Proxy::default(),
            connectors,
            secure_inputs: Default::default(),
            lifecycle: crate::apps::lifecycle::limits::Lifecycle::default(),
            push,
            streams,
            skills,
            theme,
            shell,
            uploads,
            schedules,
            screenshots,
            frame_bootstrap: OnceLock::new(),
        }));
        Ok((state, task))
    }

    /// Starts the loops that read on their own from the start (parked chats' resumption, the
    /// tombstone purge): once the server is ready, so their first reads never open read-pool
    /// connections while start-up waits for the core.
    pub fn start_background(&self) {
        tokio::spawn(crate::agent::resume::run(self.agents.clone()).instrument(info_span!("resume")));
        tokio::spawn(
            crate::housekeeping::run(
                self.writer.clone(),
                self.apps.clone(),
                self.uploads.clone(),
                self.config.purge_every,
                self.shutdown.clone(),
            )
            .instrument(info_span!("housekeeping")),
        );
    }
}

/// Creates `dir` (and missing parents) as `0700`, and takes group and other access away from
/// an existing one: everything in it is the owner's alone (files are created `0600`, see
/// `cli::serve`'s umask).
fn create_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let mode = std::fs::metadata(dir)?.permissions().mode();
    if mode & 0o077 != 0
        && let Err(e) = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode & 0o700))
    {
        warn!(error = %e, dir = %dir.display(), "cannot make the data directory private");
    }
    Ok(())
}
