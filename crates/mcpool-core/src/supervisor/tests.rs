//! The supervisor as a driver of its lifecycle, with servers that fail in
//! known ways (a command that cannot be spawned, a process that exits at
//! once): admission, one shared attempt, the lists offered from the disk
//! cache, and what explicit actions leave behind.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use rmcp::model::Tool;

use super::*;
use crate::oauth::OAuth;
use crate::secrets::MemoryStore;
use crate::toolctl::{Approvals, ToolControl};

#[derive(Default)]
struct Seen {
    status: AtomicUsize,
    lists: AtomicUsize,
}

impl Observer for Seen {
    fn status_changed(&self, _: &str) {
        self.status.fetch_add(1, Ordering::SeqCst);
    }
    fn lists_changed(&self, _: &str) {
        self.lists.fetch_add(1, Ordering::SeqCst);
    }
}

fn context(cache: Option<&Path>) -> Arc<Context> {
    let secrets: Arc<dyn SecretStore> = Arc::new(MemoryStore::default());
    Arc::new(Context {
        hub: Arc::new(Hub::default()),
        activity: crate::activity::Activity::off(),
        cache_hits: Default::default(),
        // Long enough that no test outlives a backoff.
        backoff: crate::backoff::Backoff::new(Duration::from_secs(60), Duration::from_secs(60)).expect("backoff"),
        oauth: Arc::new(OAuth::new(secrets.clone())),
        secrets,
        cache: cache.map(|dir| (ToolCache::new(dir), Fingerprinter::new(vec![7; 32]))),
        profile: "test".into(),
        keepalive: None,
        asleep: std::sync::atomic::AtomicBool::new(false),
        tools: Arc::new(ToolControl::new(Approvals::default())),
        logs: None,
        session_idle: crate::pool::DEFAULT_SESSION_IDLE,
    })
}

/// A supervisor of server `s` as `entry` configures it, and what it told its pool.
fn supervisor(entry: serde_json::Value, cache: Option<&Path>) -> (Arc<Supervisor>, Arc<Seen>) {
    let text = serde_json::json!({ "mcpServers": { "s": entry } }).to_string();
    let mut config = crate::config::parse(Path::new("/test/mcpool.json"), &text).expect("config");
    let spec = config.servers.remove("s").expect("server s");
    let seen = Arc::new(Seen::default());
    let observer: Arc<dyn Observer> = seen.clone();
    // Alive as long as `seen` is.
    let sup = Supervisor::new(spec, context(cache), Arc::downgrade(&observer));
    (sup, seen)
}

fn unspawnable() -> serde_json::Value {
    serde_json::json!({ "command": "/nonexistent/mcpool-test-no-such-server" })
}

/// A local server whose process exits before answering: a transient failure.
fn exits_at_once() -> serde_json::Value {
    if cfg!(windows) {
        serde_json::json!({ "command": "cmd", "args": ["/c", "exit 3"] })
    } else {
        serde_json::json!({ "command": "sh", "args": ["-c", "exit 3"] })
    }
}

/// A local server that reads its stdin and never answers, until its stdin
/// closes (Windows: `find`, which prints only the lines holding a word no
/// request has).
fn never_answers(timeout_ms: u64) -> serde_json::Value {
    if cfg!(windows) {
        let root = std::env::var("SystemRoot").unwrap_or_else(|_| r"C:\Windows".into());
        let find = format!(r"{root}\System32\find.exe");
        serde_json::json!({ "command": find, "args": ["mcpool-never-in-a-request"], "timeout": timeout_ms })
    } else {
        serde_json::json!({ "command": "sleep", "args": ["600"], "timeout": timeout_ms })
    }
}

fn attempts(sup: &Supervisor) -> u64 {
    sup.lock().attempts.done
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpool-supervisor-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[tokio::test]
async fn a_command_that_cannot_be_spawned_fails_once_and_is_not_retried() {
    let (sup, _) = supervisor(unspawnable(), None);
    let first = sup.peer().await.err().expect("no server to connect to");
    assert!(first.sentence.contains("cannot start"), "{}", first.sentence);
    let snap = sup.snapshot();
    assert_eq!((snap.status, snap.connecting), (Status::Failed, false));
    assert!(snap.error.is_some_and(|e| e.contains("mcpool-test-no-such-server")));
    let again = sup.peer().await.err().expect("refused");
    assert!(again.sentence.contains("will not be retried"), "{}", again.sentence);
    assert_eq!(attempts(&sup), 1, "a permanent failure is never retried on its own");
}

#[tokio::test]
async fn concurrent_requests_share_one_attempt() {
    let (sup, _) = supervisor(unspawnable(), None);
    let outcomes = futures::future::join_all((0..4).map(|_| sup.peer())).await;
    assert!(outcomes.iter().all(Result::is_err));
    assert_eq!(attempts(&sup), 1);
}

#[tokio::test]
async fn after_a_transient_failure_requests_fail_at_once_until_the_backoff_ends() {
    let (sup, _) = supervisor(exits_at_once(), None);
    let first = sup.peer().await.err().expect("the process exits");
    assert!(first.sentence.contains("retry in"), "{}", first.sentence);
    let snap = sup.snapshot();
    assert_eq!(snap.status, Status::Failed);
    assert!(snap.retry_in_ms.is_some_and(|ms| ms > 50_000), "{:?}", snap.retry_in_ms);
    let refused = sup.peer().await.err().expect("refused during the backoff");
    assert!(refused.sentence.contains("is unavailable"), "{}", refused.sentence);
    assert_eq!(attempts(&sup), 1, "nothing spawned during the backoff");
    // An explicit reconnect bypasses the backoff.
    assert!(sup.reconnect().await.is_err());
    assert_eq!(attempts(&sup), 2);
}

#[tokio::test]
async fn cached_tools_are_offered_kept_after_a_transient_failure_and_dropped_by_a_disconnect() {
    let dir = temp_dir("kept");
    let (sup, seen) = supervisor(exits_at_once(), Some(&dir));
    store_cached(&sup, &["cached_tool"]).await;
    sup.load_cache().await;
    assert_eq!(tool_states(&sup), [("cached_tool".to_string(), ToolState::Cached)]);
    assert_eq!(seen.lists.load(Ordering::SeqCst), 1);
    assert!(sup.peer().await.is_err());
    assert_eq!(tool_states(&sup), [("cached_tool".to_string(), ToolState::Kept)]);
    assert_eq!(sup.lists().tools.len(), 1, "agents still see the kept tool");
    sup.disconnect();
    assert_eq!(sup.status(), Status::Disabled);
    assert!(tool_states(&sup).is_empty());
    assert_eq!(
        seen.lists.load(Ordering::SeqCst),
        2,
        "one list change for the disconnect"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_permanent_failure_drops_the_cached_tools() {
    let dir = temp_dir("permanent");
    let (sup, seen) = supervisor(unspawnable(), Some(&dir));
    store_cached(&sup, &["cached_tool"]).await;
    sup.load_cache().await;
    assert_eq!(sup.lists().tools.len(), 1);
    assert!(sup.peer().await.is_err());
    assert!(sup.lists().tools.is_empty());
    assert_eq!(seen.lists.load(Ordering::SeqCst), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_disabled_server_is_refused_without_an_attempt() {
    let mut entry = unspawnable();
    entry["disabled"] = true.into();
    let (sup, _) = supervisor(entry, None);
    sup.start();
    let refused = sup.peer().await.err().expect("disabled");
    assert!(
        refused.sentence.contains("is disconnected in mcpool"),
        "{}",
        refused.sentence
    );
    assert_eq!((sup.status(), attempts(&sup)), (Status::Disabled, 0));
}

#[tokio::test]
async fn a_stopped_server_refuses_everything_for_good() {
    let dir = temp_dir("stopped");
    let (sup, seen) = supervisor(unspawnable(), Some(&dir));
    store_cached(&sup, &["cached_tool"]).await;
    sup.load_cache().await;
    sup.stop().await;
    assert!(sup.lists().tools.is_empty());
    assert_eq!(
        seen.lists.load(Ordering::SeqCst),
        1,
        "the pool announces a removal itself"
    );
    let refused = sup.peer().await.err().expect("stopped");
    assert!(
        refused.sentence.contains("was removed from the mcpool config"),
        "{}",
        refused.sentence
    );
    let reconnect = sup.reconnect().await.expect_err("stopped");
    assert!(
        reconnect.sentence.contains("is not in the config"),
        "{}",
        reconnect.sentence
    );
    sup.disconnect();
    sup.start();
    assert_eq!((sup.status(), attempts(&sup)), (Status::Disabled, 0));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A reconnect right after a disconnect that abandoned an attempt (issue
/// 44): the abandoned attempt's task ends after the reconnect has begun
/// to wait for its turn, and its "disconnected while connecting" is not
/// the reconnect's answer; the reconnect makes an attempt of its own.
#[tokio::test]
async fn a_reconnect_right_after_a_disconnect_makes_its_own_attempt() {
    let (sup, _) = supervisor(never_answers(60_000), None);
    let first = tokio::spawn({
        let sup = sup.clone();
        async move { sup.peer().await }
    });
    while !sup.snapshot().connecting {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    sup.disconnect();
    assert_eq!(sup.status(), Status::Disabled);
    let reconnect = tokio::time::timeout(Duration::from_secs(2), sup.reconnect()).await;
    assert!(
        reconnect.is_err(),
        "the reconnect answered with the abandoned attempt's outcome: {reconnect:?}"
    );
    assert!(sup.snapshot().connecting, "the reconnect's own attempt is under way");
    let first = first.await.expect("joined").err().expect("abandoned");
    assert!(
        first.sentence.contains("disconnected while connecting"),
        "{}",
        first.sentence
    );
    sup.disconnect();
    assert_eq!(attempts(&sup), 2, "the abandoned one and the reconnect's");
}

// On Windows tokio reads a child's pipes on its blocking pool (anonymous
// pipes have no overlapped I/O), and paused time never jumps while a
// blocking read is outstanding; the attempt's logic is the same code on
// every platform and is tested here on Unix.
#[cfg_attr(
    windows,
    ignore = "paused time does not advance while tokio reads a child's pipe on its blocking pool (Windows)"
)]
#[tokio::test(start_paused = true)]
async fn a_request_that_stops_waiting_does_not_abandon_the_attempt() {
    // A process that never answers: the attempt ends at its timeout.
    let (sup, _) = supervisor(never_answers(20_000), None);
    tokio::select! {
        _ = sup.peer() => panic!("the server never answers"),
        _ = tokio::time::sleep(Duration::from_millis(100)) => {}
    }
    assert!(sup.snapshot().connecting, "the attempt goes on without its request");
    // Paused time: the clock jumps to the attempt's timeout once all is idle.
    let ended = tokio::time::timeout(Duration::from_secs(120), async {
        while sup.snapshot().connecting {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    })
    .await;
    assert!(
        ended.is_ok(),
        "the machine was left attempting with no attempt behind it"
    );
    let snap = sup.snapshot();
    assert_eq!(snap.status, Status::Failed);
    assert_eq!(attempts(&sup), 1);
}

/// Writes `names` as this server's cached tools, under its cache key, approved.
async fn store_cached(sup: &Arc<Supervisor>, names: &[&'static str]) {
    let resolved = cache::resolve(&sup.ctx, &sup.spec()).await.expect("resolved");
    let key = sup
        .disk()
        .key(&resolved, || sup.signin().credential_id())
        .expect("cache enabled");
    let tools: Vec<Tool> = names
        .iter()
        .map(|n| Tool::new(*n, "a tool", Arc::new(serde_json::Map::new())))
        .collect();
    let (cache, _) = sup.ctx.cache.as_ref().expect("cache");
    cache.store(&key, sup.name(), &tools).expect("stored");
    // As the pool does on sight: the snapshot shows them by source, not held back.
    for tool in &tools {
        sup.ctx.tools.approvals.approve(sup.name(), tool);
    }
}

fn tool_states(sup: &Supervisor) -> Vec<(String, ToolState)> {
    sup.snapshot().tools.into_iter().map(|t| (t.name, t.state)).collect()
}
