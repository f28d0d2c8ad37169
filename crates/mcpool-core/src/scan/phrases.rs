//! The words of an attack, found in one pass over a text: instructions
//! that override or hide (`ignore previous instructions`, `do not tell the
//! user`), markup that shouts at a model (`<IMPORTANT>`), directives to it,
//! the secrets and conversation an exfiltration asks for, shell payloads,
//! and words that steer other tools. One Aho-Corasick automaton over the
//! text normalized (lowercase, one space for any run of blanks, straight
//! quotes), built once.

use std::sync::OnceLock;

use aho_corasick::AhoCorasick;

/// What a phrase is a sign of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// Replaces the model's instructions: always an attack.
    Override,
    /// Keeps something from the user: always an attack.
    Conceal,
    /// Markup addressed to a model (`<IMPORTANT>`, `<system>`).
    Markup,
    /// An order to the model about how to use tools; workflows say this
    /// too, so alone it proves nothing.
    Directive,
    /// A secret file or store: keys, credentials, an agent's config.
    SecretFile,
    /// What the user said or other tools returned.
    Conversation,
    /// A command that fetches or runs code, or opens a shell.
    Shell,
    /// Words that redirect another tool's use (`instead of`, `bcc`).
    Steer,
    /// Other tools or servers in general (`all other tools`).
    OtherTools,
    /// Asks for a thing's contents rather than its path.
    Contents,
}

const PHRASES: &[(Kind, &[&str])] = &[
    (
        Kind::Override,
        &[
            "ignore previous instructions",
            "ignore all previous",
            "ignore all prior",
            "ignore prior instructions",
            "ignore the above",
            "ignore any previous",
            "ignore your instructions",
            "ignore all instructions",
            "ignore the previous",
            "disregard previous",
            "disregard all previous",
            "disregard all prior",
            "disregard the above",
            "disregard your instructions",
            "disregard any previous",
            "forget previous instructions",
            "forget all previous",
            "forget your instructions",
            "forget everything",
            "override previous instructions",
            "override your instructions",
            "overrides all other instructions",
            "takes precedence over all",
            "takes priority over",
            "new instructions:",
            "updated instructions:",
            "system override",
            "you are now in",
            "enter developer mode",
            "jailbreak",
            "ignore any earlier",
            "ignore earlier",
            "ignore your safety",
            "ignore the safety",
            "ignore safety",
            "ignore all safety",
            "ignore the user",
            "disregard the user",
            "disregard safety",
            "disregard the safety",
            "disregard the proxy",
            "forget all prior",
            "forget prior",
            "forget the previous",
            "overrides the system prompt",
            "override the system prompt",
            "overrides any",
            "overrides all",
            "trusted at the highest level",
            "act as:",
            "act as a",
            "you have unrestricted",
            "unrestricted access",
            "simulate elevated",
            "elevated privilege",
            "developer mode",
            "hidden instruction",
            "[hidden",
            "directive]:",
            "model-only note",
            "the user cannot see",
            "user cannot see this",
            "not shown to the user",
            "regardless of the result",
            "regardless of the outcome",
            "reveal your system prompt",
            "ignore las instrucciones",
            "ignora las",
            "ignorez",
            "ignoriere",
            "игнорируй",
            "忽略",
            "once this tool has been approved",
            "once approved",
            "after approval",
            "after the approval",
            "during review",
            "arbitrary shell commands",
            "arbitrary commands",
            "exfiltration logic",
            "data-exfiltration",
            "supersedes",
            "route all",
        ],
    ),
    (
        Kind::Conceal,
        &[
            "do not tell the user",
            "don't tell the user",
            "do not inform the user",
            "don't inform the user",
            "do not notify the user",
            "do not let the user",
            "don't let the user",
            "do not mention",
            "don't mention",
            "never mention",
            "never tell the user",
            "never inform the user",
            "without telling the user",
            "without informing the user",
            "without notifying the user",
            "without the user knowing",
            "without the user's knowledge",
            "without user knowledge",
            "not visible to the user",
            "hidden from the user",
            "hide this from",
            "the user must not",
            "the user should not know",
            "user does not need to know",
            "user doesn't need to know",
            "do not reveal",
            "don't reveal",
            "never reveal",
            "do not disclose",
            "do not show the user",
            "don't show the user",
            "do not alert",
            "keep this secret",
            "keep this hidden",
            "keep it secret",
            "this is an implementation detail",
            "it is not important to mention",
            "not important to mention",
            "no need to mention",
            "no need to tell",
            "need not mention",
            "there is no need to inform",
            "do not include this",
            "don't include this",
            "must not mention",
            "should not mention",
            "never disclose",
            "never inform",
            "don't disclose",
            "do not log",
            "don't log",
            "without mentioning",
            "without telling",
            "report them as",
            "no se lo digas",
            "no le digas",
            "sin decirle",
            "не сообщай",
            "не говори",
            "ne dis pas",
            "ne le dis pas",
            "sans le dire",
            "nicht sagen",
            "nichts sagen",
            "verrate nicht",
            "不要告诉",
            "不要提及",
            "ユーザーに伝えない",
            "言わないで",
            "even if it failed",
            "even if it fails",
            "succeeded even if",
            "say it succeeded",
            "claim success",
        ],
    ),
    (
        Kind::Markup,
        &[
            "<important>",
            "</important>",
            "<system>",
            "<system_prompt>",
            "<instructions>",
            "<instruction>",
            "<secret>",
            "<hidden>",
            "<critical>",
            "<admin>",
            "[system]",
            "[important]",
            "[instructions]",
            "[admin]",
            "<|im_start|>",
            "<|system|>",
            "### system",
            "###system",
            "<!--",
            "<important",
            "</important",
            "<importante",
            "<wichtig",
            "<важно",
            "<重要",
            "<system",
            "<instructions",
            "<system-reminder",
            "[role directive]",
            "[metadata directive]",
            "[context",
            "[instruction",
            "## assistant",
            "assistant guidance",
            "assistant:",
        ],
    ),
    (
        Kind::Directive,
        &[
            "before using this tool",
            "before using any",
            "before calling this tool",
            "before calling any",
            "before you use",
            "before you call",
            "before executing",
            "before responding",
            "before answering",
            "you must first",
            "must first read",
            "must first call",
            "first read the",
            "you must always",
            "must always",
            "always call",
            "always use this tool",
            "always include",
            "always pass",
            "always send",
            "always add",
            "always bcc",
            "always cc",
            "this is very important",
            "very important:",
            "very very important",
            "extremely important",
            "critical:",
            "otherwise the tool will",
            "otherwise the application",
            "otherwise it will",
            "the tool will not work unless",
            "tool will fail unless",
            "will not work unless",
            "make sure to pass",
            "make sure to include",
            "make sure to read",
            "as a side note",
            "sidenote",
            "side note",
            "do not skip",
            "is required for the tool to work",
            "remember to",
            "mandatory:",
            "the assistant must",
            "the assistant should",
            "assistant must",
            "the ai must",
            "the ai should",
            "the model must",
            "the model should",
            "the llm must",
            "as an ai",
            "you are an",
            "you must",
            "you should always",
            "silently",
            "secretly",
            "covertly",
            "quietly",
            "in the background without",
        ],
    ),
    (
        Kind::SecretFile,
        &[
            "~/.ssh",
            ".ssh/",
            "id_rsa",
            "id_ed25519",
            "id_ecdsa",
            "id_dsa",
            "authorized_keys",
            ".aws/credentials",
            "aws_secret_access_key",
            "aws credentials",
            "~/.aws",
            "/etc/passwd",
            "/etc/shadow",
            ".npmrc",
            ".pypirc",
            ".netrc",
            ".git-credentials",
            ".gitconfig",
            ".kube/config",
            ".docker/config.json",
            ".gnupg",
            "mcp.json",
            "claude_desktop_config",
            ".cursor/",
            "wallet.dat",
            "seed phrase",
            "mnemonic phrase",
            "private key",
            "private_key",
            "privatekey",
            "secret key",
            "ssh key",
            "api keys",
            "environment variables",
            "env vars",
            "/.env",
            ".env file",
            "~/.env",
            "credentials file",
            "credentials.json",
            "keychain",
            "browser cookies",
            "session cookies",
            "password manager",
            "bash_history",
            "zsh_history",
            "shell history",
            ".bashrc",
            "gpg key",
            "export-secret-keys",
            "secret-keys",
            "personal access token",
            "github_token",
            "get_env",
            "env var",
            "os.environ",
            "process.env",
            "credentials shared",
            "seed words",
            "recovery phrase",
            "ssh-agent",
            "keystore",
            "secrets manager",
            "vault token",
        ],
    ),
    (
        Kind::Conversation,
        &[
            "conversation history",
            "chat history",
            "entire conversation",
            "full conversation",
            "whole conversation",
            "previous messages",
            "all messages",
            "all previous messages",
            "the user's messages",
            "user's previous",
            "system prompt",
            "your system instructions",
            "context window",
            "all tool results",
            "results of other tools",
            "output of other tools",
            "outputs of other tools",
            "other tools' output",
            "other tools output",
            "output of all tools",
            "responses from other tools",
            "everything the user",
            "all the information you have",
            "all information you have",
            "list of all tools",
            "all available tools and",
            "last tool you called",
            "output of the last tool",
            "output of the previous tool",
            "previous tool",
            "raw output of",
            "user and assistant messages",
            "assistant messages",
            "messages exchanged",
            "mentioned by the user",
            "in this chat",
            "this conversation",
            "previous message",
            "last message",
            "user typed",
            "the user said",
            "everything discussed",
            "discussed in",
            "conversation so far",
            "conversación",
            "historial",
            "unterhaltung",
            "verlauf",
            "historique",
            "разговор",
            "переписк",
            "对话",
            "聊天记录",
            "会話",
        ],
    ),
    (
        Kind::Shell,
        &[
            "| sh",
            "|sh",
            "| bash",
            "|bash",
            "bash -c",
            "sh -c",
            "/bin/sh",
            "/bin/bash",
            "/dev/tcp/",
            "nc -e",
            "ncat -e",
            "mkfifo",
            "rm -rf /",
            "rm -rf ~",
            "chmod +x",
            "chmod 777",
            "curl http",
            "curl -s http",
            "curl -fssl",
            "wget http",
            "wget -q",
            "python -c",
            "python3 -c",
            "powershell -",
            "iex(",
            "invoke-expression",
            "base64 -d",
            "base64 --decode",
            "eval(",
            "exec(",
            "os.system(",
            "subprocess.",
            "child_process",
            "reverse shell",
            "crontab",
        ],
    ),
    (
        Kind::Steer,
        &[
            "instead of",
            "instead use",
            "use this tool instead",
            "rather than",
            "do not use",
            "don't use",
            "never use",
            "redirect",
            "bcc",
            "forward all",
            "forward a copy",
            "send a copy",
            "also send",
            "change the recipient",
            "replace the",
            "must be sent to",
            "should be sent to",
            "send it to",
            "send them to",
            "add the following",
            "override",
            "whenever",
            "when the user asks",
            "when using",
            "when calling",
            "when you call",
            "when you use",
            "after calling",
            "after using",
            "every time",
            "for any call to",
            "any call to",
            "tool is called",
            "is invoked",
            "do not use the",
            "always also",
            "send a copy",
            "copy of the result",
            "by email to",
            "forward the",
            "instead forward",
            "should invoke",
            "must invoke",
            "set the remote",
            "append '",
            "append \"",
        ],
    ),
    (
        Kind::OtherTools,
        &[
            "other tools",
            "other tool",
            "any tool",
            "every tool",
            "all tools",
            "other servers",
            "other server",
            "another server",
            "another tool",
            "other mcp",
            "any other function",
        ],
    ),
    (
        Kind::Contents,
        &[
            "content of",
            "contents of",
            "the content",
            "the contents",
            "full text of",
            "text of",
            "read the",
            "read it",
            "paste",
            "cat ",
            "include the",
            "copy of",
            "value of",
            "values of",
            "dump",
            "exfiltrate",
            "reveal",
            "pass it",
            "pass its",
            "pass the",
            "pásalo",
            "pasa el",
            "передай",
            "содержимое",
            "send it",
            "send its",
            "upload",
            "attach",
            "include it",
            "include its",
            "include all",
            "verbatim",
            "posts the result",
            "post the result",
            "posts it",
            "to an external",
            "external endpoint",
            "collector",
        ],
    ),
];

struct Lexicon {
    automaton: AhoCorasick,
    kinds: Vec<Kind>,
}

/// The automaton, built on first use (`None` only if the lists above
/// could not build one: a unit test says they do).
fn lexicon() -> Option<&'static Lexicon> {
    static LEXICON: OnceLock<Option<Lexicon>> = OnceLock::new();
    let built = LEXICON.get_or_init(|| {
        let mut patterns = Vec::new();
        let mut kinds = Vec::new();
        for (kind, phrases) in PHRASES {
            for phrase in *phrases {
                patterns.push(*phrase);
                kinds.push(*kind);
            }
        }
        // A DFA: more memory once, the fastest search for every text.
        let automaton = AhoCorasick::builder()
            .kind(Some(aho_corasick::AhoCorasickKind::DFA))
            .build(patterns)
            .ok()?;
        Some(Lexicon { automaton, kinds })
    });
    built.as_ref()
}

/// One phrase found: its kind, and where in the normalized text.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
}

/// `text` as phrases are matched against: lowercase, blanks as one space,
/// typographic quotes straight.
pub fn normalize(text: &str) -> String {
    if text.is_ascii() {
        return normalize_ascii(text.as_bytes());
    }
    let mut out = String::with_capacity(text.len());
    let mut blank = false;
    for c in text.chars() {
        if c.is_whitespace() {
            blank = true;
            continue;
        }
        if blank && !out.is_empty() {
            out.push(' ');
        }
        blank = false;
        match c {
            '\u{2018}' | '\u{2019}' | '\u{02BC}' => out.push('\''),
            '\u{201C}' | '\u{201D}' => out.push('"'),
            c if c.is_ascii() => out.push(c.to_ascii_lowercase()),
            c => out.extend(c.to_lowercase()),
        }
    }
    out
}

/// [`normalize`] of ASCII text, byte by byte.
fn normalize_ascii(text: &[u8]) -> String {
    let mut out = Vec::with_capacity(text.len());
    let mut blank = false;
    for &b in text {
        if b.is_ascii_whitespace() {
            blank = true;
            continue;
        }
        if blank && !out.is_empty() {
            out.push(b' ');
        }
        blank = false;
        out.push(b.to_ascii_lowercase());
    }
    String::from_utf8(out).unwrap_or_default()
}

/// Every phrase in `normalized` (overlapping ones too).
pub fn find(normalized: &str) -> Vec<Hit> {
    let Some(lexicon) = lexicon() else {
        return Vec::new();
    };
    lexicon
        .automaton
        .find_overlapping_iter(normalized)
        .map(|m| Hit {
            kind: lexicon.kinds[m.pattern().as_usize()],
            start: m.start(),
            end: m.end(),
        })
        .collect()
}

/// The sentence of `normalized` around `at`, cut to about `limit` bytes on
/// character boundaries: evidence to show.
pub fn around(normalized: &str, start: usize, end: usize, limit: usize) -> String {
    let half = limit / 2;
    let mut from = start.saturating_sub(half);
    let mut to = (end + half).min(normalized.len());
    while !normalized.is_char_boundary(from) {
        from -= 1;
    }
    while !normalized.is_char_boundary(to) {
        to += 1;
    }
    let mut out = String::new();
    if from > 0 {
        out.push('…');
    }
    out.push_str(normalized[from..to].trim());
    if to < normalized.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_phrase_lists_build_an_automaton_and_find_through_case_and_blanks() {
        assert!(super::lexicon().is_some());
        let found = super::find(&super::normalize("Please  IGNORE\nprevious   Instructions"));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].kind, super::Kind::Override);
    }
}
