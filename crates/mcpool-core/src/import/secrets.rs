//! Finding the literal secrets of an imported entry (env, headers, URL) and
//! replacing them with `${keyring:NAME}` references; VS Code's
//! `${input:ID}` prompts become references the user still has to set.

use serde_json::{json, Map, Value};

use crate::secrets::{clean_name, reference, secret_name, sensitive_name as secret_word};

const PLAIN_HEADERS: &[&str] = &[
    "accept",
    "content-type",
    "user-agent",
    "accept-language",
    "x-request-id",
];

fn looks_like_token(value: &str) -> bool {
    let v = value.trim();
    let prefixes = [
        "ghp_",
        "gho_",
        "github_pat_",
        "sk-",
        "xoxb-",
        "xoxp-",
        "glpat-",
        "AKIA",
        "eyJ",
    ];
    if prefixes.iter().any(|p| v.starts_with(p)) {
        return true;
    }
    v.len() >= 24
        && !v.contains(' ')
        && !v.contains('/')
        && v.chars().any(|c| c.is_ascii_digit())
        && v.chars().any(|c| c.is_ascii_alphabetic())
}

/// A literal secret moved into the keyring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MovedSecret {
    pub name: String,
    /// Where it was, e.g. `env.GITHUB_TOKEN` or `headers.Authorization`.
    pub field: String,
    pub value: String,
}

/// A secret the source did not hold (a VS Code `${input:ID}` prompt): the
/// entry refers to it, and the user stores it with `mcpool secret set`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeededSecret {
    pub name: String,
    pub field: String,
}

/// What [`extract_secrets`] found in one entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extracted {
    pub moved: Vec<MovedSecret>,
    pub needed: Vec<NeededSecret>,
}

/// Replaces every `${input:ID}` in `value` with a keyring reference named
/// after the input, so servers sharing one VS Code input share one secret.
fn replace_inputs(value: &str, field: &str, needed: &mut Vec<NeededSecret>) -> Option<String> {
    if !value.contains("${input:") {
        return None;
    }
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${input:") {
        let after = &rest[start + "${input:".len()..];
        let Some(end) = after.find('}') else { break };
        let name = clean_name(&after[..end]);
        out.push_str(&rest[..start]);
        out.push_str(&reference(&name));
        if !needed.iter().any(|n| n.name == name) {
            needed.push(NeededSecret {
                name,
                field: field.to_string(),
            });
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Some(out)
}

/// Replaces literal secrets in env, headers and the URL with
/// `${keyring:NAME}` references and returns what moved and what is needed.
pub fn extract_secrets(server: &str, entry: &mut Map<String, Value>) -> Extracted {
    let mut found = Extracted::default();
    for (section, always) in [("env", false), ("headers", true)] {
        let Some(Value::Object(map)) = entry.get_mut(section) else {
            continue;
        };
        for (k, v) in map.iter_mut() {
            let Some(value) = v.as_str() else { continue };
            let field = format!("{section}.{k}");
            if let Some(replaced) = replace_inputs(value, &field, &mut found.needed) {
                *v = json!(replaced);
                continue;
            }
            if value.contains("${") || value.is_empty() {
                continue;
            }
            let is_secret = if always {
                !PLAIN_HEADERS.contains(&k.to_ascii_lowercase().as_str())
            } else {
                secret_word(k) || looks_like_token(value)
            };
            if !is_secret {
                continue;
            }
            let name = secret_name(server, &field);
            // Keep a scheme word in the clear so the value still reads right.
            let (prefix, secret) = match value.split_once(' ') {
                Some((scheme, rest))
                    if matches!(scheme.to_ascii_lowercase().as_str(), "bearer" | "basic" | "token") =>
                {
                    (format!("{scheme} "), rest.to_string())
                }
                _ => (String::new(), value.to_string()),
            };
            *v = json!(format!("{prefix}{}", reference(&name)));
            found.moved.push(MovedSecret {
                name,
                field,
                value: secret,
            });
        }
    }
    if let Some(Value::String(url)) = entry.get_mut("url") {
        if let Some(replaced) = replace_inputs(url, "url", &mut found.needed) {
            *url = replaced;
        }
        if let Some(rewritten) = extract_from_url(server, url, &mut found.moved) {
            *url = rewritten;
        }
    }
    found
}

/// Moves a URL's password and secret query values out. The rest of the URL
/// stays byte for byte as written, and each secret is stored exactly as it
/// appeared (still percent-encoded), so resolving the references gives back
/// the original URL.
fn extract_from_url(server: &str, url: &str, moved: &mut Vec<MovedSecret>) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    let mut out = url.to_string();
    let mut changed = false;
    if parsed.password().is_some() {
        // The password as written: between the first ':' of the userinfo
        // and its last '@'.
        let scheme_end = url.find("://")? + 3;
        let authority_end = url[scheme_end..]
            .find(['/', '?', '#'])
            .map_or(url.len(), |i| scheme_end + i);
        let at = url[scheme_end..authority_end].rfind('@')? + scheme_end;
        let colon = url[scheme_end..at].find(':')? + scheme_end;
        let pw = &url[colon + 1..at];
        if !pw.is_empty() && !pw.contains("${") {
            let name = secret_name(server, "url.password");
            moved.push(MovedSecret {
                name: name.clone(),
                field: "url password".into(),
                value: pw.to_string(),
            });
            out = format!("{}{}{}", &url[..colon + 1], reference(&name), &url[at..]);
            changed = true;
        }
    }
    let query_start = out.find('?');
    if let Some(q) = query_start {
        let fragment = out[q..].find('#').map_or(out.len(), |i| q + i);
        let query = out[q + 1..fragment].to_string();
        let mut pairs = Vec::new();
        for pair in query.split('&') {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let key: String = url::form_urlencoded::parse(format!("{k}=").as_bytes())
                .next()
                .map(|(k, _)| k.into_owned())
                .unwrap_or_default();
            if secret_word(&key) && !v.is_empty() && !v.contains("${") {
                let name = secret_name(server, &format!("url.{key}"));
                moved.push(MovedSecret {
                    name: name.clone(),
                    field: format!("url query {key}"),
                    value: v.to_string(),
                });
                pairs.push(format!("{k}={}", reference(&name)));
                changed = true;
            } else {
                pairs.push(pair.to_string());
            }
        }
        out = format!("{}?{}{}", &out[..q], pairs.join("&"), &out[fragment..]);
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extract(entry: Value) -> (Value, Extracted) {
        let Value::Object(mut map) = entry else { panic!() };
        let found = extract_secrets("s", &mut map);
        (Value::Object(map), found)
    }

    #[test]
    fn names_that_say_secret() {
        for name in [
            "GITHUB_TOKEN",
            "apiKey",
            "PGPASSWORD",
            "DB_PASSWORD",
            "access_token",
            "CLIENT_SECRET",
        ] {
            assert!(secret_word(name), "{name}");
        }
        for name in ["PWD", "DEBUG", "REGION", "PATH", "LOG_LEVEL"] {
            assert!(!secret_word(name), "{name}");
        }
    }

    #[test]
    fn urls_keep_everything_but_the_secret() {
        let (entry, found) = extract(json!({
            "url": "https://u:p%40ss@h.example/mcp?q=a%20b&api_key=k%2Bv&x#frag"
        }));
        assert_eq!(
            entry["url"],
            "https://u:${keyring:s.url.password}@h.example/mcp?q=a%20b&api_key=${keyring:s.url.api_key}&x#frag"
        );
        let values: Vec<(&str, &str)> = found
            .moved
            .iter()
            .map(|m| (m.name.as_str(), m.value.as_str()))
            .collect();
        assert_eq!(values, [("s.url.password", "p%40ss"), ("s.url.api_key", "k%2Bv")]);
        let (entry, found) = extract(json!({"url": "https://h.example/mcp?region=eu"}));
        assert_eq!(entry["url"], "https://h.example/mcp?region=eu");
        assert_eq!(found, Extracted::default());
    }

    #[test]
    fn vscode_inputs_become_needed_secrets() {
        let (entry, found) = extract(json!({
            "env": {"API_KEY": "${input:api-key}", "OTHER": "${input:api-key}", "X": "${env:HOME}"},
            "headers": {"Authorization": "Bearer ${input:tok en}"}
        }));
        assert_eq!(entry["env"]["API_KEY"], "${keyring:api-key}");
        assert_eq!(entry["env"]["OTHER"], "${keyring:api-key}");
        assert_eq!(entry["env"]["X"], "${env:HOME}");
        assert_eq!(entry["headers"]["Authorization"], "Bearer ${keyring:tok_en}");
        let needed: Vec<&str> = found.needed.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(needed, ["api-key", "tok_en"]);
        assert!(found.moved.is_empty());
    }
}
