//! The agent's system prompt: `skill/core.md` plus an index of the on-demand skills.

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// Longest skill description kept in the index.
const MAX_DESCRIPTION_CHARS: usize = 200;

/// Composes the system prompt from the skill folder (`core.md` + `skills/*.md`).
pub fn compose(skill_dir: &Path) -> Result<String> {
    let core_path = skill_dir.join("core.md");
    let core = std::fs::read_to_string(&core_path)
        .map_err(|e| Error::Internal(format!("cannot read the agent constitution {}: {e}", core_path.display())))?;
    let mut prompt = core.trim_end().to_owned();
    let skills = skill_index(&skill_dir.join("skills"));
    if !skills.is_empty() {
        prompt.push_str("\n\n## Skills available on demand\n\nRead the file when the task calls for it:\n\n");
        prompt.push_str(&skills);
    }
    prompt.push('\n');
    Ok(prompt)
}

/// One line per `*.md` in `dir`: `- name — description (path)`, sorted by name.
fn skill_index(dir: &Path) -> String {
    let Ok(entries) = std::fs::read_dir(dir) else { return String::new() };
    let mut lines: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .filter_map(|path| {
            let text = std::fs::read_to_string(&path).ok()?;
            let name = path.file_stem()?.to_string_lossy().into_owned();
            let absolute = std::fs::canonicalize(&path).unwrap_or(path);
            Some(format!("- {name} — {} ({})", describe(&text), absolute.display()))
        })
        .collect();
    lines.sort();
    lines.join("\n")
}

/// A skill's description: its frontmatter `description:`, else its first prose line.
fn describe(text: &str) -> String {
    let from_frontmatter = text
        .strip_prefix("---")
        .and_then(|rest| rest.split("\n---").next())
        .and_then(|fm| fm.lines().find_map(|l| l.trim().strip_prefix("description:")))
        .map(|d| d.trim().trim_matches('"').to_owned());
    let description = from_frontmatter.unwrap_or_else(|| {
        text.lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with("---"))
            .unwrap_or_default()
            .to_owned()
    });
    description.chars().take(MAX_DESCRIPTION_CHARS).collect()
}

/// The line each turn's message carries so the agent knows the owner's local date and time
/// (the pinned system prompt stays byte for byte the same: a warm process is reused):
/// `[The owner's local time: Sunday 6 December 2026, 09:12 (Europe/Berlin, UTC+01:00)]`.
pub fn local_time_note(now_ms: i64, zone: &jiff::tz::TimeZone) -> String {
    let Ok(at) = jiff::Timestamp::from_millisecond(now_ms) else { return String::new() };
    let local = at.to_zoned(zone.clone());
    let name = zone.iana_name().unwrap_or("UTC");
    format!(
        "\n\n[The owner's local time: {} ({name}, UTC{})]",
        local.strftime("%A %-d %B %Y, %H:%M"),
        local.strftime("%:z")
    )
}

/// Content address of a prompt.
pub fn prompt_id(content: &str) -> String {
    hex::encode(Sha256::digest(content.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_is_core_plus_a_sorted_skill_index() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(dir.path().join("skills")).expect("dir");
        std::fs::write(dir.path().join("core.md"), "# Core\nYou are the agent.\n").expect("core");
        std::fs::write(dir.path().join("skills/zeta.md"), "# Zeta\n\nDo zeta things.\n").expect("zeta");
        std::fs::write(dir.path().join("skills/alpha.md"), "---\ndescription: \"Alpha stuff\"\n---\n# A\n")
            .expect("alpha");
        let prompt = compose(dir.path()).expect("compose");
        assert!(prompt.starts_with("# Core\nYou are the agent."));
        let alpha = prompt.find("- alpha — Alpha stuff").expect("alpha listed");
        let zeta = prompt.find("- zeta — Do zeta things.").expect("zeta listed");
        assert!(alpha < zeta);
        assert_eq!(prompt_id(&prompt), prompt_id(&compose(dir.path()).expect("again")));
    }

    #[test]
    fn the_local_time_note_names_the_day_the_time_and_the_zone() {
        let paris = jiff::tz::TimeZone::get("Europe/Paris").expect("zone");
        // 2026-12-06T08:30:00Z is 09:30 in Paris (winter, UTC+1).
        let note = local_time_note(1_796_545_800_000, &paris);
        assert_eq!(note, "\n\n[The owner's local time: Sunday 6 December 2026, 09:30 (Europe/Paris, UTC+01:00)]");
        let utc = local_time_note(1_796_545_800_000, &jiff::tz::TimeZone::UTC);
        assert!(utc.contains("08:30 (UTC, UTC+00:00)"), "{utc}");
    }

    #[test]
    fn a_missing_constitution_is_an_error() {
        let dir = tempfile::tempdir().expect("tmp");
        assert!(compose(dir.path()).is_err());
    }
}
