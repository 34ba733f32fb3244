//! `GET /api/skills` (owner only): the skills index (built-in, the agent's, the installed apps').

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;

use super::Skill;
use crate::auth::Owner;
use crate::state::AppState;

/// The skills route (mounted under `/api`).
pub fn router() -> Router<AppState> {
    Router::new().route("/skills", get(list))
}

#[derive(Serialize)]
struct SkillsOut {
    skills: Vec<Skill>,
    /// Agent skills beyond the index's bound, left out.
    left_out: usize,
    /// Where the agent writes its skills.
    agent_dir: String,
}

#[tracing::instrument(level = "debug", skip_all)]
async fn list(State(state): State<AppState>, _owner: Owner) -> crate::error::Result<Json<SkillsOut>> {
    let (mut skills, left_out) = state.skills.list();
    // The installed apps' skills (`origin: "app"`), read from their live versions.
    skills.extend(crate::apps::system::additions(&state.db.read, &state.config.data_dir).await?.skills);
    Ok(Json(SkillsOut { skills, left_out, agent_dir: state.skills.agent_dir().display().to_string() }))
}
