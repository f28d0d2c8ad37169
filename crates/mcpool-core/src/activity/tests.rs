//! The activity log on a real SQLite file in a temporary folder.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use super::series::{band, Histogram};
use super::*;

fn temp_file(name: &str) -> PathBuf {
    crate::scratch::made_scratch_dir(&format!("activity-{name}")).join("default.db")
}

fn call(server: &str, tool: &str, client: &str, outcome: &str, ms: u64, ago: Duration) -> Entry {
    Entry {
        time: SystemTime::now() - ago,
        kind: Kind::Tool,
        server: server.into(),
        name: tool.into(),
        agent: Agent {
            client: Some(client.into()),
            client_version: Some("1.0".into()),
            session: Some("s-1".into()),
            endpoint: Some("/mcp".into()),
        },
        duration_ms: Some(ms),
        outcome: outcome.into(),
        error: (outcome != "ok").then(|| "went wrong".into()),
        result_bytes: Some(12),
        arguments: None,
        result: None,
        trace_id: None,
        run: None,
        parent_run: None,
    }
}

fn query(a: &Activity, pairs: &[(&str, &str)]) -> Page {
    let params: BTreeMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let filter = Filter::from_query(&params, SystemTime::now()).expect("filter");
    a.query(&filter).expect("query")
}

fn opened(name: &str) -> (Activity, PathBuf) {
    let path = temp_file(name);
    (Activity::open(path.clone(), Retention::default()), path)
}

#[test]
fn entries_come_back_newest_first_with_every_field() {
    let (a, path) = opened("fields");
    a.record(call(
        "github",
        "search",
        "claude-code",
        "ok",
        40,
        Duration::from_secs(5),
    ));
    a.record(Entry::server_event("github", "status", "connected", None));
    assert!(a.flush(Duration::from_secs(5)));
    let page = query(&a, &[]);
    assert_eq!(page.items.len(), 2);
    let [event, tool] = [&page.items[0], &page.items[1]];
    assert_eq!(
        (event.kind, event.event.as_deref(), event.outcome.as_str()),
        ("server", Some("status"), "connected")
    );
    assert_eq!(event.tool, None);
    assert_eq!(tool.tool.as_deref(), Some("search"));
    assert_eq!(tool.client.as_deref(), Some("claude-code"));
    assert_eq!(tool.client_version.as_deref(), Some("1.0"));
    assert_eq!(
        (tool.duration_ms, tool.ok, tool.result_bytes),
        (Some(40), Some(true), Some(12))
    );
    assert!(tool.id < event.id);
    assert_eq!(page.last_id, event.id);
    let json = serde_json::to_value(tool).expect("json");
    for key in ["time", "server", "tool", "client", "duration_ms", "outcome"] {
        assert!(json.get(key).is_some(), "{key} missing from {json}");
    }
    // 0600 on Unix, the user-only DACL on Windows.
    crate::os::files::assert_private(&path);
}

#[test]
fn filters_narrow_and_pages_follow_cursors() {
    let (a, _) = opened("filters");
    for i in 0..30u64 {
        let server = if i % 3 == 0 { "github" } else { "files" };
        let outcome = if i % 5 == 0 { "timeout" } else { "ok" };
        let client = if i % 2 == 0 { "cursor" } else { "claude-code" };
        a.record(call(
            server,
            &format!("t{}", i % 4),
            client,
            outcome,
            i,
            Duration::from_secs(3600 - i * 60),
        ));
    }
    a.record(Entry::server_event("github", "connect", "wake", None));
    assert!(a.flush(Duration::from_secs(5)));

    let github = query(&a, &[("server", "github"), ("limit", "1000")]);
    assert_eq!(github.items.len(), 11);
    assert!(github.items.iter().all(|i| i.server == "github"));
    let t1 = query(&a, &[("tool", "t1")]);
    assert_eq!(t1.items.len(), 8);
    assert!(t1.items.iter().all(|i| i.tool.as_deref() == Some("t1")));
    let cursor = query(&a, &[("client", "cursor")]);
    assert_eq!(cursor.items.len(), 15);
    let errors = query(&a, &[("outcome", "error")]);
    assert_eq!(errors.items.len(), 6);
    assert!(errors.items.iter().all(|i| i.outcome == "timeout"));
    assert_eq!(query(&a, &[("outcome", "timeout")]).items.len(), 6);
    assert_eq!(query(&a, &[("outcome", "ok")]).items.len(), 24);
    assert_eq!(query(&a, &[("kind", "server")]).items.len(), 1);
    // Calls were made 60 to 31 minutes ago: the last 40 minutes hold 20..29.
    let recent = query(&a, &[("since", "41m"), ("kind", "tool")]);
    assert_eq!(
        recent.items.len(),
        10,
        "{:?}",
        recent.items.iter().map(|i| &i.time).collect::<Vec<_>>()
    );
    let until = query(&a, &[("until", "50m"), ("kind", "tool")]);
    assert_eq!(until.items.len(), 11);

    // Pages of 7, newest first, every entry once.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut q = vec![("limit", "7".to_string())];
        if let Some(c) = &cursor {
            q.push(("cursor", c.clone()));
        }
        let pairs: Vec<(&str, &str)> = q.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let page = query(&a, &pairs);
        seen.extend(page.items.iter().map(|i| i.id));
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(seen.len(), 31);
    assert!(seen.windows(2).all(|w| w[0] > w[1]));

    // Following: what came after an id, oldest first.
    let after = query(&a, &[("after", &seen[3].to_string())]);
    assert_eq!(
        after.items.iter().map(|i| i.id).collect::<Vec<_>>(),
        vec![seen[2], seen[1], seen[0]]
    );
}

#[test]
fn bad_filters_name_their_parameter() {
    let now = SystemTime::now();
    for (k, v) in [
        ("limit", "0"),
        ("limit", "5000"),
        ("since", "yesterday"),
        ("kind", "tools"),
        ("cursor", "x"),
    ] {
        let params = BTreeMap::from([(k.to_string(), v.to_string())]);
        let e = Filter::from_query(&params, now).expect_err(v);
        assert_eq!(e.field, k);
    }
    let both = BTreeMap::from([
        ("cursor".to_string(), "5".to_string()),
        ("after".to_string(), "2".to_string()),
    ]);
    assert!(Filter::from_query(&both, now).is_err());
}

#[test]
fn series_count_calls_per_minute_with_percentiles() {
    let (a, _) = opened("series");
    for ms in [10, 20, 30, 40, 1000] {
        a.record(call("github", "search", "c", "ok", ms, Duration::ZERO));
    }
    a.record(call("github", "search", "c", "tool_error", 5, Duration::from_secs(600)));
    a.record(call("files", "read", "c", "ok", 1, Duration::ZERO));
    assert!(a.flush(Duration::from_secs(5)));
    let s = a.series(Some("github"), None, 60).expect("series");
    assert_eq!(s.minutes.len(), 60);
    assert_eq!((s.calls, s.errors), (6, 1));
    let last = s.minutes.last().expect("a minute");
    assert_eq!(last.calls, 5);
    assert!(last.p50_ms.is_some_and(|p| (20.0..=50.0).contains(&p)), "{last:?}");
    assert!(last.p95_ms.is_some_and(|p| p > 500.0), "{last:?}");
    let ten_ago = &s.minutes[s.minutes.len() - 11];
    assert_eq!((ten_ago.calls, ten_ago.errors), (1, 1));
    let each = a.each(60, true).expect("each");
    assert_eq!(each.len(), 2);
    let files = a.series(Some("files"), Some("read"), 5).expect("files");
    assert_eq!(files.calls, 1);
}

#[test]
fn histogram_quantiles_fall_in_the_right_bucket() {
    let mut h = Histogram::default();
    assert_eq!(h.quantile(0.5), None);
    for ms in 1..=100 {
        h.add(ms);
    }
    let p50 = h.quantile(0.5).expect("p50");
    assert!((20.0..=50.0).contains(&p50), "{p50}");
    let p95 = h.quantile(0.95).expect("p95");
    assert!((50.0..=100.0).contains(&p95), "{p95}");
    assert_eq!(Histogram::from_blob(&h.to_blob()), h);
}

#[test]
fn a_band_marks_drops_and_spans_cover_the_window() {
    let points = vec![
        (0, "pending".to_string()),
        (10, "connected".to_string()),
        (50, "failed".to_string()),
        (60, "connected".to_string()),
        (60, "connected".to_string()),
        (90, "disabled".to_string()),
    ];
    let b = band("s".into(), &points, 0, 100);
    let statuses: Vec<&str> = b.spans.iter().map(|s| s.status.as_str()).collect();
    assert_eq!(statuses, ["pending", "connected", "failed", "connected", "disabled"]);
    assert_eq!(b.drops.len(), 1);
    let empty = band("s".into(), &[], 0, 100);
    assert_eq!(empty.spans.len(), 1);
    assert_eq!(empty.spans[0].status, "unknown");
}

#[test]
fn retention_trims_by_age_and_by_size() {
    let path = temp_file("retention");
    let mut conn = store::open_writer(&path).expect("open");
    let mut batch = vec![call("s", "old", "c", "ok", 1, Duration::from_secs(40 * 86_400))];
    batch.extend((0..2000).map(|_| call("s", "new", "c", "ok", 1, Duration::ZERO)));
    let last = store::insert(&mut conn, &mut dict::Dictionary::default(), &batch).expect("insert");
    let rows = |conn: &rusqlite::Connection, tool: &str| -> i64 {
        conn.query_row(
            "SELECT count(*) FROM activity WHERE name = (SELECT id FROM names WHERE text = ?1)",
            [tool],
            |r| r.get(0),
        )
        .expect("count")
    };
    let oldest = now_ms() - 30 * 86_400_000;
    let removed = store::trim(&conn, oldest, u64::MAX).expect("trim");
    assert_eq!(removed, 1);
    assert_eq!(rows(&conn, "old"), 0);
    assert_eq!(rows(&conn, "new"), 2000);
    let before = store::used_bytes(&conn).expect("size");
    let cap = before / 2;
    store::trim(&conn, oldest, cap).expect("trim");
    assert!(store::used_bytes(&conn).expect("size") <= cap);
    let left = rows(&conn, "new");
    assert!(left > 0 && left < 1000, "{left}");
    // The newest entries are the ones kept.
    let newest: i64 = conn
        .query_row("SELECT max(id) FROM activity", [], |r| r.get(0))
        .expect("max");
    assert_eq!(newest, last);
    let file = std::fs::metadata(&path).expect("file").len();
    assert!(file <= cap + 64 * 1024, "the file gave pages back: {file} vs {cap}");
}

#[test]
fn a_corrupt_file_is_moved_aside_reported_once_and_replaced() {
    let path = temp_file("corrupt");
    std::fs::write(&path, vec![0x5au8; 64 * 1024]).expect("garbage");
    let a = Activity::open(path.clone(), Retention::default());
    a.record(call("s", "t", "c", "ok", 1, Duration::ZERO));
    assert!(a.flush(Duration::from_secs(5)));
    let problem = a.problem().expect("reported");
    assert!(
        problem.contains("damaged") && problem.contains(&path.display().to_string()),
        "{problem}"
    );
    let dir = path.parent().expect("dir");
    let aside: Vec<_> = std::fs::read_dir(dir)
        .expect("dir")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".corrupt-"))
        .collect();
    assert_eq!(aside.len(), 1);
    assert_eq!(query(&a, &[]).items.len(), 1);
}

#[test]
fn nothing_is_kept_while_disabled_but_watchers_see_everything() {
    struct Count(std::sync::atomic::AtomicUsize);
    impl Watcher for Count {
        fn seen(&self, _: &Entry) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
    let path = temp_file("disabled");
    let a = Activity::open(
        path,
        Retention {
            enabled: false,
            ..Retention::default()
        },
    );
    let count = Arc::new(Count(Default::default()));
    a.add_watcher(count.clone());
    a.record(call("s", "t", "c", "ok", 1, Duration::ZERO));
    assert!(a.flush(Duration::from_secs(5)));
    assert!(query(&a, &[]).items.is_empty());
    assert_eq!(count.0.load(std::sync::atomic::Ordering::Relaxed), 1);
    a.set_retention(Retention::default());
    a.record(call("s", "t", "c", "ok", 1, Duration::ZERO));
    assert!(a.flush(Duration::from_secs(5)));
    assert_eq!(query(&a, &[]).items.len(), 1);
}

#[test]
fn retention_settings_read_from_the_config() {
    use serde_json::json;
    assert_eq!(Retention::parse(None), Ok(Retention::default()));
    let r = Retention::parse(Some(&json!({"retentionDays": 7, "maxSizeMB": 50}))).expect("valid");
    assert_eq!(
        (r.max_age, r.max_bytes, r.enabled),
        (Duration::from_secs(7 * 86_400), 50_000_000, true)
    );
    assert_eq!(
        Retention::parse(Some(&json!({"maxSizeMB": 0}))).map_err(|e| e.0),
        Err("activity.maxSizeMB".to_string())
    );
    assert_eq!(
        Retention::parse(Some(&json!([]))).map_err(|e| e.0),
        Err("activity".to_string())
    );
}

fn count(conn: &rusqlite::Connection, sql: &str, text: &str) -> i64 {
    conn.query_row(sql, [text], |r| r.get(0)).expect("count")
}

#[test]
fn the_same_string_is_stored_once_and_read_back_by_name() {
    let (a, path) = opened("dictionary");
    for i in 0..50u64 {
        let mut c = call("github", "search", "claude-code", "ok", i, Duration::ZERO);
        if i % 2 == 1 {
            c.agent.session = Some("s-2".into());
        }
        a.record(c);
    }
    a.record(call("files", "search", "cursor", "timeout", 1, Duration::ZERO));
    assert!(a.flush(Duration::from_secs(5)));
    let conn = store::open_reader(&path).expect("reader");
    for text in ["github", "search", "claude-code", "ok", "1.0", "s-1", "/mcp"] {
        assert_eq!(
            count(&conn, "SELECT count(*) FROM names WHERE text = ?1", text),
            1,
            "{text}"
        );
    }
    // The tool's name is one id, whichever server it came from.
    let ids: i64 = conn
        .query_row("SELECT count(DISTINCT name) FROM activity WHERE kind = 0", [], |r| {
            r.get(0)
        })
        .expect("ids");
    assert_eq!(ids, 1);
    // Two sessions of one client: two agents, each once.
    let agents = count(
        &conn,
        "SELECT count(*) FROM agents WHERE client = (SELECT id FROM names WHERE text = ?1)",
        "claude-code",
    );
    assert_eq!(agents, 2);
    assert_eq!(
        query(&a, &[("client", "claude-code"), ("limit", "1000")]).items.len(),
        50
    );
    assert_eq!(query(&a, &[("tool", "search"), ("limit", "1000")]).items.len(), 51);
    let files = query(&a, &[("server", "files")]);
    assert_eq!(files.items.len(), 1);
    let item = &files.items[0];
    assert_eq!(
        (
            item.client.as_deref(),
            item.session.as_deref(),
            item.endpoint.as_deref()
        ),
        (Some("cursor"), Some("s-1"), Some("/mcp"))
    );
    assert_eq!(query(&a, &[("outcome", "timeout")]).items.len(), 1);
    // A name the file never held matches nothing (and is not an error).
    assert!(query(&a, &[("server", "nowhere")]).items.is_empty());
    assert!(query(&a, &[("client", "nobody")]).items.is_empty());
    assert!(query(&a, &[("outcome", "cancelled")]).items.is_empty());
    // An event has no agent: null, not an empty string.
    a.record(Entry::server_event("github", "status", "connected", None));
    assert!(a.flush(Duration::from_secs(5)));
    let event = &query(&a, &[("kind", "server")]).items[0];
    assert_eq!((event.client.as_deref(), event.session.as_deref()), (None, None));
}

#[test]
fn retention_prunes_the_names_no_entry_uses() {
    let path = temp_file("prune");
    let mut conn = store::open_writer(&path).expect("open");
    let mut dict = dict::Dictionary::default();
    let mut old = call(
        "gone",
        "old_tool",
        "old-client",
        "ok",
        1,
        Duration::from_secs(40 * 86_400),
    );
    old.agent.session = Some("old-session".into());
    let batch = vec![old, call("kept", "new_tool", "c", "ok", 1, Duration::ZERO)];
    store::insert(&mut conn, &mut dict, &batch).expect("insert");
    let names = "SELECT count(*) FROM names WHERE text = ?1";
    assert_eq!(count(&conn, names, "gone"), 1);
    store::trim(&conn, now_ms() - 30 * 86_400_000, u64::MAX).expect("trim");
    let (agents, pruned) = dict::prune(&conn).expect("prune");
    assert_eq!(agents, 1);
    assert_eq!(pruned, 4, "gone, old_tool, old-client, old-session");
    for text in ["gone", "old_tool", "old-client", "old-session"] {
        assert_eq!(count(&conn, names, text), 0, "{text}");
    }
    for text in ["kept", "new_tool", "c", "ok", "s-1", "/mcp", "1.0"] {
        assert_eq!(count(&conn, names, text), 1, "{text}");
    }
    // Pruning again finds nothing; a cleared cache writes a pruned name anew.
    assert_eq!(dict::prune(&conn).expect("prune"), (0, 0));
    dict.clear();
    store::insert(&mut conn, &mut dict, &[call("gone", "t", "c", "ok", 1, Duration::ZERO)]).expect("insert");
    drop(conn);
    let a = Activity::open(path, Retention::default());
    let back = query(&a, &[("server", "gone")]);
    assert_eq!(back.items.len(), 1);
    assert_eq!(back.items[0].tool.as_deref(), Some("t"));
}

#[test]
fn a_schema_1_file_is_converted_with_its_ids() {
    let path = temp_file("v1");
    {
        let conn = rusqlite::Connection::open(&path).expect("v1");
        conn.execute_batch(
            "CREATE TABLE activity (
                id INTEGER PRIMARY KEY AUTOINCREMENT, time INTEGER NOT NULL, kind TEXT NOT NULL,
                server TEXT NOT NULL, name TEXT NOT NULL, client TEXT, client_version TEXT, session TEXT,
                endpoint TEXT, duration_ms INTEGER, outcome TEXT NOT NULL, error TEXT, result_bytes INTEGER,
                arguments TEXT, result TEXT, trace_id TEXT);
             CREATE INDEX activity_time ON activity(time);
             CREATE INDEX activity_server ON activity(server, id);
             PRAGMA user_version = 1;",
        )
        .expect("schema 1");
        let now = now_ms();
        for (id, kind, server, name, client, outcome) in [
            (7, "tool", "github", "search", Some("claude-code"), "ok"),
            (9, "server", "github", "status", None, "connected"),
            (12, "tool", "files", "read", Some("cursor"), "timeout"),
        ] {
            conn.execute(
                "INSERT INTO activity (id, time, kind, server, name, client, session, duration_ms, outcome)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 's-9', 5, ?7)",
                rusqlite::params![id, now - 60_000, kind, server, name, client, outcome],
            )
            .expect("row");
        }
    }
    let a = Activity::open(path.clone(), Retention::default());
    a.record(call("github", "search", "claude-code", "ok", 1, Duration::ZERO));
    assert!(a.flush(Duration::from_secs(5)));
    assert_eq!(a.problem(), None);
    let page = query(&a, &[]);
    let ids: Vec<i64> = page.items.iter().map(|i| i.id).collect();
    assert_eq!(ids[1..], [12, 9, 7]);
    assert!(ids[0] > 12, "a new id after the old ones: {ids:?}");
    let read = &page.items[1];
    assert_eq!(
        (
            read.server.as_str(),
            read.tool.as_deref(),
            read.client.as_deref(),
            read.session.as_deref()
        ),
        ("files", Some("read"), Some("cursor"), Some("s-9"))
    );
    assert_eq!(query(&a, &[("since", "5m"), ("server", "github")]).items.len(), 3);
    assert_eq!(query(&a, &[("kind", "server")]).items[0].outcome, "connected");
    let conn = store::open_reader(&path).expect("reader");
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .expect("version");
    assert_eq!(version, store::VERSION);
}

#[test]
fn a_schema_2_file_gains_the_run_columns_in_place() {
    let path = temp_file("v2");
    {
        // Schema 2 is today's without the script runs' keys.
        let conn = rusqlite::Connection::open(&path).expect("v2");
        conn.execute_batch(store::SCHEMA).expect("schema");
        conn.execute_batch(
            "DROP INDEX activity_run; DROP INDEX activity_parent_run;
             ALTER TABLE activity DROP COLUMN run; ALTER TABLE activity DROP COLUMN parent_run;
             PRAGMA user_version = 2;",
        )
        .expect("schema 2");
        let mut dict = super::dict::Dictionary::default();
        let old = call("github", "search", "claude-code", "ok", 1, Duration::from_secs(60));
        conn.execute(
            "INSERT INTO activity (id, time, kind, server, name, agent, outcome) VALUES (41, ?1, 0, ?2, ?3, 0, ?4)",
            rusqlite::params![
                to_ms(old.time),
                dict.name(&conn, "github").expect("name"),
                dict.name(&conn, "search").expect("name"),
                dict.name(&conn, "ok").expect("name"),
            ],
        )
        .expect("row");
    }
    assert!(
        store::open_reader(&path).is_err(),
        "a schema 2 file is not read as schema 3"
    );
    let a = Activity::open(path.clone(), Retention::default());
    a.record(Entry {
        parent_run: Some("r".into()),
        ..call("github", "get", "claude-code", "ok", 1, Duration::ZERO)
    });
    a.record(Entry {
        run: Some("r".into()),
        ..call("mcpool", "run_script", "claude-code", "ok", 1, Duration::ZERO)
    });
    assert!(a.flush(Duration::from_secs(5)));
    assert_eq!(a.problem(), None);
    let page = query(&a, &[]);
    let tools: Vec<(Option<&str>, bool)> = page
        .items
        .iter()
        .map(|i| (i.tool.as_deref(), i.parent.is_some()))
        .collect();
    assert_eq!(
        tools,
        [
            (Some("run_script"), false),
            (Some("get"), true),
            (Some("search"), false)
        ]
    );
    assert_eq!(page.items[2].id, 41);
}

#[test]
fn a_long_call_is_found_by_time_though_committed_later() {
    let (a, _) = opened("late");
    // Began 3 hours ago, recorded now (a long call): its mark is this minute's.
    a.record(call("s", "slow", "c", "ok", 1, Duration::from_secs(3 * 3600)));
    a.record(call("s", "quick", "c", "ok", 1, Duration::ZERO));
    assert!(a.flush(Duration::from_secs(5)));
    let old = query(&a, &[("until", "2h")]);
    assert_eq!(
        old.items.iter().map(|i| i.tool.as_deref()).collect::<Vec<_>>(),
        [Some("slow")]
    );
    let window = query(&a, &[("since", "4h"), ("until", "2h")]);
    assert_eq!(window.items.len(), 1);
    assert!(query(&a, &[("since", "5h"), ("until", "4h")]).items.is_empty());
    assert_eq!(query(&a, &[("since", "1h")]).items.len(), 1);
}

// A script run and the calls it made.
mod runs;
