//! The SQLite file itself: its schema, a batch's insert, the per-minute
//! call counts the plots read, and what a failure means (corrupt, locked,
//! something else).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection, ErrorCode, OpenFlags};

use super::series::Histogram;
use super::{to_ms, Entry, Kind};

/// The schema's version, in `PRAGMA user_version`.
const VERSION: i64 = 1;

/// `activity`: one row per entry (`id` never reused, so cursors stay
/// valid while old rows are trimmed). `minutes`: per server, tool and
/// minute, the calls, the failures and a latency histogram, so plots never
/// read the rows themselves.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS activity (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time INTEGER NOT NULL,
    kind TEXT NOT NULL,
    server TEXT NOT NULL,
    name TEXT NOT NULL,
    client TEXT,
    client_version TEXT,
    session TEXT,
    endpoint TEXT,
    duration_ms INTEGER,
    outcome TEXT NOT NULL,
    error TEXT,
    result_bytes INTEGER,
    arguments TEXT,
    result TEXT,
    trace_id TEXT
);
CREATE INDEX IF NOT EXISTS activity_time ON activity(time);
CREATE INDEX IF NOT EXISTS activity_server ON activity(server, id);
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
/// folder), WAL, the schema, and a quick check that it is a sound database.
pub(super) fn open_writer(path: &Path) -> rusqlite::Result<Connection> {
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
    let check: String = conn.query_row("PRAGMA quick_check(1)", [], |r| r.get(0))?;
    if check != "ok" {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT),
            Some(check),
        ));
    }
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > VERSION {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT),
            Some(format!("written by a newer mcpool (schema {version})")),
        ));
    }
    conn.execute_batch(SCHEMA)?;
    conn.pragma_update(None, "user_version", VERSION)?;
    Ok(conn)
}

/// A reader's connection (read-only; the writer may be mid-commit).
pub(super) fn open_reader(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI,
    )?;
    conn.busy_timeout(Duration::from_secs(2))?;
    Ok(conn)
}

/// Moves a corrupt file (and its WAL) aside as `<file>.corrupt-<time>`;
/// the name it got, for the report.
pub(super) fn move_aside(path: &Path) -> Option<PathBuf> {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let aside = PathBuf::from(format!("{}.corrupt-{stamp}", path.display()));
    let moved = std::fs::rename(path, &aside).is_ok();
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    moved.then_some(aside)
}

/// Inserts a batch in one transaction, with its minutes; the last id.
pub(super) fn insert(conn: &mut Connection, batch: &[Entry]) -> rusqlite::Result<i64> {
    let tx = conn.transaction()?;
    {
        let mut stmt = tx.prepare_cached(
            "INSERT INTO activity (time, kind, server, name, client, client_version, session, endpoint,
                duration_ms, outcome, error, result_bytes, arguments, result, trace_id)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
        )?;
        for e in batch {
            stmt.execute(params![
                to_ms(e.time),
                e.kind.as_str(),
                e.server,
                e.name,
                e.agent.client,
                e.agent.client_version,
                e.agent.session,
                e.agent.endpoint,
                e.duration_ms.map(|d| i64::try_from(d).unwrap_or(i64::MAX)),
                e.outcome,
                e.error,
                e.result_bytes.map(|b| i64::try_from(b).unwrap_or(i64::MAX)),
                e.arguments,
                e.result,
                e.trace_id,
            ])?;
        }
    }
    add_minutes(&tx, batch)?;
    let last = tx.last_insert_rowid();
    tx.commit()?;
    Ok(last)
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
    let mut removed = conn.execute("DELETE FROM activity WHERE time < ?1", params![oldest_ms])? as u64;
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
            "DELETE FROM minutes WHERE minute < (SELECT coalesce(min(time), 0) / 60000 FROM activity)",
            [],
        )?;
    }
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
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    }
}

fn restrict(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
    }
    #[cfg(not(unix))]
    let _ = path;
}
