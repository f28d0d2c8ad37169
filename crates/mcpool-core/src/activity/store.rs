//! The SQLite file itself: its schema, a batch's insert, the per-minute
//! call counts the plots read, and what a failure means (corrupt, locked,
//! something else).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection, ErrorCode, OpenFlags};

use super::dict::Dictionary;
use super::series::Histogram;
use super::{migrate, now_ms, to_ms, Entry, Kind};

/// The schema's version, in `PRAGMA user_version`. 1 kept every string in
/// every row (148 MB per million calls); 2 refers to the dictionary
/// (`dict.rs`) and is converted to from 1 when the writer opens the file
/// (`migrate.rs`).
/// 3 adds the script runs' keys (`run`, `parent_run`).
pub(super) const VERSION: i64 = 3;

/// Kinds as stored: 0 and 1 take no bytes at all in an SQLite record.
pub(super) const KIND_SERVER: i64 = 3;

/// `activity`: one row per entry (`id` never reused, so cursors stay valid
/// while old rows are trimmed), its strings as `names` ids and its agent as
/// an `agents` id (0: none); the columns mostly NULL come last. Indexes:
/// `server` for the common filter, and server events (rare) by time for the
/// status bands. No index on `time`, which would cost more than a quarter
/// of the file: `commits` holds, per minute of committing, the ids and
/// entry times written in it, so a time filter becomes an id range (an
/// entry's time is when it began, before its commit). `minutes`: per server,
/// tool and minute, the calls, the failures and a latency histogram, so
/// plots never read the rows themselves.
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS names (
    id INTEGER PRIMARY KEY,
    text TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS agents (
    id INTEGER PRIMARY KEY,
    client INTEGER NOT NULL,
    client_version INTEGER NOT NULL,
    session INTEGER NOT NULL,
    endpoint INTEGER NOT NULL,
    UNIQUE (client, client_version, session, endpoint)
);
CREATE TABLE IF NOT EXISTS activity (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time INTEGER NOT NULL,
    kind INTEGER NOT NULL,
    server INTEGER NOT NULL,
    name INTEGER NOT NULL,
    agent INTEGER NOT NULL,
    outcome INTEGER NOT NULL,
    duration_ms INTEGER,
    result_bytes INTEGER,
    error TEXT,
    arguments TEXT,
    result TEXT,
    trace_id TEXT,
    run TEXT,
    parent_run TEXT
);
CREATE INDEX IF NOT EXISTS activity_run ON activity(run) WHERE run IS NOT NULL;
CREATE INDEX IF NOT EXISTS activity_parent_run ON activity(parent_run) WHERE parent_run IS NOT NULL;
CREATE INDEX IF NOT EXISTS activity_server ON activity(server);
CREATE INDEX IF NOT EXISTS activity_events ON activity(time) WHERE kind = 3;
CREATE TABLE IF NOT EXISTS commits (
    minute INTEGER PRIMARY KEY,
    first_id INTEGER NOT NULL,
    last_id INTEGER NOT NULL,
    min_time INTEGER NOT NULL,
    max_time INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS minutes (
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    minute INTEGER NOT NULL,
    calls INTEGER NOT NULL,
    errors INTEGER NOT NULL,
    hist BLOB NOT NULL,
    PRIMARY KEY (server, tool, minute)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS minutes_minute ON minutes(minute);
";

/// What a failed database operation means for the writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Failure {
    /// Not a database, or a malformed one: move it aside, start anew.
    Corrupt,
    /// Another process holds a lock: try again later.
    Locked,
    /// Anything else (disk full, permissions): try again later.
    Other,
}

pub(super) fn classify(e: &rusqlite::Error) -> Failure {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => Failure::Corrupt,
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => Failure::Locked,
        _ => Failure::Other,
    }
}

/// One sentence naming the file.
pub(super) fn sentence(path: &Path, e: &rusqlite::Error) -> String {
    format!("The activity log {} could not be read: {e}.", path.display())
}

/// The writer's connection: the file made if absent (0600 in a 0700
/// folder), WAL, the schema (a schema 1 file converted), and a quick check
/// that it is a sound database.
pub(super) fn open_writer(path: &Path) -> rusqlite::Result<Connection> {
    let mut conn = connect_writer(path)?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > VERSION {
        return Err(corrupt(format!("written by a newer mcpool (schema {version})")));
    }
    if version == 2 {
        migrate::from_v2(&conn)?;
    }
    if version == 1 {
        if let Err(e) = migrate::from_v1(&mut conn) {
            // Keep the old file whole for whoever wants it; start anew.
            drop(conn);
            let aside = set_aside(path, "v1");
            tracing::warn!(
                "the activity log {} could not be converted to the new format ({e}); {}a new one is started",
                path.display(),
                aside
                    .map(|p| format!("the old file is kept as {}; ", p.display()))
                    .unwrap_or_default()
            );
            conn = connect_writer(path)?;
        }
    }
    conn.execute_batch(SCHEMA)?;
    conn.pragma_update(None, "user_version", VERSION)?;
    Ok(conn)
}

fn connect_writer(path: &Path) -> rusqlite::Result<Connection> {
    if let Some(dir) = path.parent() {
        make_private_dir(dir);
    }
    let fresh = !path.exists();
    let conn = Connection::open(path)?;
    if fresh {
        restrict(path);
    }
    conn.busy_timeout(Duration::from_secs(2))?;
    // Set before the first table exists, so trimmed pages can be given back.
    conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    // WAL with NORMAL: a commit survives the process being killed; only an
    // OS crash or power cut may lose the last ones.
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    // 512 KiB of page cache, not SQLite's 2 MB: the writer appends, and the
    // rows it touches again (the newest pages, the dictionary) fit.
    conn.pragma_update(None, "cache_size", -512)?;
    let check: String = conn.query_row("PRAGMA quick_check(1)", [], |r| r.get(0))?;
    if check != "ok" {
        return Err(corrupt(check));
    }
    Ok(conn)
}

fn corrupt(message: String) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT), Some(message))
}

/// A reader's connection (read-only; the writer may be mid-commit). A file
/// of another schema is an error that says so, not a failed query.
pub(super) fn open_reader(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI,
    )?;
    conn.busy_timeout(Duration::from_secs(2))?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version != VERSION && version != 0 {
        let who = if version > VERSION { "a newer" } else { "an older" };
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
            Some(format!(
                "it was written by {who} mcpool (schema {version}, this one reads {VERSION}); \
                 `mcpool serve` converts an older one when it starts"
            )),
        ));
    }
    Ok(conn)
}

/// Moves a corrupt file (and its WAL) aside as `<file>.corrupt-<time>`;
/// the name it got, for the report.
pub(super) fn move_aside(path: &Path) -> Option<PathBuf> {
    set_aside(path, "corrupt")
}

/// Renames the file to `<file>.<why>-<time>` and removes its WAL and
/// shared memory (a checkpointed or abandoned file's).
fn set_aside(path: &Path, why: &str) -> Option<PathBuf> {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let aside = PathBuf::from(format!("{}.{why}-{stamp}", path.display()));
    let moved = std::fs::rename(path, &aside).is_ok();
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    moved.then_some(aside)
}

/// Inserts a batch in one transaction, with its minutes and its commit
/// mark; the last id. On an error the transaction is rolled back and the
/// caller must clear `dict` (the ids it learned may be gone).
pub(super) fn insert(conn: &mut Connection, dict: &mut Dictionary, batch: &[Entry]) -> rusqlite::Result<i64> {
    let tx = conn.transaction()?;
    let mut first = None;
    for e in batch {
        let id = insert_row(&tx, dict, None, e)?;
        first.get_or_insert(id);
    }
    add_minutes(&tx, batch)?;
    let last = tx.last_insert_rowid();
    if let Some(first) = first {
        let times = batch.iter().map(|e| to_ms(e.time));
        let (min, max) = times.fold((i64::MAX, i64::MIN), |(lo, hi), t| (lo.min(t), hi.max(t)));
        mark(&tx, now_ms().div_euclid(60_000), first, last, min, max)?;
    }
    tx.commit()?;
    Ok(last)
}

/// One entry's row (with `id`, or the next one); its id.
pub(super) fn insert_row(
    conn: &Connection,
    dict: &mut Dictionary,
    id: Option<i64>,
    e: &Entry,
) -> rusqlite::Result<i64> {
    let server = dict.name(conn, &e.server)?;
    let name = dict.name(conn, &e.name)?;
    let outcome = dict.name(conn, &e.outcome)?;
    let agent = dict.agent(conn, &e.agent)?;
    let mut stmt = conn.prepare_cached(
        "INSERT INTO activity (id, time, kind, server, name, agent, outcome, duration_ms, result_bytes,
            error, arguments, result, trace_id, run, parent_run)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
    )?;
    stmt.execute(params![
        id,
        to_ms(e.time),
        e.kind.code(),
        server,
        name,
        agent,
        outcome,
        e.duration_ms.map(|d| i64::try_from(d).unwrap_or(i64::MAX)),
        e.result_bytes.map(|b| i64::try_from(b).unwrap_or(i64::MAX)),
        e.error,
        e.arguments,
        e.result,
        e.trace_id,
        e.run,
        e.parent_run,
    ])?;
    Ok(conn.last_insert_rowid())
}

/// Widens the commit mark of `minute` to ids `first..=last` and entry times
/// `min..=max`.
pub(super) fn mark(conn: &Connection, minute: i64, first: i64, last: i64, min: i64, max: i64) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO commits (minute, first_id, last_id, min_time, max_time) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (minute) DO UPDATE SET first_id = min(first_id, excluded.first_id),
            last_id = max(last_id, excluded.last_id), min_time = min(min_time, excluded.min_time),
            max_time = max(max_time, excluded.max_time)",
    )?
    .execute(params![minute, first, last, min, max])?;
    Ok(())
}

/// The ids an entry of time `since..=until` can have, from the commit
/// marks: every entry lies in its commit's mark. `None`: no entry can.
pub(super) fn id_range(
    conn: &Connection,
    since: Option<i64>,
    until: Option<i64>,
) -> rusqlite::Result<Option<(i64, i64)>> {
    let (lo, hi): (Option<i64>, Option<i64>) = conn.query_row(
        "SELECT min(first_id), max(last_id) FROM commits
         WHERE max_time >= coalesce(?1, min_time) AND min_time <= coalesce(?2, max_time)",
        params![since, until],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    Ok(lo.zip(hi))
}

/// Whether an outcome word is a success (`calls::Outcome::ok`).
pub(super) fn is_ok(outcome: &str) -> bool {
    matches!(outcome, "ok" | "task" | "input_required")
}

/// Folds a batch's tool calls into the per-minute rows.
fn add_minutes(tx: &rusqlite::Transaction<'_>, batch: &[Entry]) -> rusqlite::Result<()> {
    let mut sums: BTreeMap<(&str, &str, i64), (i64, i64, Histogram)> = BTreeMap::new();
    for e in batch.iter().filter(|e| e.kind == Kind::Tool) {
        let minute = to_ms(e.time).div_euclid(60_000);
        let slot = sums
            .entry((e.server.as_str(), e.name.as_str(), minute))
            .or_insert_with(|| (0, 0, Histogram::default()));
        slot.0 += 1;
        if !is_ok(&e.outcome) {
            slot.1 += 1;
        }
        slot.2.add(e.duration_ms.unwrap_or(0));
    }
    if sums.is_empty() {
        return Ok(());
    }
    let mut read =
        tx.prepare_cached("SELECT calls, errors, hist FROM minutes WHERE server = ?1 AND tool = ?2 AND minute = ?3")?;
    let mut write = tx.prepare_cached(
        "INSERT OR REPLACE INTO minutes (server, tool, minute, calls, errors, hist) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for ((server, tool, minute), (calls, errors, mut hist)) in sums {
        let before: Option<(i64, i64, Vec<u8>)> = read
            .query_row(params![server, tool, minute], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map(Some)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(e),
            })?;
        let (calls, errors) = match before {
            Some((c, er, blob)) => {
                hist.merge(&Histogram::from_blob(&blob));
                (calls + c, errors + er)
            }
            None => (calls, errors),
        };
        write.execute(params![server, tool, minute, calls, errors, hist.to_blob()])?;
    }
    Ok(())
}

/// The file's size in bytes, as SQLite counts it (pages in use).
pub(super) fn used_bytes(conn: &Connection) -> rusqlite::Result<u64> {
    let pages: i64 = conn.query_row("PRAGMA page_count", [], |r| r.get(0))?;
    let free: i64 = conn.query_row("PRAGMA freelist_count", [], |r| r.get(0))?;
    let size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
    Ok(u64::try_from((pages - free) * size).unwrap_or(0))
}

/// Deletes what is older than `oldest_ms`, then the oldest rows until the
/// file is under `max_bytes` (to 90 % of it, so trims are rare), and gives
/// the freed pages back to the file system. How many rows went.
pub(super) fn trim(conn: &Connection, oldest_ms: i64, max_bytes: u64) -> rusqlite::Result<u64> {
    // The marks bound the ids old enough: no scan of the whole table.
    let mut removed = match id_range(conn, None, Some(oldest_ms - 1))? {
        Some((_, last)) => conn.execute(
            "DELETE FROM activity WHERE id <= ?1 AND time < ?2",
            params![last, oldest_ms],
        )? as u64,
        None => 0,
    };
    // A mark whose newest entry is older holds nothing any more.
    conn.execute("DELETE FROM commits WHERE max_time < ?1", params![oldest_ms])?;
    conn.execute(
        "DELETE FROM minutes WHERE minute < ?1",
        params![oldest_ms.div_euclid(60_000)],
    )?;
    for _ in 0..20 {
        let used = used_bytes(conn)?;
        if used <= max_bytes {
            break;
        }
        let rows: i64 = conn.query_row("SELECT count(*) FROM activity", [], |r| r.get(0))?;
        if rows == 0 {
            break;
        }
        let target = max_bytes as f64 * 0.9;
        let share = (1.0 - target / used as f64).clamp(0.01, 1.0);
        let n = ((rows as f64 * share).ceil() as i64).max(1);
        removed += conn.execute(
            "DELETE FROM activity WHERE id IN (SELECT id FROM activity ORDER BY id LIMIT ?1)",
            params![n],
        )? as u64;
        // The minutes older than the oldest row left describe calls gone.
        conn.execute(
            "DELETE FROM minutes WHERE minute < (SELECT coalesce((SELECT time FROM activity ORDER BY id LIMIT 1), 0) / 60000)",
            [],
        )?;
    }
    conn.execute(
        "DELETE FROM commits WHERE last_id < (SELECT coalesce(min(id), 9223372036854775807) FROM activity)",
        [],
    )?;
    // Each step of incremental_vacuum gives back one page: run it through.
    let mut vacuum = conn.prepare("PRAGMA incremental_vacuum")?;
    let mut steps = vacuum.query([])?;
    while steps.next()?.is_some() {}
    drop(steps);
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    Ok(removed)
}

fn make_private_dir(dir: &Path) {
    let _ = std::fs::create_dir_all(dir);
    let _ = crate::os::files::restrict_dir(dir);
}

fn restrict(path: &Path) {
    let _ = crate::os::files::restrict(path);
}
