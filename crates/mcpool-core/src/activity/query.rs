//! Reading the log back: the filters of `GET /api/activity` and `mcpool
//! activity`, a page of entries newest first (or, following, oldest first
//! after an id), and the JSON each entry shows.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use rusqlite::types::Value as SqlValue;
use rusqlite::Connection;
use serde::Serialize;

use super::{dict, store, to_ms, Kind};
use crate::calls::rfc3339;

/// The most a page holds.
pub const MAX_LIMIT: u32 = 1000;
/// A page's size when none is asked for.
pub const DEFAULT_LIMIT: u32 = 100;

/// Which entries to show. Empty: the newest [`DEFAULT_LIMIT`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub server: Option<String>,
    pub tool: Option<String>,
    pub client: Option<String>,
    /// `ok`, `error` (any failure), or one outcome word.
    pub outcome: Option<String>,
    pub kind: Option<Kind>,
    /// Milliseconds since the epoch, inclusive.
    pub since: Option<i64>,
    pub until: Option<i64>,
    pub limit: u32,
    /// Older than this id (the previous page's `next_cursor`).
    pub cursor: Option<i64>,
    /// Newer than this id, oldest first (following the log).
    pub after: Option<i64>,
    /// Only the tool calls of the script run with this id (code mode).
    pub parent: Option<i64>,
}

/// A filter that does not read: the parameter and what it should be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterError {
    pub field: String,
    pub message: String,
}

impl std::fmt::Display for FilterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl Filter {
    /// From query parameters (`server`, `tool`, `client`, `outcome`,
    /// `kind`, `since`, `until`, `limit`, `cursor`, `after`); empty values
    /// are no filter. Times are RFC 3339, milliseconds since the epoch, or
    /// an age such as `90s`, `15m`, `2h`, `7d`.
    pub fn from_query(params: &BTreeMap<String, String>, now: SystemTime) -> Result<Filter, FilterError> {
        let get = |k: &str| params.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
        let bad = |field: &str, message: &str| FilterError {
            field: field.to_string(),
            message: message.to_string(),
        };
        let kind = match get("kind") {
            None => None,
            Some(k) => Some(Kind::parse(k).ok_or_else(|| bad("kind", "expected tool, prompt, resource or server"))?),
        };
        let time = |field: &str| -> Result<Option<i64>, FilterError> {
            match get(field) {
                None => Ok(None),
                Some(v) => parse_time(v, now).map(Some).ok_or_else(|| {
                    bad(
                        field,
                        "expected an RFC 3339 time, milliseconds since 1970, or an age such as 15m, 2h, 7d",
                    )
                }),
            }
        };
        let id = |field: &str| -> Result<Option<i64>, FilterError> {
            match get(field) {
                None => Ok(None),
                Some(v) => v
                    .parse::<i64>()
                    .ok()
                    .filter(|n| *n >= 0)
                    .map(Some)
                    .ok_or_else(|| bad(field, "expected the id an earlier answer gave")),
            }
        };
        let limit = match get("limit") {
            None => DEFAULT_LIMIT,
            Some(v) => v
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=MAX_LIMIT).contains(n))
                .ok_or_else(|| bad("limit", "expected a number from 1 to 1000"))?,
        };
        let f = Filter {
            server: get("server").map(str::to_string),
            tool: get("tool").map(str::to_string),
            client: get("client").map(str::to_string),
            outcome: get("outcome").map(str::to_string),
            kind,
            since: time("since")?,
            until: time("until")?,
            limit,
            cursor: id("cursor")?,
            after: id("after")?,
            parent: id("parent")?,
        };
        if f.cursor.is_some() && f.after.is_some() {
            return Err(bad(
                "after",
                "give either cursor (older entries) or after (newer ones), not both",
            ));
        }
        Ok(f)
    }
}

/// RFC 3339, epoch milliseconds, or an age back from `now`.
pub fn parse_time(v: &str, now: SystemTime) -> Option<i64> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(v) {
        return Some(t.timestamp_millis());
    }
    if let Ok(ms) = v.parse::<i64>() {
        return Some(ms);
    }
    let (n, unit) = v.split_at(v.find(|c: char| !c.is_ascii_digit())?);
    let n: u64 = n.parse().ok()?;
    let secs = match unit {
        "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        "d" => n * 86_400,
        _ => return None,
    };
    Some(to_ms(now.checked_sub(Duration::from_secs(secs))?))
}

/// One entry as the API shows it. `tool`, `client`, `duration_ms` and
/// `outcome` are always there (null where they do not apply).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Item {
    pub id: i64,
    pub time: String,
    pub kind: &'static str,
    pub server: String,
    /// The tool, for a tool call.
    pub tool: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    /// For a server event: `status`, `connect`, `signin`, `approval`, `config`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    pub client: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    pub duration_ms: Option<i64>,
    pub outcome: String,
    /// For requests: whether it succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ok: Option<bool>,
    pub error: Option<String>,
    /// For a server event that is not a failure: what it says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_bytes: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// The id of the script run that made this call (code mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<i64>,
}

/// A page of entries.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Page {
    pub items: Vec<Item>,
    /// Give as `cursor` for the next (older) page; null at the end.
    pub next_cursor: Option<String>,
    /// The newest id in the log: give as `after` to follow it.
    pub last_id: i64,
}

/// Outcome words that count as a success (`store::is_ok`).
const OK_WORDS: [&str; 3] = ["ok", "task", "input_required"];

pub(super) fn run(conn: &Connection, f: &Filter) -> rusqlite::Result<Page> {
    let last_id: i64 = conn.query_row("SELECT coalesce(max(id), 0) FROM activity", [], |r| r.get(0))?;
    let nothing = Page {
        items: Vec::new(),
        next_cursor: None,
        last_id,
    };
    let mut clauses: Vec<String> = Vec::new();
    let mut values: Vec<SqlValue> = Vec::new();
    let mut add = |clause: &str, given: &[i64]| {
        clauses.push(clause.to_string());
        values.extend(given.iter().map(|v| SqlValue::Integer(*v)));
    };
    // Names become dictionary ids first: one the file never held matches
    // nothing, and the filters stay on the row's own integer columns (and
    // the server index).
    let id_of = |text: &str| dict::lookup(conn, text);
    if let Some(s) = &f.server {
        let Some(id) = id_of(s)? else { return Ok(nothing) };
        add("a.server = ?", &[id]);
    }
    if let Some(t) = &f.tool {
        let Some(id) = id_of(t)? else { return Ok(nothing) };
        add("a.kind = ? AND a.name = ?", &[Kind::Tool.code(), id]);
    }
    if let Some(c) = &f.client {
        let Some(id) = id_of(c)? else { return Ok(nothing) };
        add("a.agent IN (SELECT id FROM agents WHERE client = ?)", &[id]);
    }
    if let Some(k) = f.kind {
        add("a.kind = ?", &[k.code()]);
    }
    if f.since.is_some() || f.until.is_some() {
        // The commit marks turn a time window into the ids it can hold, so
        // the rows outside are never read (there is no time index).
        let Some((first, last)) = store::id_range(conn, f.since, f.until)? else {
            return Ok(nothing);
        };
        add("a.id BETWEEN ? AND ?", &[first, last]);
    }
    if let Some(t) = f.since {
        add("a.time >= ?", &[t]);
    }
    if let Some(t) = f.until {
        add("a.time <= ?", &[t]);
    }
    if let Some(c) = f.cursor {
        add("a.id < ?", &[c]);
    }
    if let Some(a) = f.after {
        add("a.id > ?", &[a]);
    }
    if let Some(p) = f.parent {
        add("a.parent_run = (SELECT run FROM activity WHERE id = ?)", &[p]);
    }
    match f.outcome.as_deref() {
        None => {}
        Some(word @ ("ok" | "error")) => {
            let mut ids = Vec::new();
            for w in OK_WORDS {
                if let Some(id) = id_of(w)? {
                    ids.push(id.to_string());
                }
            }
            // Integers the file gave: safe to write into the statement.
            let set = ids.join(", ");
            let not = if word == "ok" { "" } else { "NOT " };
            if word == "ok" && ids.is_empty() {
                return Ok(nothing);
            }
            add(
                &format!("a.kind != {} AND a.outcome {not}IN ({set})", store::KIND_SERVER),
                &[],
            );
        }
        Some(word) => {
            let Some(id) = id_of(word)? else { return Ok(nothing) };
            add("a.outcome = ?", &[id]);
        }
    }
    let filter = if clauses.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", clauses.join(" AND "))
    };
    let order = if f.after.is_some() { "ASC" } else { "DESC" };
    let limit = f.limit.clamp(1, MAX_LIMIT);
    // LEFT JOINs: the entries stay the outer loop (in id order, stopping at
    // the limit); a missing name reads as null rather than losing the row.
    let sql = format!(
        "SELECT a.id, a.time, a.kind, s.text, n.text, c.text, v.text, se.text, e.text, a.duration_ms,
                o.text, a.error, a.result_bytes, a.arguments, a.result, a.trace_id,
                (SELECT p.id FROM activity p WHERE p.run = a.parent_run)
         FROM activity a
         LEFT JOIN names s ON s.id = a.server
         LEFT JOIN names n ON n.id = a.name
         LEFT JOIN names o ON o.id = a.outcome
         LEFT JOIN agents g ON g.id = a.agent
         LEFT JOIN names c ON c.id = g.client
         LEFT JOIN names v ON v.id = g.client_version
         LEFT JOIN names se ON se.id = g.session
         LEFT JOIN names e ON e.id = g.endpoint
         {filter} ORDER BY a.id {order} LIMIT {}",
        limit + 1
    );
    let mut stmt = conn.prepare(&sql)?;
    let mut items = stmt
        .query_map(rusqlite::params_from_iter(values), row_item)?
        .collect::<rusqlite::Result<Vec<Item>>>()?;
    let more = items.len() > limit as usize;
    items.truncate(limit as usize);
    let next_cursor = (more && f.after.is_none())
        .then(|| items.last().map(|i| i.id.to_string()))
        .flatten();
    Ok(Page {
        items,
        next_cursor,
        last_id,
    })
}

fn row_item(r: &rusqlite::Row<'_>) -> rusqlite::Result<Item> {
    let kind = Kind::from_code(r.get(2)?);
    let name: String = r.get::<_, Option<String>>(4)?.unwrap_or_default();
    let outcome: String = r.get::<_, Option<String>>(10)?.unwrap_or_default();
    let json = |text: Option<String>| text.map(|t| serde_json::from_str(&t).unwrap_or(serde_json::Value::String(t)));
    let ms: i64 = r.get(1)?;
    let text: Option<String> = r.get(11)?;
    let failure = kind != Kind::Server || matches!(outcome.as_str(), "failed" | "needs_auth");
    let (error, detail) = if failure { (text, None) } else { (None, text) };
    Ok(Item {
        id: r.get(0)?,
        time: rfc3339(std::time::UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0))),
        kind: kind.as_str(),
        server: r.get::<_, Option<String>>(3)?.unwrap_or_default(),
        tool: (kind == Kind::Tool).then(|| name.clone()),
        prompt: (kind == Kind::Prompt).then(|| name.clone()),
        uri: (kind == Kind::Resource).then(|| name.clone()),
        event: (kind == Kind::Server).then(|| name.clone()),
        client: r.get(5)?,
        client_version: r.get(6)?,
        session: r.get(7)?,
        endpoint: r.get(8)?,
        duration_ms: r.get(9)?,
        ok: (kind != Kind::Server).then(|| store::is_ok(&outcome)),
        outcome,
        error,
        detail,
        result_bytes: r.get(12)?,
        arguments: json(r.get(13)?),
        result: json(r.get(14)?),
        trace_id: r.get(15)?,
        parent: r.get(16)?,
    })
}
