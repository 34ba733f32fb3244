//! Launching a turn: the chat read, its system prompt composed once and pinned, the model
//! picked, the kept process reused when it fits, else a new CLI process started with its
//! agent token, environment and sandbox.

use tracing::info;

use super::{AGENT_TOKEN_TTL_SECS, Agents, Turn};
use crate::agent::warm::WarmKey;
use crate::agent::{ApprovalPolicy, ProviderTurn, TurnRequest};
use crate::auth::jwt::{Claims, Scope};
use crate::db;
use crate::error::{Domain, Result};
use crate::protocol::Message;
use crate::writer::WriteCommand;

/// The system prompt a chat starts with: the platform's, or an app chat's own `system_prompt`
/// in its place; app chats then get an `<app_context>` block naming their app; then the
/// installed system apps' prompts (`apps/system.rs`), the agent's own skills, the installed
/// apps' skills and the memory block (unless the owner turned memory off). Composed
/// once per chat: the first turn pins it.
pub(crate) async fn compose_for(agents: &Agents, chat: &db::chats::ChatRow) -> Result<String> {
    let mut prompt = compose_base(agents, chat).await?;
    let apps = crate::apps::system::additions(&agents.read, &agents.data_dir).await?;
    prompt.push_str(&apps.prompt);
    if let Some(skills) = agents.skills.prompt_section() {
        prompt.push_str(&skills);
    }
    if let Some(skills) = crate::apps::system::skills_section(&apps.skills) {
        prompt.push_str(&skills);
    }
    if let Some(memory) = crate::recall::memory_block(&agents.read, &agents.data_dir, &chat.id).await? {
        prompt.push_str(&memory);
    }
    Ok(prompt)
}

async fn compose_base(agents: &Agents, chat: &db::chats::ChatRow) -> Result<String> {
    let settings = crate::agent::settings::AgentSettings::parse(chat.agent_settings.as_deref());
    let own = settings.system_prompt.as_deref().filter(|p| !p.trim().is_empty());
    let mut prompt = match own {
        Some(p) => p.to_owned(),
        None => crate::agent::prompt::compose(&agents.skill_dir)?,
    };
    if let Some(Some(app_id)) = db::embeds::chat_app(&agents.read, &chat.id).await?
        && let Some(app) = db::apps::get(&agents.read, app_id).await?
    {
        let description: String = app.description.chars().take(1000).collect();
        let storage = match settings.project_id.as_deref() {
            Some(project) => format!("app-data/{app_id}/projects/{project}/"),
            None => format!("app-data/{app_id}/"),
        };
        prompt.push_str(&format!(
            "\n<app_context>\nThis chat was opened by the app {:?} (id {app_id}, folder apps/{}/, entry index.jsx).\n\
             Description: {description}\nIts storage: {storage}\nOwning chat: {}\n</app_context>\n",
            app.name,
            app.slug,
            app.chat_id.as_deref().unwrap_or("none"),
        ));
    }
    Ok(prompt)
}

/// `/plan <words>`: the message asks the agent to plan first; the words are what to plan.
pub(crate) fn slash_plan(text: &str) -> Option<&str> {
    let rest = text.trim_start().strip_prefix("/plan")?;
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then(|| rest.trim_start())
}

/// `/goal <words>`: the message sets a goal the agent works through with a plan, pinned at
/// the top of the chat; the words are the goal (none: not a goal).
pub(crate) fn slash_goal(text: &str) -> Option<&str> {
    let rest = text.trim_start().strip_prefix("/goal")?;
    let goal = rest.trim();
    (rest.starts_with(char::is_whitespace) && !goal.is_empty()).then_some(goal)
}

/// What a goal turn is asked: the goal, and to keep a plan with the CLI's own plan tool (its
/// updates move the pin) and work through it.
pub(crate) fn goal_prompt(goal: &str) -> String {
    format!(
        "The owner set this goal: {goal}\n\n\
         Work toward it until it is done. First write a plan of concrete steps with your own plan \
         tool (TaskCreate for each step, then TaskUpdate to move it on, deleting first the tasks \
         left from earlier work; or TodoWrite, or your plan update tool — whichever you have); \
         keep one step in progress at a time, mark each step \
         completed as soon as it is done, and go on to the next without waiting for the owner \
         unless you are blocked. The plan is pinned at the top of the owner's chat as the goal's \
         progress, so keep it true."
    )
}

impl Turn<'_> {
    /// Reads the chat, composes the prompt and environment, and starts the provider.
    pub(super) async fn prepare_and_start(&mut self, messages: &[Message]) -> Result<ProviderTurn> {
        let agents = self.agents;
        let chat = db::chats::get(&agents.read, &self.chat_id).await?.ok_or(Domain::ChatNotFound)?;
        self.approval = ApprovalPolicy::parse(&chat.approval_policy).unwrap_or_default();
        self.auto_resume = chat.auto_resume;
        self.allowed_tools = crate::agent::settings::AllowedTools::parse(chat.allowed_tools.as_deref());
        let credentials = agents.providers.prepare_cli(self.provider)?;
        // A pinned prompt is reused byte for byte: it never changes under a conversation.
        let pinned = match &chat.system_prompt_id {
            Some(id) => db::chats::prompt_content(&agents.read, id).await?,
            None => None,
        };
        let system_prompt = match pinned {
            Some(content) => content,
            None => {
                let composed = compose_for(agents, &chat).await?;
                let id = crate::agent::prompt::prompt_id(&composed);
                agents
                    .writer
                    .call(|ack| WriteCommand::PinPrompt { chat_id: self.chat_id.clone(), id, content: composed, ack })
                    .await?
                    .1
            }
        };
        // The chat's pick, else the owner's default for this provider, else the CLI's own.
        let defaults =
            crate::agent::models::AgentDefaults::parse(db::owner::agent_defaults(&agents.read).await?.as_deref());
        let settings = crate::agent::settings::AgentSettings::parse(chat.agent_settings.as_deref());
        let pick = settings.pick().over(defaults.of(self.provider));
        let (model, effort) = (pick.model, pick.effort);
        let files = self.input_files(messages).await?;
        // The owner's local time: the zone the latest message was sent from, else the owner's
        // setting, else the server's.
        let sent_from = messages.iter().rev().find_map(|m| m.timezone.as_deref());
        let owner_zone = match sent_from {
            Some(_) => None,
            None => db::schedules::owner_timezone(&agents.read).await?,
        };
        let zone = crate::cadence::zone_or_server(sent_from.or(owner_zone.as_deref()));
        // Plan first when the chat says so, or one of the messages is `/plan <words>`.
        let texts: Vec<String> = messages.iter().map(Message::agent_text).collect();
        let asked = texts.iter().any(|t| slash_plan(t).is_some());
        self.planning = settings.plan_mode == Some(true) || asked;
        let texts: Vec<String> = texts.iter().map(|t| slash_plan(t).map_or_else(|| t.clone(), str::to_owned)).collect();
        // `/goal <words>`: the goal is pinned on the chat and the agent asked to plan it out.
        if let Some(goal) = texts.iter().rev().find_map(|t| slash_goal(t)) {
            let (chat_id, objective) = (self.chat_id.clone(), goal.to_owned());
            if let Err(e) = agents.writer.call(|ack| WriteCommand::SetGoal { chat_id, objective, ack }).await {
                tracing::warn!(error = %e, "the goal could not be pinned");
            }
        }
        let texts: Vec<String> = texts.iter().map(|t| slash_goal(t).map_or_else(|| t.clone(), goal_prompt)).collect();
        let prompt = texts.join("\n\n")
            + &crate::agent::InputFile::manifest(&files)
            + &crate::agent::prompt::local_time_note(db::now_ms(), &zone);
        // The first turn after a handoff starts its new session from the summary.
        let prompt = match (&chat.session_id, &chat.handoff) {
            (None, Some(summary)) => crate::agent::handoff::seeded_prompt(summary, &prompt),
            _ => prompt,
        };
        // The connectors this chat may use now, each at its broker URL.
        let connectors = crate::connectors::for_chat(&agents.read, &self.chat_id).await?;
        self.auto_approved = connectors.iter().flat_map(|c| c.auto_approved.iter().cloned()).collect();
        let mcp: Vec<crate::agent::McpServer> = connectors
            .into_iter()
            .map(|c| crate::agent::McpServer {
                url: crate::connectors::broker_url(agents.providers.api_url(), &self.chat_id, c.id),
                name: c.name,
            })
            .collect();
        let key = WarmKey {
            provider: self.provider,
            model: model.clone(),
            effort: effort.clone(),
            approval: self.approval,
            prompt_id: crate::agent::prompt::prompt_id(&system_prompt),
            credentials: agents.providers.credentials_stamp(self.provider),
            mcp: mcp.clone(),
        };
        // The chat's previous process first parks or goes (a stopped turn winds down).
        agents.warm.settle(&self.chat_id).await;
        let files = match self.start_warm(&key, chat.session_id.as_deref(), &prompt, files).await {
            Ok(turn) => return Ok(turn),
            Err(files) => files,
        };
        // One that was retired (it no longer fits, or died) is gone before a new one resumes.
        agents.warm.settle(&self.chat_id).await;
        let owner = agents.owner.get();
        let mut claims = Claims::new(
            owner.as_ref().map(|o| o.0.as_str()).unwrap_or_default(),
            Scope::Agent,
            0,
            AGENT_TOKEN_TTL_SECS,
        );
        claims.epoch = owner.as_ref().map_or(0, |o| o.1);
        claims.chat_id = Some(self.chat_id.to_string());
        claims.run_id = Some(self.run_id.to_string());
        let token = agents.keys.issue(&claims)?;
        let mut env = agents.providers.agent_env(self.provider, &self.chat_id, &self.run_id, &token, credentials)?;
        // The chat's workspace is the turn's working directory (`agent/workspace.rs`).
        let workspace = crate::agent::workspace::prepare(&agents.data_dir, &self.chat_id)?;
        env.push(("MOBIUS_WORKSPACE".to_owned(), workspace.display().to_string()));
        let var = |key: &str| env.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str()).unwrap_or_default();
        let mut grants = agents.sandbox.grants(
            self.provider,
            agents.providers.bin(self.provider),
            std::path::Path::new(var("HOME")),
            std::path::Path::new(var("TMPDIR")),
            var("PATH"),
        );
        // The chat's files: the agent reads what was attached (and nothing of other chats).
        grants.read.push(agents.uploads.chat_dir(&self.chat_id));
        grants.read_write.push(workspace.clone());
        let confine = agents.sandbox.ruleset(&grants)?;
        let keep = agents.warm.keeper(&self.chat_id, key, &self.run_id, &token);
        let request = TurnRequest {
            prompt,
            files,
            system_prompt,
            resume: chat.session_id.clone(),
            model,
            effort,
            cwd: workspace,
            env,
            approval: self.approval,
            plan: self.planning,
            trees: agents.providers.trees().clone(),
            tools: true,
            confine,
            keep,
            memory: agents.providers.memory().clone(),
            mcp,
        };
        agents.providers.provider(self.provider).start(request)
    }

    /// The files the turn's messages attach, as stored (a file removed since is left out).
    async fn input_files(&self, messages: &[Message]) -> Result<Vec<crate::agent::InputFile>> {
        use crate::uploads::{Kind, sniff::Raster};
        let uploads = &self.agents.uploads;
        let mut files: Vec<crate::agent::InputFile> = Vec::new();
        let names = messages.iter().flat_map(|m| m.attachments.iter().flatten());
        for name in names.map(|a| a.name.as_str()) {
            if files.iter().any(|f| f.name == name) {
                continue;
            }
            let Some(row) = uploads.get(&self.chat_id, Kind::Upload, name).await? else { continue };
            let dimensions =
                row.width.zip(row.height).and_then(|(w, h)| Some((u32::try_from(w).ok()?, u32::try_from(h).ok()?)));
            files.push(crate::agent::InputFile {
                path: uploads.path(&self.chat_id, Kind::Upload, &row.name),
                image: Raster::of_mime(&row.mime_type).is_some(),
                preview: row.preview.then(|| uploads.preview_path(&self.chat_id, Kind::Upload, &row.name)),
                name: row.name,
                mime_type: row.mime_type,
                size: u64::try_from(row.size).unwrap_or(0),
                dimensions,
            });
        }
        Ok(files)
    }

    /// The turn on the chat's kept process, when there is one that fits and its agent token
    /// still verifies; otherwise the files back, to start a new process with.
    async fn start_warm(
        &mut self,
        key: &WarmKey,
        session: Option<&str>,
        prompt: &str,
        files: Vec<crate::agent::InputFile>,
    ) -> std::result::Result<ProviderTurn, Vec<crate::agent::InputFile>> {
        let agents = self.agents;
        let Some(warm) = agents.warm.checkout(&self.chat_id, key, session) else { return Err(files) };
        let owner_epoch = agents.owner.get().map_or(0, |o| o.1);
        if !agents.keys.verify(warm.token()).is_ok_and(|c| c.epoch == owner_epoch) {
            info!("a kept agent process holds a token that no longer verifies; it is retired");
            return Err(files);
        }
        // Its token names the run that started it: it serves this run from now on.
        agents.turns.set_process(&self.chat_id, Some(warm.origin()));
        let prompt = crate::agent::Prompt { text: prompt.to_owned(), files: files.clone(), plan: self.planning };
        match warm.start(prompt).await {
            Some(turn) => Ok(turn),
            None => {
                agents.turns.set_process(&self.chat_id, None);
                info!("the kept agent process could not take the turn; starting a new one");
                Err(files)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{goal_prompt, slash_goal, slash_plan};

    #[test]
    fn slash_goal_takes_the_goal_after_the_command_and_asks_for_a_plan() {
        assert_eq!(slash_goal("/goal ship the dark mode "), Some("ship the dark mode"));
        assert_eq!(slash_goal("\n/goal\nrefactor the parser"), Some("refactor the parser"));
        assert_eq!(slash_goal("/goal"), None, "no goal given");
        assert_eq!(slash_goal("/goal   "), None, "no goal given");
        assert_eq!(slash_goal("/goalkeeper tips"), None, "another word");
        assert_eq!(slash_goal("my /goal is"), None, "only at the start");
        let prompt = goal_prompt("ship it");
        assert!(prompt.starts_with("The owner set this goal: ship it") && prompt.contains("plan"), "{prompt}");
        assert!(
            prompt.contains("TaskCreate") && prompt.contains("TaskUpdate"),
            "names the tools Claude Code has: {prompt}"
        );
    }

    #[test]
    fn slash_plan_takes_the_words_after_the_command_only() {
        assert_eq!(slash_plan("/plan add a dark mode"), Some("add a dark mode"));
        assert_eq!(slash_plan("  /plan\nrefactor"), Some("refactor"));
        assert_eq!(slash_plan("/plan"), Some(""));
        assert_eq!(slash_plan("/planet facts"), None, "another word");
        assert_eq!(slash_plan("please /plan it"), None, "only at the start");
    }
}
