//! JSONC, as VS Code and opencode write it: `//` and `/* */` comments and
//! trailing commas, reduced to plain JSON.

/// Strips comments and trailing commas outside strings; the rest of the text,
/// line breaks included, is kept so parse errors still point at the right line.
pub fn strip_jsonc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    // Byte offset in `out` of a comma that may turn out to be trailing.
    let mut pending_comma: Option<usize> = None;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if c == '\\' {
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match (c, chars.peek()) {
            ('/', Some('/')) => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut prev = ' ';
                for n in chars.by_ref() {
                    if n == '\n' {
                        out.push('\n');
                    }
                    if prev == '*' && n == '/' {
                        break;
                    }
                    prev = n;
                }
            }
            (c, _) if c.is_whitespace() => out.push(c),
            (c, _) => {
                if let Some(at) = pending_comma.take() {
                    if c == '}' || c == ']' {
                        out.replace_range(at..at + 1, " ");
                    }
                }
                if c == ',' {
                    pending_comma = Some(out.len());
                }
                in_string = c == '"';
                out.push(c);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::strip_jsonc;
    use serde_json::{json, Value};

    fn parse(text: &str) -> Value {
        serde_json::from_str(&strip_jsonc(text)).unwrap()
    }

    #[test]
    fn comments_and_trailing_commas_go_strings_stay() {
        assert_eq!(
            parse("{ // c\n \"a\": \"http://x/*y*/\", /* b */ \"b\": [1, 2, /* x */ ], }"),
            json!({"a": "http://x/*y*/", "b": [1, 2]})
        );
        // A value ending in a backslash does not hide the next comma.
        assert_eq!(
            parse(r#"{"p": "C:\\tools\\", "q": ["x", ], }"#),
            json!({"p": "C:\\tools\\", "q": ["x"]})
        );
        assert_eq!(parse(r#"{"s": "a, }"}"#), json!({"s": "a, }"}));
        assert_eq!(strip_jsonc("{\n/* a\nb */\n}").lines().count(), 4);
    }
}
