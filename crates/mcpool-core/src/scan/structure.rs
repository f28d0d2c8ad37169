//! Rules over the structure of a request rather than its exact words: a
//! verb of taking (read, send, paste, include, …) within a few words of a
//! sensitive object (a file in the user's home, a secret, the
//! conversation, other tools' output); a secret that belongs to the user
//! or the session (`the user's token`, `your system prompt`); an order
//! addressed to the model (`you must`, `the assistant should`). The words
//! are found by the one automaton of `phrases.rs`; this module pairs them
//! by distance.

use super::phrases::{Hit, Kind};

/// How near (in bytes of normalized text) two signs count as one request.
const NEAR: usize = 60;

/// The word lists of the structural rules, merged into the automaton of
/// `phrases.rs`. A word of these kinds counts only where a word starts.
pub(super) const PHRASES: &[(Kind, &[&str])] = &[
    (
        Kind::Take,
        &[
            "read ",
            "reads ",
            "reading ",
            "send ",
            "sends ",
            "sending ",
            "include",
            "attach",
            "pass ",
            "passing ",
            "forward",
            "upload",
            "copy ",
            "copied ",
            "collect",
            "append",
            "paste",
            "put ",
            "puts ",
            "embed",
            "export",
            "serializ",
            "dump",
            "cat ",
            "post ",
            "posts ",
            "submit",
            "provide ",
            "transmit",
            "exfiltrat",
            "contents",
            "content of",
            "verbatim",
            "full text",
            "output of",
            "inhalt",
            "contenu",
            "contenido",
            "содержим",
            "内容",
            "передай",
            "envía",
            "envoie",
            "übermittl",
            "sende ",
        ],
    ),
    (
        Kind::Secret,
        &[
            "credential",
            "secret",
            "password",
            "passphrase",
            "passwd",
            "private key",
            "api key",
            "api_key",
            "apikey",
            "access key",
            "access token",
            "auth token",
            "api token",
            "bearer token",
            "session token",
            "refresh token",
            "oauth token",
            "cookie",
            "keychain",
            "clipboard",
            "seed phrase",
            "mnemonic",
            "one-time code",
            "one time code",
            "otp",
            "2fa code",
            "authorization header",
            "bearer",
            "connection string",
            "environment variable",
            "printenv",
            "wallet",
            "chain-of-thought",
            "chain of thought",
            "hidden instructions",
            "developer instructions",
            "system message",
            "mot de passe",
            "contraseña",
            "passwort",
            "пароль",
            "密码",
            "密钥",
            "凭证",
            "凭据",
        ],
    ),
    (
        Kind::Path,
        &[
            "~/",
            "~\\",
            "/etc/",
            "%appdata%",
            "%userprofile%",
            "$home/",
            "/home/",
            "/users/",
            "application support/",
            ".pem",
            ".p12",
            ".pfx",
            ".ppk",
            ".kdbx",
            ".jks",
            "/.config/",
            ".config/",
            "known_hosts",
            ".env ",
            ".env,",
            ".env)",
            ".env.",
            "dotenv",
        ],
    ),
    (
        Kind::Owner,
        &[
            "user's",
            "users'",
            "of the user",
            "client's",
            "current user",
            "this machine",
            "user's machine",
            "utilisateur",
            "usuario",
            "benutzer",
            "用户",
            "пользовател",
        ],
    ),
    (
        Kind::Session,
        &[
            "this session",
            "the session",
            "so far",
            "most recent",
            "recently",
            "recent ",
            "every other",
            "any server",
            "any other server",
            "other mcp",
            "every tool",
            "all tools",
            "tool you called",
            "tools you called",
            "tool called",
            "tools called",
            "returned by the",
            "result of the",
            "results of the",
            "mentioned in",
            "you encounter",
            "you have seen",
            "you have received",
            "in the conversation",
            "in the chat",
        ],
    ),
    (
        Kind::Model,
        &[
            "you ",
            "your ",
            "assistant",
            "the ai ",
            "the model",
            "the agent",
            "the llm",
            "claude",
        ],
    ),
    (
        Kind::Order,
        &[
            "must ",
            "should ",
            "always ",
            "never ",
            "do not ",
            "don't ",
            "make sure",
            "be sure",
            "need to ",
            "required to ",
            "have to ",
            "first ",
            "before ",
            "also ",
        ],
    ),
    (
        Kind::Weaken,
        &[
            "ignore",
            "disregard",
            "forget",
            "override",
            "no longer apply",
            "no longer applies",
            "bypass",
            "disable",
            "turn off",
            "switch off",
            "skip",
            "suspend",
            "are disabled",
            "is disabled",
            "are off",
            "without applying",
            "do not ask",
            "don't ask",
            "without asking",
        ],
    ),
    (
        Kind::Safeguard,
        &[
            "instruction",
            "safety",
            "guardrail",
            "guideline",
            "restriction",
            "content filter",
            "filtering",
            "filters",
            "security check",
            "security control",
            "confirmation",
            "warning",
            "policy",
            "policies",
            "constraint",
            "two-factor",
            "2fa",
            "mfa",
            "authentication",
            "verification",
            "unverified",
            "privacy",
        ],
    ),
    (
        Kind::External,
        &[
            "external",
            "remote server",
            "remote endpoint",
            "third-party",
            "third party",
            "http://",
            "https://",
            "webhook",
            "attacker",
            "collector",
            "our server",
            "our endpoint",
            "our backup",
        ],
    ),
    (
        Kind::Personal,
        &[
            "personal data",
            "personal information",
            "email address",
            "e-mail address",
            "phone number",
            "home address",
            "credit card",
            "card number",
            "social security",
            "passport number",
            "date of birth",
        ],
    ),
];

/// Kinds whose words must start a word (`put` is not `input`).
fn bounded(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Take
            | Kind::Secret
            | Kind::Owner
            | Kind::Session
            | Kind::Model
            | Kind::Order
            | Kind::Weaken
            | Kind::Safeguard
            | Kind::External
            | Kind::Personal
    )
}

/// Whether a hit of `kind` at `start` of `normalized` counts: a word of
/// the kinds above must start a word.
pub fn starts_word(kind: Kind, normalized: &[u8], start: usize) -> bool {
    // Nor inside a path, a URL or an identifier (`operators-and-collectors`).
    !bounded(kind)
        || start == 0
        || !matches!(normalized[start - 1], b'a'..=b'z' | b'0'..=b'9' | b'-' | b'/' | b'_' | b'.')
}

/// The signs of one text, as the rules read them.
pub struct Signs<'h> {
    hits: &'h [Hit],
}

/// A structural finding: how bad, and the span to quote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    pub strong: bool,
    pub object: bool,
    pub start: usize,
    pub end: usize,
}

/// A sensitive object: a secret file or path, the conversation or other
/// tools' output.
const OBJECTS: &[Kind] = &[Kind::SecretFile, Kind::Path, Kind::Conversation];
const TAKING: &[Kind] = &[Kind::Take, Kind::Contents];
/// What is worth sending out.
const SENDABLE: &[Kind] = &[
    Kind::Secret,
    Kind::Personal,
    Kind::Owner,
    Kind::Session,
    Kind::SecretFile,
    Kind::Conversation,
];

impl<'h> Signs<'h> {
    pub fn of(hits: &'h [Hit]) -> Self {
        Signs { hits }
    }

    fn any(&self, kinds: &[Kind]) -> bool {
        self.hits.iter().any(|h| kinds.contains(&h.kind))
    }

    fn kinds<'k>(&self, kinds: &'k [Kind]) -> impl Iterator<Item = &'h Hit> + use<'h, 'k> {
        self.hits.iter().filter(move |h| kinds.contains(&h.kind))
    }

    /// A request for a sensitive object: taken (read, pasted, sent) or
    /// the user's own. `strong`: a secret file, a path, the conversation,
    /// or a secret with its owner named; `object`: a file, a path or the
    /// conversation taken (not a secret by its kind only).
    pub fn request(&self, normalized: &str) -> Option<Found> {
        let owned = self.any(&[Kind::Owner, Kind::Session]);
        let found = |(start, end): (usize, usize), strong: bool, object: bool| Found {
            strong,
            object,
            start,
            end,
        };
        // `do not include any passwords` asks for none.
        let taking: Vec<&Hit> = self
            .hits
            .iter()
            .filter(|h| TAKING.contains(&h.kind) && !negated(normalized, h.start))
            .collect();
        if let Some(span) = near(&taking, self.hits, OBJECTS) {
            return Some(found(span, true, true));
        }
        if let Some(span) = near(&taking, self.hits, &[Kind::Secret]) {
            return Some(found(span, owned, false));
        }
        let owners: Vec<&Hit> = self.kinds(&[Kind::Owner, Kind::Session]).collect();
        if let Some(span) = near(&owners, self.hits, &[Kind::Secret]) {
            return Some(found(span, true, false));
        }
        // Secrets and personal data that turn up in the conversation or
        // in tools' output.
        let secrets: Vec<&Hit> = self.kinds(&[Kind::Secret, Kind::Personal]).collect();
        if let Some(span) = near(&secrets, self.hits, &[Kind::Conversation, Kind::Session]) {
            return Some(found(span, true, false));
        }
        // Sent out: to an external endpoint, with anything to send or as
        // an extra step (`also posts the result to …`).
        let sent = taking.iter().copied().filter(|h| {
            near(&[*h], self.hits, SENDABLE).is_some()
                || preceded(normalized, h.start, &["also ", "additionally ", "silently ", "then "])
        });
        let sent: Vec<&Hit> = sent.collect();
        near(&sent, self.hits, &[Kind::External]).map(|span| found(span, true, true))
    }

    /// A safeguard turned off (`ignore the safety guidelines`, `do not
    /// ask for confirmation`, `disable two-factor authentication`).
    pub fn weakened(&self) -> Option<(usize, usize)> {
        let weaken: Vec<&Hit> = self.kinds(&[Kind::Weaken]).collect();
        near(&weaken, self.hits, &[Kind::Safeguard])
    }

    /// Whether a verb of taking opens a sentence: an order.
    pub fn imperative(&self, normalized: &str) -> bool {
        self.kinds(TAKING).any(|h| {
            // `reads …` describes; `read …` orders.
            let word = normalized[h.start..].split(' ').next().unwrap_or_default();
            let base = !word.ends_with('s') || word.ends_with("ss");
            let before = normalized[..h.start].trim_end();
            (base && (before.is_empty() || before.ends_with(['.', ':', ';', '!', '>', ']'])))
                || preceded(normalized, h.start, &["then ", "also "])
        })
    }

    /// An order addressed to the model: a directive, markup, or a word of
    /// obligation beside `you`, `the assistant`, `the model`.
    pub fn addressed(&self) -> bool {
        let model: Vec<&Hit> = self.kinds(&[Kind::Model]).collect();
        self.any(&[Kind::Directive, Kind::Markup]) || near(&model, self.hits, &[Kind::Order]).is_some()
    }
}

/// The span of the first word of `a` and a word of kinds `b` at most
/// `NEAR` apart.
fn near(a: &[&Hit], hits: &[Hit], b: &[Kind]) -> Option<(usize, usize)> {
    for x in a {
        for y in hits.iter().filter(|h| b.contains(&h.kind)) {
            let gap = if x.end <= y.start {
                y.start - x.end
            } else {
                x.start.saturating_sub(y.end)
            };
            if gap <= NEAR {
                return Some((x.start.min(y.start), x.end.max(y.end)));
            }
        }
    }
    None
}

/// Whether the word at `start` is negated: `do not`, `never`, `without`
/// just before it.
fn negated(normalized: &str, start: usize) -> bool {
    let mut from = start.saturating_sub(16);
    while !normalized.is_char_boundary(from) {
        from -= 1;
    }
    let before = &normalized[from..start];
    ["not ", "n't ", "never ", "without ", "no "]
        .iter()
        .any(|w| before.contains(w))
}

/// Whether one of `words` ends just before `start`.
fn preceded(normalized: &str, start: usize, words: &[&str]) -> bool {
    let before = &normalized[..start];
    words.iter().any(|w| before.ends_with(w))
}

/// Whether the words of a tool's purpose speak of secrets, so that a
/// parameter asking for one is in place (a vault, a login, an SSH tool).
pub fn about_secrets(about_hits: &[Hit]) -> bool {
    about_hits
        .iter()
        .any(|h| matches!(h.kind, Kind::Secret | Kind::SecretFile | Kind::Path))
}
