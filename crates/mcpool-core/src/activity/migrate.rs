//! Schema 1 → 2: a file written before the dictionary (every string in
//! every row) is converted in place when the writer opens it, ids kept, so
//! cursors and `mcpool activity --follow` stay valid. One transaction: a
//! failure leaves the file as it was (the caller then sets it aside).

use rusqlite::Connection;

use super::dict::Dictionary;
use super::store::{self, SCHEMA, VERSION};
use super::{Agent, Entry, Kind};

/// Schema 2 → 3: the script runs' keys (code mode), two columns that
/// older rows leave NULL.
pub(super) fn from_v2(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "BEGIN;
         ALTER TABLE activity ADD COLUMN run TEXT;
         ALTER TABLE activity ADD COLUMN parent_run TEXT;
         COMMIT;",
    )
}

/// Converts the file; how many entries it held.
pub(super) fn from_v1(conn: &mut Connection) -> rusqlite::Result<u64> {
    let tx = conn.transaction()?;
    tx.execute_batch(
        "ALTER TABLE activity RENAME TO activity_v1;
         DROP INDEX IF EXISTS activity_time;
         DROP INDEX IF EXISTS activity_server;",
    )?;
    tx.execute_batch(SCHEMA)?;
    let mut dict = Dictionary::default();
    let mut n = 0u64;
    {
        let mut old = tx.prepare(
            "SELECT id, time, kind, server, name, client, client_version, session, endpoint, duration_ms,
                    outcome, error, result_bytes, arguments, result, trace_id
             FROM activity_v1 ORDER BY id",
        )?;
        let mut rows = old.query([])?;
        while let Some(r) = rows.next()? {
            let kind: String = r.get(2)?;
            let ms: i64 = r.get(1)?;
            let entry = Entry {
                time: std::time::UNIX_EPOCH + std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0)),
                kind: Kind::parse(&kind).unwrap_or(Kind::Server),
                server: r.get(3)?,
                name: r.get(4)?,
                agent: Agent {
                    client: r.get(5)?,
                    client_version: r.get(6)?,
                    session: r.get(7)?,
                    endpoint: r.get(8)?,
                },
                duration_ms: r.get::<_, Option<i64>>(9)?.map(|d| u64::try_from(d).unwrap_or(0)),
                outcome: r.get(10)?,
                error: r.get(11)?,
                result_bytes: r.get::<_, Option<i64>>(12)?.map(|b| u64::try_from(b).unwrap_or(0)),
                arguments: r.get(13)?,
                result: r.get(14)?,
                trace_id: r.get(15)?,
                run: None,
                parent_run: None,
            };
            store::insert_row(&tx, &mut dict, Some(r.get(0)?), &entry)?;
            n += 1;
        }
    }
    // The old rows' commits are unknown: one mark per minute of entry time
    // bounds them as well (every entry lies in its minute's mark).
    tx.execute(
        "INSERT INTO commits (minute, first_id, last_id, min_time, max_time)
         SELECT time / 60000, min(id), max(id), min(time), max(time) FROM activity GROUP BY time / 60000",
        [],
    )?;
    // AUTOINCREMENT's counter moved with the renamed table; the new one
    // must go on from the same place so no id is used twice.
    tx.execute_batch(
        "UPDATE sqlite_sequence SET seq = max(seq, coalesce(
             (SELECT seq FROM sqlite_sequence WHERE name = 'activity_v1'), 0))
         WHERE name = 'activity';
         INSERT INTO sqlite_sequence (name, seq)
         SELECT 'activity', seq FROM sqlite_sequence WHERE name = 'activity_v1'
             AND NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'activity');",
    )?;
    tx.execute_batch("DROP TABLE activity_v1;")?;
    tx.pragma_update(None, "user_version", VERSION)?;
    tx.commit()?;
    tracing::info!("activity log: {n} entries converted to the dictionary format");
    Ok(n)
}
