//! User input quoted in messages, bounded: a denial never echoes more than a short prefix
//! of what a tenant sent, however large the request.

/// The most characters of user input a message quotes.
pub const QUOTE_LIMIT: usize = 64;

/// `namespace/name`: how a namespaced object is named in messages and annotations.
pub fn object_key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

/// `text` as a quoted string for a message: at most [`QUOTE_LIMIT`] characters, with
/// control characters escaped, and the length of what was left out.
pub fn quoted(text: &str) -> String {
    quoted_with(text, QUOTE_LIMIT)
}

/// [`quoted`] with another bound.
pub fn quoted_with(text: &str, limit: usize) -> String {
    let (shown, rest) = escaped(text, limit);
    match rest {
        0 => format!("\"{shown}\""),
        more => format!("\"{shown}\"… ({more} more bytes)"),
    }
}

/// `text` for a message where quotes would be noise (a name, a path): control characters
/// escaped, at most [`QUOTE_LIMIT`] characters, and "…" when cut.
pub fn shown(text: &str) -> String {
    shown_with(text, QUOTE_LIMIT)
}

/// [`shown`] with another bound.
pub fn shown_with(text: &str, limit: usize) -> String {
    match escaped(text, limit) {
        (shown, 0) => shown,
        (shown, _) => format!("{shown}…"),
    }
}

/// The first `limit` characters of `text`, escaped, and how many bytes were left out.
fn escaped(text: &str, limit: usize) -> (String, usize) {
    let mut out = String::with_capacity(limit.min(text.len()) + 8);
    for (count, (index, c)) in text.char_indices().enumerate() {
        if count == limit {
            return (out, text.len() - index);
        }
        out.extend(c.escape_debug());
    }
    (out, 0)
}

/// Output of a program (helm's, from the edge) for a message a tenant reads: ANSI escapes
/// and control characters other than line breaks removed, blank lines dropped, and at most
/// the last `max` bytes kept — the end is where helm says what went wrong.
pub fn sanitized_tail(output: &str, max: usize) -> String {
    let clean = for_terminal(output).replace('\t', " ");
    let lines: Vec<&str> = clean
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .collect();
    let joined = lines.join("\n");
    if joined.len() <= max {
        return joined;
    }
    let mut start = joined.len() - max;
    while !joined.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &joined[start..])
}

/// Text from elsewhere (a program's output, a chart's message built from tenant values)
/// made safe to print on a terminal: escape sequences (CSI `ESC [ … final`, OSC
/// `ESC ] … BEL` or `ESC \\`, and any other `ESC x`) and control characters other than
/// line breaks and tabs are removed, so nothing can set a title, write the clipboard or
/// move the cursor.
pub fn for_terminal(text: &str) -> String {
    let mut clean = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(character) = chars.next() {
        match character {
            '\u{1b}' => match chars.next() {
                Some('[') => {
                    for terminator in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&terminator) {
                            break;
                        }
                    }
                }
                Some(']' | 'P' | '^' | '_' | 'X') => {
                    // A string: until BEL or ST (ESC \\).
                    while let Some(inside) = chars.next() {
                        if inside == '\u{7}' {
                            break;
                        }
                        if inside == '\u{1b}' {
                            chars.next_if_eq(&'\\');
                            break;
                        }
                    }
                }
                _ => {}
            },
            // The C1 control introducers and every other control character.
            '\n' | '\t' => clean.push(character),
            control if control.is_control() => {}
            printable => clean.push(printable),
        }
    }
    clean
}

/// `text` cut to at most `max` bytes on a character boundary, with "…" when cut.
pub fn truncated(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// JSON text that YAML reads as the same value. YAML takes U+0085, U+2028 and U+2029 for
/// line breaks, even inside quotes, and refuses characters outside its printable set
/// (U+007F-U+009F, U+FEFF, U+FFFE, U+FFFF). Helm reads a values file as YAML, and the API
/// server a server-side apply body: a tenant's value holding one of these made helm fail
/// on the whole file, or the API server refuse the apply. Each is written as a `\uXXXX` escape, which JSON and YAML both read
/// back as that character. In JSON text they can only stand inside strings, where
/// serde_json already escapes the characters below U+0020.
pub fn yaml_safe(json: String) -> String {
    if json.chars().all(yaml_keeps) {
        return json;
    }
    let mut text = String::with_capacity(json.len() + 16);
    for character in json.chars() {
        if yaml_keeps(character) {
            text.push(character);
        } else {
            text.push_str(&format!("\\u{:04x}", u32::from(character)));
        }
    }
    text
}

/// Whether YAML reads `character` as itself inside a double-quoted string.
fn yaml_keeps(character: char) -> bool {
    matches!(character,
        '\t' | '\n' | '\r' | ' '..='~'
        | '\u{a0}'..='\u{2027}'
        | '\u{202a}'..='\u{d7ff}'
        | '\u{e000}'..='\u{fefe}'
        | '\u{ff00}'..='\u{fffd}'
        | '\u{10000}'..)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_quoted_whole() {
        assert_eq!(quoted("edge-1"), "\"edge-1\"");
        assert_eq!(quoted("a\"b\n"), "\"a\\\"b\\n\"");
    }

    #[test]
    fn long_text_is_cut_and_the_rest_counted() {
        let text = "x".repeat(10_000);
        let shown = quoted(&text);
        assert!(shown.len() < QUOTE_LIMIT + 32, "{shown}");
        assert!(shown.ends_with("(9936 more bytes)"), "{shown}");
    }

    #[test]
    fn nothing_reaches_the_terminal_but_text() {
        let hostile = "got \u{1b}]0;pwned\u{7}title \u{1b}]52;c;ZXZpbA==\u{1b}\\clip \u{1b}[2J\u{1b}[1;1Hcursor \u{9b}31m\u{1b}Pdcs\u{1b}\\end\nline\ttab";
        let clean = for_terminal(hostile);
        assert_eq!(clean, "got title clip cursor 31mend\nline\ttab");
        assert!(
            !clean
                .chars()
                .any(|c| c.is_control() && c != '\n' && c != '\t')
        );
    }

    #[test]
    fn program_output_is_cleaned_and_its_end_kept() {
        let output = "\u{1b}[31mError:\u{1b}[0m INSTALLATION FAILED:\tchart \"x\" version \"9\" not found\r\n\n\u{7}";
        assert_eq!(
            sanitized_tail(output, 200),
            "Error: INSTALLATION FAILED: chart \"x\" version \"9\" not found"
        );
        let long = format!("{}\nthe end", "x".repeat(5000));
        let tail = sanitized_tail(&long, 100);
        assert!(tail.starts_with('…') && tail.ends_with("the end"), "{tail}");
        assert!(tail.len() <= 104);
    }

    #[test]
    fn truncation_keeps_characters_whole() {
        assert_eq!(truncated("ééé", 3), "é…");
        assert_eq!(truncated("abc", 3), "abc");
    }
}
