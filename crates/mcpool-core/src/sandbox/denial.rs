//! What a sandboxed server was refused, read from the last lines of its
//! stderr: the runtimes' own words for a denied open or connect (Node's
//! `EACCES: permission denied, open '/x'`, Python's `PermissionError:
//! [Errno 13] Permission denied: '/x'`, a shell's `cat: /x: Permission
//! denied`, Rust's `Permission denied (os error 13)`). Pure: the caller
//! passes the lines; the newest denial wins.

use serde::Serialize;

/// One refusal, as the card shows it and an "Allow" button fixes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Denial {
    /// `read`, `write`, `network` or `socket` (a Unix socket by path that
    /// no grant names); `exit` when the server ended right after it
    /// started and its words name nothing it was refused.
    pub access: &'static str,
    /// The file or folder it wanted, when its words name one.
    pub path: Option<String>,
    /// The address it wanted to reach (`127.0.0.1:8080`), when named.
    pub address: Option<String>,
    /// One sentence for the card.
    pub sentence: String,
}

/// The newest refusal in `lines` (oldest first), if any. A refusal that
/// names no path is a network one when the lines just before it (a
/// traceback) speak of a connect.
pub fn denial(lines: &[String]) -> Option<Denial> {
    (0..lines.len()).rev().find_map(|i| {
        let before = &lines[i.saturating_sub(3)..i];
        of_line(&lines[i], before)
    })
}

/// A server that exited while starting and named nothing it was refused:
/// the sandbox may be why (a runtime that dies on a refused file without a
/// word), though nothing can say which grant it needed. `how` is how the
/// process ended ("the process exited with status 1").
pub fn exited_at_start(how: &str) -> Denial {
    Denial {
        access: "exit",
        path: None,
        address: None,
        sentence: format!(
            "It stopped right after it started ({how}) without naming what it was refused; its sandbox may have kept \
             it from a file or connection it needs: its log says what it did, and its sandbox set to \"off\" for one \
             start tells whether the sandbox is why."
        ),
    }
}

fn of_line(line: &str, before: &[String]) -> Option<Denial> {
    let lower = line.to_ascii_lowercase();
    if let Some(socket) = socket_in(line, &lower) {
        return Some(Denial {
            access: "socket",
            sentence: format!("Its sandbox keeps it from the Unix socket {socket}."),
            path: Some(socket),
            address: None,
        });
    }
    if !(lower.contains("permission denied") || lower.contains("eacces") || lower.contains("operation not permitted")) {
        return None;
    }
    let networked = |text: &str| {
        let text = text.to_ascii_lowercase();
        ["connect", "socket", "bind"].iter().any(|w| text.contains(*w))
    };
    let traced = path_in(line).is_none() && before.iter().any(|l| networked(l.as_str()));
    if networked(line) || traced {
        let address = address_in(line);
        let sentence = match &address {
            Some(a) => format!("Its sandbox refused a network connection to {a}."),
            None => "Its sandbox refused a network connection.".to_string(),
        };
        return Some(Denial {
            access: "network",
            path: None,
            address,
            sentence,
        });
    }
    // A refusal without a path is too vague to blame on the sandbox (a
    // server's own API may say "permission denied").
    let path = Some(path_in(line)?);
    let writing = ["write", "mkdir", "open for writing", "creat", "rename", "unlink", "w+"]
        .iter()
        .any(|w| lower.contains(w));
    let access = if writing { "write" } else { "read" };
    let sentence = format!(
        "Its sandbox refused to let it {access} {}.",
        path.as_deref().unwrap_or_default()
    );
    Some(Denial {
        access,
        path,
        address: None,
        sentence,
    })
}

/// The socket of a refused connect to a Unix socket by path: the sandbox
/// answers one it hides with "no such file" and one it masks with
/// "connection refused" (Node's `connect ECONNREFUSED /var/run/docker.sock`,
/// `connect ENOENT /run/user/1000/bus`).
fn socket_in(line: &str, lower: &str) -> Option<String> {
    let refused = ["econnrefused", "enoent", "connection refused", "no such file"];
    if !lower.contains("connect") || !refused.iter().any(|w| lower.contains(w)) {
        return None;
    }
    path_in(line)
}

/// The first absolute path in `line`: quoted (`'…'`, `"…"`) or a bare word
/// ending at a space or `:`.
fn path_in(line: &str) -> Option<String> {
    for quote in ['\'', '"'] {
        let mut rest = line;
        while let Some(start) = rest.find(quote) {
            let after = &rest[start + 1..];
            let Some(end) = after.find(quote) else { break };
            let inside = &after[..end];
            if inside.starts_with('/') {
                return Some(inside.to_string());
            }
            rest = &after[end + 1..];
        }
    }
    line.split([' ', '\t'])
        .map(|w| w.trim_end_matches([':', ',', ';', ')']).trim_start_matches('('))
        .find(|w| w.starts_with('/') && w.len() > 1)
        .map(str::to_string)
}

/// A `host:port` in `line` (`127.0.0.1:8080`, `localhost:3000`).
fn address_in(line: &str) -> Option<String> {
    line.split(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | '\'' | '"' | ','))
        .find(|w| {
            w.rsplit_once(':').is_some_and(|(host, port)| {
                !host.is_empty()
                    && !port.is_empty()
                    && port.chars().all(|c| c.is_ascii_digit())
                    && host.contains(['.', 'l'])
            })
        })
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(lines: &[&str]) -> Option<Denial> {
        denial(&lines.iter().map(|l| l.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn the_runtimes_words_name_the_access_and_the_path_or_address() {
        // The lines, then the access, path and address they name.
        type Case<'a> = (&'a [&'a str], &'a str, Option<&'a str>, Option<&'a str>);
        let cases: [Case; 5] = [
            (
                &["Error: EACCES: permission denied, open '/home/ada/.config/app/settings.json'"],
                "read",
                Some("/home/ada/.config/app/settings.json"),
                None,
            ),
            (
                &["PermissionError: [Errno 13] Permission denied: '/srv/data/in.csv'"],
                "read",
                Some("/srv/data/in.csv"),
                None,
            ),
            (
                &["cat: /home/ada/.ssh/id_ed25519: Permission denied"],
                "read",
                Some("/home/ada/.ssh/id_ed25519"),
                None,
            ),
            (
                &["Error: EACCES: permission denied, mkdir '/home/ada/.local/state/app'"],
                "write",
                Some("/home/ada/.local/state/app"),
                None,
            ),
            (
                &["Error: connect EACCES 127.0.0.1:5432"],
                "network",
                None,
                Some("127.0.0.1:5432"),
            ),
        ];
        for (lines, access, path, address) in cases {
            let d = of(lines).unwrap_or_else(|| panic!("{lines:?}"));
            assert_eq!(
                (d.access, d.path.as_deref(), d.address.as_deref()),
                (access, path, address),
                "{lines:?}"
            );
        }
        let python = of(&["PermissionError: [Errno 13] Permission denied: '/srv/data/in.csv'"]).expect("python");
        assert_eq!(python.sentence, "Its sandbox refused to let it read /srv/data/in.csv.");
        let traceback = [
            "  File \"socket.py\", line 836",
            "    sock.connect(sa)",
            "PermissionError: [Errno 13] Permission denied",
        ];
        assert_eq!(
            of(&traceback).map(|d| d.access),
            Some("network"),
            "a traceback's connect"
        );
        let plain = of(&["socket.connect failed: Permission denied"]).expect("socket");
        assert_eq!((plain.access, plain.address), ("network", None));
        for line in [
            "Error: connect ECONNREFUSED /var/run/docker.sock",
            "Error: connect ENOENT /var/run/docker.sock",
        ] {
            let socket = of(&[line]).unwrap_or_else(|| panic!("{line}"));
            assert_eq!(
                (socket.access, socket.path.as_deref()),
                ("socket", Some("/var/run/docker.sock")),
                "{line}"
            );
            assert_eq!(
                socket.sentence,
                "Its sandbox keeps it from the Unix socket /var/run/docker.sock."
            );
        }
        assert_eq!(
            of(&["Error: connect ECONNREFUSED 127.0.0.1:5432"]),
            None,
            "TCP refused is the peer's"
        );
    }

    #[test]
    fn other_lines_are_no_denial_and_the_newest_wins() {
        assert_eq!(of(&["listening on stdio", "ready"]), None);
        assert_eq!(
            of(&["GitHub API: permission denied for this token"]),
            None,
            "no path: not the sandbox's"
        );
        let newest = of(&[
            "cat: /a/old: Permission denied",
            "fine",
            "cat: /b/new: Permission denied",
        ])
        .expect("one");
        assert_eq!(newest.path.as_deref(), Some("/b/new"));
    }
}
