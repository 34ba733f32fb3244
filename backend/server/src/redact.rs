//! Masking what looks like a credential in free text, before it is logged (`telemetry/`) or
//! shown (the agent-context inspector, `chats/context.rs`).

/// What a masked value becomes.
pub const REDACTED: &str = "[redacted]";

/// Parameter names (any case, as part of the name) whose `=` value is masked.
const SECRET_NAMES: &[&str] = &["token", "secret", "password", "passwd", "api_key", "apikey", "api-key"];

/// Prefixes of well-known key formats (OpenAI/Anthropic, GitHub, GitLab, Slack, AWS, Stripe);
/// a word starting with one and at least [`MIN_KEY_TAIL`] more key characters is masked.
const KEY_PREFIXES: &[&str] = &[
    "sk-",
    "sk_live_",
    "rk_live_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "AKIA",
];

/// Characters after a key prefix before a word counts as a key (`sk-ant` alone is not one).
const MIN_KEY_TAIL: usize = 16;

fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Removes what looks like a credential from free text: the values of `*token*=` (and
/// `*secret*=`, `*password*=`, `*api_key*=`) parameters, `Bearer …`, anything shaped like a
/// JWT (`eyJ….….…`) and words in a well-known key format (`sk-…`, `ghp_…`, `AKIA…`).
pub fn redact_text(text: &str) -> String {
    let ends_value = |c: char| c.is_whitespace() || "&#\"'<>(),;`".contains(c);
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    // Where the word at the end of `out` starts (kept as it grows: no rescans).
    let mut word_start = 0;
    while let Some(c) = rest.chars().next() {
        let boundary = out.chars().next_back().is_none_or(|p| !is_key_char(p));
        if boundary && rest.starts_with("eyJ") {
            let run = rest.find(|c: char| !(c.is_ascii_alphanumeric() || "-_.".contains(c))).unwrap_or(rest.len());
            if rest[..run].matches('.').count() >= 2 {
                out.push_str(REDACTED);
                word_start = out.len();
                rest = &rest[run..];
                continue;
            }
        }
        if boundary && let Some(prefix) = KEY_PREFIXES.iter().find(|p| rest.starts_with(**p)) {
            let run = rest.find(|c: char| !is_key_char(c)).unwrap_or(rest.len());
            if run >= prefix.len() + MIN_KEY_TAIL {
                out.push_str(REDACTED);
                word_start = out.len();
                rest = &rest[run..];
                continue;
            }
        }
        let is_secret_param = c == '=' && {
            let name = out[word_start..].to_ascii_lowercase();
            SECRET_NAMES.iter().any(|s| name.contains(s))
        };
        let is_bearer = out.len() >= 7
            && out.is_char_boundary(out.len() - 7)
            && out[out.len() - 7..].eq_ignore_ascii_case("bearer ")
            && !ends_value(c);
        if is_secret_param || is_bearer {
            if is_secret_param {
                out.push('=');
                rest = &rest[1..];
            }
            let run = rest.find(ends_value).unwrap_or(rest.len());
            if run > 0 {
                out.push_str(REDACTED);
            }
            word_start = out.len();
            rest = &rest[run..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
        if !is_key_char(c) {
            word_start = out.len();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_in_well_known_formats_are_masked() {
        assert_eq!(
            redact_text("my key is sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv, keep it"),
            "my key is [redacted], keep it"
        );
        assert_eq!(redact_text("ghp_0123456789abcdefghij0123"), "[redacted]");
        assert_eq!(redact_text("aws AKIAABCDEFGHIJKLMNOP."), "aws [redacted].");
        assert_eq!(redact_text("password=hunter2 and api_key=abc"), "password=[redacted] and api_key=[redacted]");
        // Short or embedded look-alikes stay.
        let plain = "use sk-learn, task-sk-0123456789abcdefghijk, a risk-free plan";
        assert_eq!(redact_text(plain), plain);
    }

    #[test]
    fn multibyte_text_before_a_value_is_kept() {
        assert_eq!(redact_text("é Bearer abc"), "é Bearer [redacted]");
        assert_eq!(redact_text("clé token=abc"), "clé token=[redacted]");
        assert_eq!(redact_text("étoken=abc"), "étoken=[redacted]");
        assert_eq!(redact_text("ééé"), "ééé");
    }
}
