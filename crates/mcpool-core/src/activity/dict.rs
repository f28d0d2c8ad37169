//! The dictionary: each repeated string (server, tool or event name,
//! outcome, client, its version, session, endpoint) is stored once in
//! `names`, and each agent (those four together) once in `agents`; an entry
//! refers to them by integer id. A row is then mostly small integers, which
//! is most of why a million calls take under 50 MB (docs/benchmarks.md).

use std::collections::HashMap;

use rusqlite::{params, Connection, OptionalExtension};

use super::Agent;

/// No string, no agent: a server event's agent, an entry without a client.
/// `names` and `agents` ids start at 1, so 0 is never a row's.
pub(super) const NONE: i64 = 0;

/// More cached strings or agents than this and the cache starts over:
/// sessions come and go, and the writer's memory must not grow with them.
const CACHE: usize = 4096;

/// The writer's cache of ids already in the file. It must be cleared
/// whenever what it knows may no longer hold: a rolled-back transaction
/// (its new rows are gone), a pruning, another connection.
#[derive(Default)]
pub(super) struct Dictionary {
    names: HashMap<String, i64>,
    agents: HashMap<[i64; 4], i64>,
}

impl Dictionary {
    pub(super) fn clear(&mut self) {
        self.names.clear();
        self.agents.clear();
    }

    /// The id of `text`, added to the file if new.
    pub(super) fn name(&mut self, conn: &Connection, text: &str) -> rusqlite::Result<i64> {
        if let Some(&id) = self.names.get(text) {
            return Ok(id);
        }
        conn.prepare_cached("INSERT INTO names (text) VALUES (?1) ON CONFLICT (text) DO NOTHING")?
            .execute([text])?;
        let id: i64 = conn
            .prepare_cached("SELECT id FROM names WHERE text = ?1")?
            .query_row([text], |r| r.get(0))?;
        if self.names.len() >= CACHE {
            self.names.clear();
        }
        self.names.insert(text.to_owned(), id);
        Ok(id)
    }

    fn optional(&mut self, conn: &Connection, text: Option<&str>) -> rusqlite::Result<i64> {
        match text {
            None => Ok(NONE),
            Some(t) => self.name(conn, t),
        }
    }

    /// The id of the agent (client, version, session, endpoint), added if
    /// new; [`NONE`] when nothing about it is known.
    pub(super) fn agent(&mut self, conn: &Connection, agent: &Agent) -> rusqlite::Result<i64> {
        let key = [
            self.optional(conn, agent.client.as_deref())?,
            self.optional(conn, agent.client_version.as_deref())?,
            self.optional(conn, agent.session.as_deref())?,
            self.optional(conn, agent.endpoint.as_deref())?,
        ];
        if key == [NONE; 4] {
            return Ok(NONE);
        }
        if let Some(&id) = self.agents.get(&key) {
            return Ok(id);
        }
        conn.prepare_cached(
            "INSERT INTO agents (client, client_version, session, endpoint) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (client, client_version, session, endpoint) DO NOTHING",
        )?
        .execute(params![key[0], key[1], key[2], key[3]])?;
        let id: i64 = conn
            .prepare_cached(
                "SELECT id FROM agents WHERE client = ?1 AND client_version = ?2 AND session = ?3 AND endpoint = ?4",
            )?
            .query_row(params![key[0], key[1], key[2], key[3]], |r| r.get(0))?;
        if self.agents.len() >= CACHE {
            self.agents.clear();
        }
        self.agents.insert(key, id);
        Ok(id)
    }
}

/// The id of `text` in the file, if any entry ever used it (a filter on a
/// name the file does not hold matches nothing).
pub(super) fn lookup(conn: &Connection, text: &str) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached("SELECT id FROM names WHERE text = ?1")?
        .query_row([text], |r| r.get(0))
        .optional()
}

/// Deletes the agents and names no entry refers to any more (after a trim
/// removed entries); how many of each went. The caller's [`Dictionary`]
/// must be cleared after it.
pub(super) fn prune(conn: &Connection) -> rusqlite::Result<(usize, usize)> {
    // Each NOT IN is one scan of its subquery into a temporary index, not a
    // lookup per row.
    let agents = conn.execute("DELETE FROM agents WHERE id NOT IN (SELECT agent FROM activity)", [])?;
    let names = conn.execute(
        "DELETE FROM names WHERE id NOT IN (
            SELECT server FROM activity UNION SELECT name FROM activity UNION SELECT outcome FROM activity
            UNION SELECT client FROM agents UNION SELECT client_version FROM agents
            UNION SELECT session FROM agents UNION SELECT endpoint FROM agents)",
        [],
    )?;
    Ok((agents, names))
}
