//! Finding the closer of a bracket or brace in a template, past quoted strings.

/// The index of `closer` matching the opener at `open`, skipping quoted strings (with
/// backslash escapes); with `nests`, openers in between need their own closers.
pub fn closing(chars: &[char], open: usize, nests: Option<char>, closer: char) -> Option<usize> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut at = open;
    while at < chars.len() {
        let character = chars[at];
        match quote {
            Some(open_quote) => {
                if character == '\\' {
                    at += 1;
                } else if character == open_quote {
                    quote = None;
                }
            }
            None if character == '\'' || character == '"' => quote = Some(character),
            None if Some(character) == nests => depth += 1,
            None if character == closer => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(at);
                }
            }
            None => {}
        }
        at += 1;
    }
    None
}
