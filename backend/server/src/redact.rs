//! Masking what looks like a credential in free text, before it is logged (`telemetry/`) or
//! shown (the agent-context inspector, `chats/context.rs`; chat logs read by apps,
//! `chats/logs.rs`, with the stricter word filter).

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
    "xoxs-",
    "AKIA",
    "AIza",
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

/// Whether one word looks like a credential: a known prefix with a long tail, a JWT, or a long
/// run of letters and digits mixed (a key, a hash-like token).
fn looks_secret(word: &str) -> bool {
    let body =
        word.trim_matches(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '+' | '/' | '=' | '.')));
    if body.len() < 16 {
        return false;
    }
    if KEY_PREFIXES.iter().any(|p| body.starts_with(p)) {
        return true;
    }
    if body.starts_with("eyJ") && body.matches('.').count() == 2 {
        return true;
    }
    let tokenish = body.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'+' | b'/' | b'='));
    let digits = body.bytes().filter(u8::is_ascii_digit).count();
    let letters = body.bytes().filter(u8::is_ascii_alphabetic).count();
    tokenish && body.len() >= 32 && digits >= 4 && letters >= 8
}

/// The stricter filter, for text shown to someone other than the owner (an app reading chat
/// logs, `chats/logs.rs`): every secret-looking word goes — also a long run of mixed letters and
/// digits, and the word after `password:`, `token=` or `Bearer`.
pub fn redact_words(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut hide_next = false;
    for piece in text.split_inclusive(char::is_whitespace) {
        let word = piece.trim_end_matches(char::is_whitespace);
        let space = &piece[word.len()..];
        let lower = word.to_ascii_lowercase();
        let keyed = SECRET_NAMES.iter().find_map(|k| lower.find(k).map(|at| (at, k.len())));
        if word.is_empty() {
        } else if hide_next || looks_secret(word) {
            out.push_str(REDACTED);
            hide_next = false;
        } else if let Some((at, len)) = keyed
            && let Some(sep) = word[at + len..].find([':', '='])
        {
            let value_at = at + len + sep + 1;
            out.push_str(&word[..value_at]);
            if value_at < word.len() {
                out.push_str(REDACTED);
            } else {
                hide_next = true;
            }
        } else {
            hide_next = lower == "bearer";
            out.push_str(word);
        }
        out.push_str(space);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_looking_words_are_redacted_and_prose_is_kept() {
        let text = "use sk-ant-api03-abcdefghijklmnop and password: hunter2hunter2, then token=abc123 ok\n\
                    Authorization: Bearer whatever-it-is. jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl done";
        let out = redact_words(text);
        for secret in ["sk-ant", "hunter2", "abc123", "whatever-it-is", "eyJhbGci"] {
            assert!(!out.contains(secret), "{secret} left in {out}");
        }
        assert!(out.starts_with("use [redacted] and password: [redacted] then token=[redacted] ok\n"), "{out}");
        let prose = "The quarterly report is ready: 12 pages, see chart.png (v2).";
        assert_eq!(redact_words(prose), prose);
        assert_eq!(redact_words("a5f3c9e1b7d24680a5f3c9e1b7d24680ffee"), REDACTED);
    }

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
