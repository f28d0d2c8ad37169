//! What the plots draw, read from the activity file: calls per minute with
//! p50/p95 latency (from each minute's histogram), per server or per tool,
//! and each server's statuses over the last hours with its drops marked.

use std::collections::BTreeMap;

use rusqlite::{params, Connection};
use serde::Serialize;

use super::dict;
use crate::calls::rfc3339;

/// Upper bounds (ms) of the latency buckets; one more bucket holds the rest.
pub const BUCKETS: [u64; 17] = [
    1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 30_000, 60_000, 300_000, 600_000,
];

/// Counts per latency bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Histogram([u64; BUCKETS.len() + 1]);

impl Default for Histogram {
    fn default() -> Self {
        Histogram([0; BUCKETS.len() + 1])
    }
}

impl Histogram {
    pub fn add(&mut self, ms: u64) {
        let i = BUCKETS.iter().position(|&b| ms <= b).unwrap_or(BUCKETS.len());
        self.0[i] += 1;
    }

    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a += b;
        }
    }

    pub fn count(&self) -> u64 {
        self.0.iter().sum()
    }

    /// The `q` quantile (0..1), interpolated inside its bucket; `None` when
    /// empty. Exact to the bucket: 1-2-5 steps.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        let rank = (q * total as f64).max(1.0);
        let mut seen = 0.0;
        for (i, &n) in self.0.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let lower = if i == 0 { 0.0 } else { BUCKETS[i - 1] as f64 };
            let upper = BUCKETS.get(i).map_or(lower * 2.0, |&b| b as f64);
            if seen + n as f64 >= rank {
                let within = (rank - seen) / n as f64;
                return Some(lower + (upper - lower) * within);
            }
            seen += n as f64;
        }
        BUCKETS.last().map(|&b| b as f64)
    }

    pub fn to_blob(&self) -> Vec<u8> {
        self.0.iter().flat_map(|n| n.to_le_bytes()).collect()
    }

    /// Reads a blob; a short or foreign one counts what it has.
    pub fn from_blob(blob: &[u8]) -> Histogram {
        let mut h = Histogram::default();
        for (slot, chunk) in h.0.iter_mut().zip(blob.chunks_exact(8)) {
            let mut b = [0u8; 8];
            b.copy_from_slice(chunk);
            *slot = u64::from_le_bytes(b);
        }
        h
    }
}

/// One minute of calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Bucket {
    pub calls: u64,
    pub errors: u64,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
}

/// Calls per minute over a window, oldest minute first, and the window's
/// totals.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Series {
    pub server: Option<String>,
    pub tool: Option<String>,
    /// The first minute's start, RFC 3339.
    pub start: String,
    pub minutes: Vec<Bucket>,
    pub calls: u64,
    pub errors: u64,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
}

impl Series {
    pub fn empty(now_ms: i64, minutes: u32) -> Series {
        let first = now_ms.div_euclid(60_000) - i64::from(minutes.max(1)) + 1;
        Series {
            start: rfc3339(ms_time(first * 60_000)),
            minutes: vec![Bucket::default(); minutes.max(1) as usize],
            ..Series::default()
        }
    }
}

fn ms_time(ms: i64) -> std::time::SystemTime {
    std::time::UNIX_EPOCH + std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// One minute: calls, failures, latencies.
type Minute = (u64, u64, Histogram);
/// A series' minutes and the window's latencies together.
type Folded = (Vec<Minute>, Histogram);
/// A row of `minutes`: (server, tool), minute, calls, failures, latencies.
type Row = ((String, String), i64, u64, u64, Histogram);

/// Builds series from `minutes` rows, per server or per server and tool.
fn fold(
    rows: impl Iterator<Item = Row>,
    first: i64,
    minutes: u32,
    by_tool: bool,
) -> BTreeMap<(String, String), Folded> {
    let mut out: BTreeMap<(String, String), Folded> = BTreeMap::new();
    for ((server, tool), minute, calls, errors, hist) in rows {
        let key = if by_tool {
            (server, tool)
        } else {
            (server, String::new())
        };
        let (slots, total) = out.entry(key).or_insert_with(|| {
            (
                vec![(0, 0, Histogram::default()); minutes as usize],
                Histogram::default(),
            )
        });
        let Ok(i) = usize::try_from(minute - first) else {
            continue;
        };
        if let Some(slot) = slots.get_mut(i) {
            slot.0 += calls;
            slot.1 += errors;
            slot.2.merge(&hist);
            total.merge(&hist);
        }
    }
    out
}

fn finish(
    server: Option<String>,
    tool: Option<String>,
    first: i64,
    slots: &[(u64, u64, Histogram)],
    total: &Histogram,
) -> Series {
    let minutes: Vec<Bucket> = slots
        .iter()
        .map(|(calls, errors, h)| Bucket {
            calls: *calls,
            errors: *errors,
            p50_ms: h.quantile(0.5).map(round1),
            p95_ms: h.quantile(0.95).map(round1),
        })
        .collect();
    Series {
        server,
        tool,
        start: rfc3339(ms_time(first * 60_000)),
        calls: minutes.iter().map(|m| m.calls).sum(),
        errors: minutes.iter().map(|m| m.errors).sum(),
        p50_ms: total.quantile(0.5).map(round1),
        p95_ms: total.quantile(0.95).map(round1),
        minutes,
    }
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn minute_rows(conn: &Connection, first: i64, server: Option<&str>, tool: Option<&str>) -> rusqlite::Result<Vec<Row>> {
    let mut stmt = conn.prepare(
        "SELECT server, tool, minute, calls, errors, hist FROM minutes
         WHERE minute >= ?1 AND (?2 IS NULL OR server = ?2) AND (?3 IS NULL OR tool = ?3)",
    )?;
    let rows = stmt.query_map(params![first, server, tool], |r| {
        let blob: Vec<u8> = r.get(5)?;
        Ok((
            (r.get::<_, String>(0)?, r.get::<_, String>(1)?),
            r.get::<_, i64>(2)?,
            r.get::<_, i64>(3)?.max(0) as u64,
            r.get::<_, i64>(4)?.max(0) as u64,
            Histogram::from_blob(&blob),
        ))
    })?;
    rows.collect()
}

/// The calls of one server (or tool, or everything) over the last
/// `minutes`, ending with the current minute.
pub(super) fn calls(
    conn: &Connection,
    server: Option<&str>,
    tool: Option<&str>,
    now_ms: i64,
    minutes: u32,
) -> rusqlite::Result<Series> {
    let minutes = minutes.clamp(1, 24 * 60);
    let first = now_ms.div_euclid(60_000) - i64::from(minutes) + 1;
    let rows = minute_rows(conn, first, server, tool)?
        .into_iter()
        .map(|((_, _), m, c, e, h)| ((String::new(), String::new()), m, c, e, h));
    let folded = fold(rows, first, minutes, false);
    let empty = (
        vec![(0, 0, Histogram::default()); minutes as usize],
        Histogram::default(),
    );
    let (slots, total) = folded.values().next().unwrap_or(&empty);
    Ok(finish(
        server.map(str::to_string),
        tool.map(str::to_string),
        first,
        slots,
        total,
    ))
}

/// One series per server (`by_tool` false) or per server and tool.
pub(super) fn each(conn: &Connection, now_ms: i64, minutes: u32, by_tool: bool) -> rusqlite::Result<Vec<Series>> {
    let minutes = minutes.clamp(1, 24 * 60);
    let first = now_ms.div_euclid(60_000) - i64::from(minutes) + 1;
    let rows = minute_rows(conn, first, None, None)?;
    Ok(fold(rows.into_iter(), first, minutes, by_tool)
        .into_iter()
        .map(|((server, tool), (slots, total))| {
            let tool = by_tool.then_some(tool);
            finish(Some(server), tool, first, &slots, &total)
        })
        .collect())
}

/// One stretch of a server's status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StatusSpan {
    pub from: String,
    pub to: String,
    pub status: String,
}

/// A server's statuses over the window, and the times it dropped (from
/// connected to failed on its own).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Band {
    pub server: String,
    pub start: String,
    pub end: String,
    pub spans: Vec<StatusSpan>,
    pub drops: Vec<String>,
}

/// Each server's band over the last `hours`, from its `status` events. A
/// server with no event before the window starts "unknown" until its first.
pub(super) fn bands(conn: &Connection, server: Option<&str>, now_ms: i64, hours: u32) -> rusqlite::Result<Vec<Band>> {
    let start = now_ms - i64::from(hours.clamp(1, 24 * 30)) * 3_600_000;
    let Some(status) = dict::lookup(conn, "status")? else {
        return Ok(Vec::new());
    };
    let server = match server {
        None => None,
        Some(s) => match dict::lookup(conn, s)? {
            Some(id) => Some(id),
            None => return Ok(Vec::new()),
        },
    };
    // The partial index of server events (`activity_events`, hence
    // `kind = 3` written out), named: left to itself SQLite reads every call
    // in server order (for the GROUP BY) or id order (1 M rows: 0.45 s).
    let mut before = conn.prepare(
        "SELECT s.text, o.text, max(a.time) FROM activity a INDEXED BY activity_events
         LEFT JOIN names s ON s.id = a.server LEFT JOIN names o ON o.id = a.outcome
         WHERE a.kind = 3 AND a.name = ?3 AND a.time < ?1 AND (?2 IS NULL OR a.server = ?2)
         GROUP BY a.server",
    )?;
    let mut changes: BTreeMap<String, Vec<(i64, String)>> = BTreeMap::new();
    for row in before.query_map(params![start, server, status], |r| {
        Ok((r.get::<_, Option<String>>(0)?, r.get::<_, Option<String>>(1)?))
    })? {
        let (s, status) = row?;
        changes
            .entry(s.unwrap_or_default())
            .or_default()
            .push((start, status.unwrap_or_default()));
    }
    let mut within = conn.prepare(
        "SELECT s.text, a.time, o.text FROM activity a INDEXED BY activity_events
         LEFT JOIN names s ON s.id = a.server LEFT JOIN names o ON o.id = a.outcome
         WHERE a.kind = 3 AND a.name = ?3 AND a.time >= ?1 AND (?2 IS NULL OR a.server = ?2)
         ORDER BY a.id",
    )?;
    for row in within.query_map(params![start, server, status], |r| {
        Ok((
            r.get::<_, Option<String>>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, Option<String>>(2)?,
        ))
    })? {
        let (s, t, status) = row?;
        changes
            .entry(s.unwrap_or_default())
            .or_default()
            .push((t, status.unwrap_or_default()));
    }
    Ok(changes
        .into_iter()
        .map(|(server, points)| band(server, &points, start, now_ms))
        .collect())
}

/// Pure: status points (time, status) in order → spans and drops.
pub(super) fn band(server: String, points: &[(i64, String)], start: i64, end: i64) -> Band {
    let mut spans: Vec<StatusSpan> = Vec::new();
    let mut drops = Vec::new();
    let mut current: (i64, String) = (start, "unknown".into());
    for (t, status) in points {
        let t = (*t).clamp(start, end);
        if *status == current.1 {
            continue;
        }
        if current.1 == "connected" && status == "failed" {
            drops.push(rfc3339(ms_time(t)));
        }
        if t > current.0 {
            spans.push(StatusSpan {
                from: rfc3339(ms_time(current.0)),
                to: rfc3339(ms_time(t)),
                status: current.1.clone(),
            });
        }
        current = (t, status.clone());
    }
    if end > current.0 {
        spans.push(StatusSpan {
            from: rfc3339(ms_time(current.0)),
            to: rfc3339(ms_time(end)),
            status: current.1,
        });
    }
    Band {
        server,
        start: rfc3339(ms_time(start)),
        end: rfc3339(ms_time(end)),
        spans,
        drops,
    }
}
