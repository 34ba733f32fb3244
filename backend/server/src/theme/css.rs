//! What a theme may say, decided by parsing it (Servo's CSS tokenizer, `cssparser`): `:root`
//! blocks (plain, or `[data-theme="dark|light"]`), optionally inside `@media` blocks, that set
//! custom properties (`--name: value`) and nothing else. Values may use colours, numbers,
//! strings, gradients and the colour and maths functions; `url()` only for a `data:` image of
//! bounded size. Refused: any other at-rule (`@import`, `@font-face`, …), other selectors,
//! ordinary properties, `url()` to anything but a data image, unlisted functions
//! (`expression(`, `image-set(`, …), `javascript:` anywhere, `<` anywhere (the text is inlined
//! into pages), and files past [`MAX_THEME_BYTES`].

use cssparser::{ParseError, Parser, ParserInput, Token};

/// The largest theme file accepted.
pub const MAX_THEME_BYTES: usize = 64 * 1024;
/// The longest `data:` image a value may carry.
pub const MAX_DATA_URL_BYTES: usize = 32 * 1024;
/// Custom properties in one theme, at most.
const MAX_DECLARATIONS: usize = 1000;
/// Nesting of parentheses and functions in one value, at most.
const MAX_DEPTH: usize = 16;
/// The longest custom property name.
const MAX_NAME_CHARS: usize = 80;

/// Functions a value may call (lowercase). `url` is checked on its own.
const FUNCTIONS: &[&str] = &[
    "rgb",
    "rgba",
    "hsl",
    "hsla",
    "hwb",
    "lab",
    "lch",
    "oklab",
    "oklch",
    "color",
    "color-mix",
    "light-dark",
    "var",
    "env",
    "calc",
    "min",
    "max",
    "clamp",
    "round",
    "linear-gradient",
    "radial-gradient",
    "conic-gradient",
    "repeating-linear-gradient",
    "repeating-radial-gradient",
    "repeating-conic-gradient",
    "cubic-bezier",
    "steps",
];

/// Image types a `data:` URL may hold.
const DATA_IMAGES: &[&str] = &["png", "jpeg", "gif", "webp", "avif", "svg+xml"];

/// A theme that parsed and kept to the rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checked {
    /// The light scheme's page background, when the theme sets `--light-bg` to a hex colour
    /// in a plain `:root` block (the web manifest and the browser chrome follow it).
    pub light_bg: Option<String>,
    /// The same for `--dark-bg`.
    pub dark_bg: Option<String>,
    /// Custom properties set (none: the stock theme).
    pub properties: usize,
}

/// Why a theme was refused: where (1-based line and column) and what, in words the agent can
/// act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub line: u32,
    pub column: u32,
    pub reason: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            f.write_str(&self.reason)
        } else {
            write!(f, "line {}, column {}: {}", self.line, self.column, self.reason)
        }
    }
}

type Failure<'i> = ParseError<'i, String>;

/// Checks `text` against the rules above.
pub fn check(text: &str) -> Result<Checked, Refusal> {
    if text.len() > MAX_THEME_BYTES {
        return Err(Refusal {
            line: 0,
            column: 0,
            reason: format!("the theme is {} bytes; at most {MAX_THEME_BYTES} are accepted", text.len()),
        });
    }
    if let Some(at) = text.find('<') {
        let line = text[..at].matches('\n').count() as u32 + 1;
        let column = (at - text[..at].rfind('\n').map_or(0, |n| n + 1)) as u32 + 1;
        return Err(Refusal { line, column, reason: "`<` has no place in a theme".into() });
    }
    let mut input = ParserInput::new(text);
    let mut parser = Parser::new(&mut input);
    let mut sheet = Sheet::default();
    sheet.rules(&mut parser, false).map_err(|e| Refusal {
        line: e.location.line + 1,
        column: e.location.column,
        reason: match e.kind {
            cssparser::ParseErrorKind::Custom(why) => why,
            cssparser::ParseErrorKind::Basic(basic) => format!("the CSS does not parse ({basic})"),
        },
    })?;
    Ok(Checked { properties: sheet.declarations, ..sheet.checked })
}

#[derive(Default)]
struct Sheet {
    checked: Checked,
    declarations: usize,
}

/// Which `:root` block a declaration is in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Block {
    /// Plain `:root`, outside any `@media`.
    Root,
    /// Anything else allowed.
    Other,
}

fn refuse<'i, T>(input: &Parser<'i, '_>, why: impl Into<String>) -> Result<T, Failure<'i>> {
    Err(input.new_custom_error(why.into()))
}

impl Sheet {
    /// A list of rules: `:root` blocks, and (`in_media` false) `@media` blocks of them.
    fn rules<'i>(&mut self, input: &mut Parser<'i, '_>, in_media: bool) -> Result<(), Failure<'i>> {
        loop {
            input.skip_whitespace();
            let start = input.state();
            let token = match input.next() {
                Ok(token) => token.clone(),
                Err(_) => return Ok(()),
            };
            match token {
                Token::CDO | Token::CDC | Token::Semicolon => {}
                Token::AtKeyword(name) => {
                    if in_media || !name.eq_ignore_ascii_case("media") {
                        input.reset(&start);
                        return refuse(
                            input,
                            format!(
                                "@{name} is not allowed: a theme holds :root {{ … }} blocks of custom properties, optionally inside @media"
                            ),
                        );
                    }
                    media_prelude(input, 0)?;
                    let from = input.position();
                    input.parse_nested_block(|block| self.rules(block, true))?;
                    closed(input, from, '}')?;
                }
                _ => {
                    input.reset(&start);
                    let block = selector(input, in_media)?;
                    let from = input.position();
                    input.parse_nested_block(|body| self.declarations(body, block))?;
                    closed(input, from, '}')?;
                }
            }
        }
    }

    /// The body of a `:root` block: custom properties only.
    fn declarations<'i>(&mut self, input: &mut Parser<'i, '_>, block: Block) -> Result<(), Failure<'i>> {
        loop {
            input.skip_whitespace();
            let start = input.state();
            let name = match input.next() {
                Ok(Token::Semicolon) => continue,
                Ok(Token::Ident(name)) => name.clone(),
                Ok(_) => {
                    input.reset(&start);
                    return refuse(input, "expected a custom property (`--name: value;`)");
                }
                Err(_) => return Ok(()),
            };
            if !name.starts_with("--") {
                input.reset(&start);
                return refuse(
                    input,
                    format!("`{name}` is not a custom property: a theme only sets --variables (e.g. --light-accent)"),
                );
            }
            if name.len() > MAX_NAME_CHARS
                || !name[2..].chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                input.reset(&start);
                return refuse(
                    input,
                    format!("`{name}`: a name is letters, digits, - and _ (at most {MAX_NAME_CHARS})"),
                );
            }
            self.declarations += 1;
            if self.declarations > MAX_DECLARATIONS {
                return refuse(input, format!("more than {MAX_DECLARATIONS} custom properties"));
            }
            input.expect_colon()?;
            input.parse_until_after(cssparser::Delimiter::Semicolon, |value| {
                value.skip_whitespace();
                let from = value.position();
                walk_value(value, 0)?;
                let text = value.slice_from(from).trim();
                if text.is_empty() {
                    return refuse(value, format!("`{name}` has no value"));
                }
                if block == Block::Root && is_hex_colour(text) {
                    match &*name {
                        "--light-bg" => self.checked.light_bg = Some(text.to_ascii_lowercase()),
                        "--dark-bg" => self.checked.dark_bg = Some(text.to_ascii_lowercase()),
                        _ => {}
                    }
                }
                Ok(())
            })?;
        }
    }
}

/// A rule's selector: `:root`, or `:root[data-theme="dark"]` / `…="light"`; then its block.
fn selector<'i>(input: &mut Parser<'i, '_>, in_media: bool) -> Result<Block, Failure<'i>> {
    let refused = "only :root (or :root[data-theme=\"dark\"] / [data-theme=\"light\"]) may be styled";
    let start = input.state();
    if !matches!(input.next_including_whitespace(), Ok(Token::Colon))
        || !matches!(input.next_including_whitespace(), Ok(Token::Ident(root)) if root.eq_ignore_ascii_case("root"))
    {
        input.reset(&start);
        return refuse(input, refused);
    }
    let mut scoped = false;
    loop {
        let at = input.state();
        match input.next() {
            Ok(Token::CurlyBracketBlock) => break,
            Ok(Token::SquareBracketBlock) if !scoped => {
                scoped = true;
                input.parse_nested_block(|attr| {
                    attr.expect_ident_matching("data-theme")?;
                    attr.expect_delim('=')?;
                    let value = attr.expect_ident_or_string()?.clone();
                    if !(value.eq_ignore_ascii_case("dark") || value.eq_ignore_ascii_case("light")) {
                        return refuse(attr, refused);
                    }
                    attr.expect_exhausted()?;
                    Ok(())
                })?;
            }
            _ => {
                input.reset(&at);
                return refuse(input, refused);
            }
        }
    }
    Ok(if scoped || in_media { Block::Other } else { Block::Root })
}

/// An `@media` prelude: media features and keywords (`(prefers-color-scheme: dark)`,
/// `screen and (max-width: 600px)`), up to its block.
fn media_prelude<'i>(input: &mut Parser<'i, '_>, depth: usize) -> Result<(), Failure<'i>> {
    loop {
        let token = match input.next() {
            Ok(token) => token.clone(),
            Err(_) if depth > 0 => return Ok(()),
            Err(_) => return refuse(input, "@media needs a { … } block"),
        };
        match token {
            Token::CurlyBracketBlock if depth == 0 => return Ok(()),
            Token::ParenthesisBlock if depth < 2 => {
                input.parse_nested_block(|inner| media_prelude(inner, depth + 1))?
            }
            Token::Ident(_)
            | Token::Colon
            | Token::Comma
            | Token::Number { .. }
            | Token::Dimension { .. }
            | Token::Delim('/' | '<' | '>' | '=') => {}
            _ => {
                return refuse(
                    input,
                    "an @media condition holds only media features such as (prefers-color-scheme: dark)",
                );
            }
        }
    }
}

/// One value (or a function's arguments): every token allowed, every nested block walked.
fn walk_value<'i>(input: &mut Parser<'i, '_>, depth: usize) -> Result<(), Failure<'i>> {
    if depth > MAX_DEPTH {
        return refuse(input, format!("values nest at most {MAX_DEPTH} deep"));
    }
    loop {
        let token = match input.next_including_whitespace_and_comments() {
            Ok(token) => token.clone(),
            Err(_) => return Ok(()),
        };
        match token {
            Token::Function(name) => {
                let lower = name.to_ascii_lowercase();
                let from = input.position();
                if lower == "url" {
                    input.parse_nested_block(|arg| {
                        let url = arg.expect_string()?.clone();
                        check_url(arg, &url)?;
                        arg.expect_exhausted()?;
                        Ok(())
                    })?;
                } else if FUNCTIONS.contains(&lower.as_str()) {
                    input.parse_nested_block(|args| walk_value(args, depth + 1))?;
                } else {
                    return refuse(input, format!("{name}() is not allowed in a theme"));
                }
                closed(input, from, ')')?;
            }
            Token::UnquotedUrl(url) => check_url(input, &url)?,
            Token::ParenthesisBlock | Token::SquareBracketBlock => {
                let close = if matches!(token, Token::ParenthesisBlock) { ')' } else { ']' };
                let from = input.position();
                input.parse_nested_block(|inner| walk_value(inner, depth + 1))?;
                closed(input, from, close)?;
            }
            Token::CurlyBracketBlock => return refuse(input, "a value cannot hold a { … } block"),
            Token::AtKeyword(name) => return refuse(input, format!("@{name} cannot appear in a value")),
            Token::BadUrl(_) | Token::BadString(_) => return refuse(input, "a broken url() or string"),
            Token::CloseParenthesis | Token::CloseSquareBracket | Token::CloseCurlyBracket => {
                return refuse(input, "an unbalanced bracket");
            }
            Token::QuotedString(text) | Token::Ident(text) => check_text(input, &text)?,
            _ => {}
        }
    }
}

/// The block just parsed (from `from`) ended with its closing bracket, not with the end of the
/// file (which CSS would forgive, and a theme does not).
fn closed<'i>(input: &Parser<'i, '_>, from: cssparser::SourcePosition, close: char) -> Result<(), Failure<'i>> {
    if input.slice_from(from).ends_with(close) {
        Ok(())
    } else {
        refuse(input, format!("a block is not closed (`{close}` missing)"))
    }
}

/// Words that never belong in a theme, however they are spelled (escapes are decoded first).
fn check_text<'i>(input: &Parser<'i, '_>, text: &str) -> Result<(), Failure<'i>> {
    let lower = text.to_ascii_lowercase();
    if lower.contains("javascript:") || lower.contains("expression") {
        return refuse(input, "`javascript:` and `expression` are not allowed in a theme");
    }
    Ok(())
}

/// `url()`: a `data:` image of a listed type, base64 or percent-encoded, and no longer than
/// [`MAX_DATA_URL_BYTES`]. Nothing that would reach another origin (or this one).
fn check_url<'i>(input: &Parser<'i, '_>, url: &str) -> Result<(), Failure<'i>> {
    let lower = url.trim().to_ascii_lowercase();
    let Some(rest) = lower.strip_prefix("data:image/") else {
        return refuse(input, "url() may only hold a data: image (no other address is reachable from a theme)");
    };
    let kind = rest.split([';', ',']).next().unwrap_or_default();
    if !DATA_IMAGES.contains(&kind) {
        return refuse(input, format!("url(): data:image/{kind} is not an accepted image type"));
    }
    if url.len() > MAX_DATA_URL_BYTES {
        return refuse(input, format!("url(): a data image holds at most {MAX_DATA_URL_BYTES} bytes"));
    }
    check_text(input, url)
}

/// `#rgb` or `#rrggbb`, written out as `#rrggbb`-comparable text.
fn is_hex_colour(text: &str) -> bool {
    text.strip_prefix('#')
        .is_some_and(|hex| (hex.len() == 6 || hex.len() == 3) && hex.chars().all(|c| c.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(css: &str) -> String {
        check(css).expect_err(css).to_string()
    }

    #[test]
    fn a_theme_of_custom_properties_is_accepted_and_its_backgrounds_read() {
        let css = "/* Sunset */\n:root {\n  --light-bg: #FFF7ED;\n  --dark-bg: #1c1210;\n  --light-accent: rgb(234 88 12);\n  --font: 'Inter', system-ui;\n  --dark-shadow: 0 1px 2px rgb(0 0 0 / 0.4), 0 12px 32px rgb(0 0 0 / .45);\n}\n\
                   :root[data-theme=\"dark\"] { --dark-accent: color-mix(in oklab, #f97316 80%, white) }\n\
                   @media (prefers-color-scheme: dark) { :root { --dark-bg: #000000; --x: calc(2px * 3) } }\n\
                   :root { --pattern: url(\"data:image/png;base64,iVBORw0KGgo=\") }";
        let checked = check(css).expect("a good theme");
        assert_eq!(checked.light_bg.as_deref(), Some("#fff7ed"));
        assert_eq!(checked.dark_bg.as_deref(), Some("#1c1210"), "a background inside @media does not count");
        assert_eq!(check("").expect("the empty theme is the stock one"), Checked::default());
    }

    #[test]
    fn imports_other_rules_and_ordinary_properties_are_refused_with_where() {
        assert!(refused("@import url(https://evil.example/x.css);").contains("@import is not allowed"));
        assert!(
            refused(":root{}\n@font-face { font-family: x; src: url(https://x/f.woff) }")
                .starts_with("line 2, column 1: @font-face")
        );
        assert!(refused("body { --bg: red }").contains("only :root"));
        assert!(refused(":root, body { --bg: red }").contains("only :root"));
        assert!(refused(":root[data-theme=\"pink\"] { --bg: red }").contains("only :root"));
        assert!(refused(":root { color: red }").contains("`color` is not a custom property"));
        assert!(refused("@media print { @media screen { :root { --a: 1 } } }").contains("@media is not allowed"));
        assert!(refused("@media (url(x)) { :root { --a: 1 } }").contains("media features"));
    }

    #[test]
    fn values_reaching_out_or_running_code_are_refused() {
        assert!(refused(":root { --bg: url(https://evil.example/a.png) }").contains("data: image"));
        assert!(refused(":root { --bg: url('/api/chats') }").contains("data: image"));
        assert!(refused(":root { --bg: url(data:text/html;base64,PHNjcmlwdD4=) }").contains("data: image"));
        assert!(refused(":root { --bg: url(data:image/x-bitmap;base64,AAAA) }").contains("not an accepted image type"));
        assert!(refused(":root { --bg: image-set(\"https://x/a.png\" 1x) }").contains("image-set() is not allowed"));
        assert!(refused(":root { --bg: expression(alert(1)) }").contains("expression() is not allowed"));
        assert!(refused(":root { --bg: \"javascript:alert(1)\" }").contains("javascript:"));
        assert!(
            refused(":root { --bg: j\\61vascript\\3a alert }").contains("javascript:"),
            "escapes are decoded first"
        );
        assert!(refused(":root { --bg: red; } </style><script>").contains("`<`"));
        assert!(refused(":root { --bg: { color: red } }").contains("{ … } block"));
        let big = format!(":root {{ --bg: url(data:image/png;base64,{}) }}", "A".repeat(MAX_DATA_URL_BYTES));
        assert!(refused(&big).contains("at most"));
        assert!(refused(&format!(":root {{ --a: 1; }}{}", " ".repeat(MAX_THEME_BYTES))).contains("bytes"));
    }

    #[test]
    fn broken_css_is_refused_not_half_taken() {
        assert!(refused(":root { --bg: #fff").contains("line 1"));
        assert!(refused(":root { --bg: rgb(1 2 3 }").contains("line 1") || check(":root { --bg: rgb(1 2 3 }").is_err());
        assert!(refused(":root { --bg }").contains("line 1"));
        assert!(refused(":root { --bg: ; }").contains("has no value"));
        assert!(refused(":root { --bg: \"unterminated\n }").contains("line"));
    }
}
