use std::path::PathBuf;
use std::time::Duration;

use super::file::{self, Appender, Line, Source, ROTATE_AT};
use super::*;
use crate::scratch::scratch_dir;

#[test]
fn file_names_stay_in_the_folder_and_apart() {
    assert_eq!(file::safe_stem("github_tools-2.x"), "github_tools-2.x");
    assert_eq!(file::safe_stem(".."), "%2E.");
    assert_eq!(file::safe_stem("a/b"), "a%2Fb");
    assert_eq!(file::safe_stem("a%2Fb"), "a%252Fb");
    assert_eq!(file::safe_stem(""), "%");
    assert_eq!(file::safe_stem("é"), "%C3%A9");
    let long = "x".repeat(300);
    let stem = file::safe_stem(&long);
    assert!(stem.len() <= 120, "{stem}");
    assert_ne!(stem, file::safe_stem(&"x".repeat(301)));
    let dir = PathBuf::from("/d");
    assert_eq!(file::file_for(&dir, "../up"), PathBuf::from("/d/%2E.%2Fup.log"));
    assert_eq!(
        file::dir_for(&dir, "work"),
        PathBuf::from("/d/logs/work"),
        "one folder per profile"
    );
    assert_eq!(file::rotated(&PathBuf::from("/d/s.log")), PathBuf::from("/d/s.log.1"));
}

#[test]
fn lines_are_written_and_read_back() {
    let stderr = Line {
        time: "2026-12-02T06:01:06.123Z".into(),
        source: Source::Stderr,
        level: None,
        text: "listening on stdio".into(),
    };
    assert_eq!(
        stderr.to_file_line(),
        "2026-12-02T06:01:06.123Z stderr listening on stdio"
    );
    let mcpool = Line {
        time: "2026-12-02T06:01:07.000Z".into(),
        source: Source::Mcpool,
        level: Some("warn".into()),
        text: "connection dropped: the process exited with status 3".into(),
    };
    assert_eq!(
        mcpool.to_file_line(),
        "2026-12-02T06:01:07.000Z mcpool WARN connection dropped: the process exited with status 3"
    );
    for line in [stderr, mcpool] {
        assert_eq!(Line::parse(&line.to_file_line()), Some(line));
    }
    assert_eq!(Line::parse("garbage"), None);
    assert_eq!(Line::parse("2026 other text"), None);
    let json = serde_json::to_value(Line::parse("t stderr  two  spaces").unwrap()).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"time": "t", "source": "stderr", "level": null, "text": " two  spaces"})
    );
}

#[test]
fn a_server_keeps_at_most_two_files_of_a_mebibyte() {
    let dir = scratch_dir("server-logs-rotate");
    let path = file::file_for(&dir, "noisy");
    let mut appender = Appender::new(path.clone());
    let line = "y".repeat(199);
    // 3 MiB of lines: two rotations.
    for i in 0..(3 * ROTATE_AT / 200) {
        appender.append(&format!("{i:08} {line}")).unwrap();
    }
    appender.flush().unwrap();
    let current = std::fs::metadata(&path).unwrap().len();
    let old = std::fs::metadata(file::rotated(&path)).unwrap().len();
    assert!(current <= ROTATE_AT && old <= ROTATE_AT, "{current} {old}");
    assert!(old > ROTATE_AT - 300, "the rotated file was full: {old}");
    let all = file::read_all(&path).unwrap();
    let text = String::from_utf8(all).unwrap();
    assert!(!text.contains("00000000 "), "the oldest lines are gone");
    let last = format!("{:08} ", 3 * ROTATE_AT / 200 - 1);
    assert!(text.trim_end().lines().last().unwrap().starts_with(&last));
    // In order: the rotated file first.
    let numbers: Vec<u64> = text.lines().map(|l| l[..8].parse().unwrap()).collect();
    assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1));
    for p in [path.clone(), file::rotated(&path)] {
        crate::os::files::assert_private(&p);
    }
    // A reopened appender goes on from the file's size.
    let mut again = Appender::new(path.clone());
    again.append("z").unwrap();
    again.flush().unwrap();
    assert!(std::fs::metadata(&path).unwrap().len() <= ROTATE_AT);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn search_keeps_the_last_matches_of_both_files_oldest_first() {
    let dir = scratch_dir("server-logs-search");
    let path = file::file_for(&dir, "s");
    std::fs::create_dir_all(&dir).unwrap();
    let line = |n: u32, text: &str| format!("2026-12-02T00:00:{n:02}.000Z stderr {text}\n");
    std::fs::write(file::rotated(&path), [line(1, "Alpha one"), line(2, "beta")].concat()).unwrap();
    std::fs::write(
        &path,
        [
            line(3, "ALPHA two"),
            "not a log line\n".into(),
            line(4, "gamma"),
            "2026-12-02T00:00:05.000Z mcpool INFO status connected\n".into(),
        ]
        .concat(),
    )
    .unwrap();
    let (all, truncated) = file::search(&path, "", 10).unwrap();
    let texts: Vec<&str> = all.iter().map(|l| l.text.as_str()).collect();
    assert_eq!(texts, ["Alpha one", "beta", "ALPHA two", "gamma", "status connected"]);
    assert!(!truncated);
    assert_eq!(all[4].level.as_deref(), Some("info"));
    let (alpha, truncated) = file::search(&path, "alpha", 10).unwrap();
    assert_eq!(
        alpha.iter().map(|l| l.text.as_str()).collect::<Vec<_>>(),
        ["Alpha one", "ALPHA two"]
    );
    assert!(!truncated);
    let (last, truncated) = file::search(&path, "", 2).unwrap();
    assert_eq!(
        last.iter().map(|l| l.text.as_str()).collect::<Vec<_>>(),
        ["gamma", "status connected"]
    );
    assert!(truncated);
    let (none, _) = file::search(&file::file_for(&dir, "absent"), "", 5).unwrap();
    assert!(none.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn appended_lines_are_written_then_streamed() {
    let dir = scratch_dir("server-logs-append");
    let logs = ServerLogs::open(dir.clone());
    let mut rx = logs.subscribe();
    logs.for_server("svc").stderr("ready");
    logs.append("svc", Source::Mcpool, Some("WARN"), "dropped; stderr:\nlast words\n");
    logs.append("other", Source::Stderr, None, &"x".repeat(file::MAX_TEXT_BYTES + 10));
    assert!(logs.flush(Duration::from_secs(5)));
    let (lines, _) = logs.search("svc", "", 10).unwrap();
    let shown: Vec<(Source, Option<&str>, &str)> = lines
        .iter()
        .map(|l| (l.source, l.level.as_deref(), l.text.as_str()))
        .collect();
    assert_eq!(
        shown,
        [
            (Source::Stderr, None, "ready"),
            (Source::Mcpool, Some("warn"), "dropped; stderr:"),
            (Source::Mcpool, Some("warn"), "last words"),
        ]
    );
    let (other, _) = logs.search("other", "", 10).unwrap();
    assert!(other[0].text.ends_with('…') && other[0].text.len() <= file::MAX_TEXT_BYTES + 3);
    let streamed: Vec<Written> = (0..4).map(|_| rx.try_recv().unwrap()).collect();
    assert_eq!(streamed[0].server, "svc");
    assert_eq!(streamed[0].line.text, "ready");
    assert_eq!(streamed[3].server, "other");
    let download = String::from_utf8(logs.download("svc").unwrap()).unwrap();
    assert_eq!(download.lines().count(), 3);
    assert!(download.lines().all(|l| Line::parse(l).is_some()), "{download}");
    assert_eq!(logs.dropped(), 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_disk_error_drops_lines_and_goes_on() {
    let dir = scratch_dir("server-logs-disk-error");
    std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
    // A file where the folder should be: every write fails.
    std::fs::write(&dir, b"in the way").unwrap();
    let logs = ServerLogs::open(dir.clone());
    logs.append("svc", Source::Stderr, None, "lost");
    logs.append("svc", Source::Stderr, None, "lost too");
    assert!(logs.flush(Duration::from_secs(5)), "the writer is still there");
    assert!(logs.search("svc", "", 10).is_err() || logs.search("svc", "", 10).unwrap().0.is_empty());
    std::fs::remove_file(&dir).unwrap();
    logs.append("svc", Source::Stderr, None, "kept");
    assert!(logs.flush(Duration::from_secs(5)));
    let (lines, _) = logs.search("svc", "", 10).unwrap();
    assert_eq!(lines.iter().map(|l| l.text.as_str()).collect::<Vec<_>>(), ["kept"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_layer_takes_events_about_a_server_redacted() {
    use tracing_subscriber::layer::SubscriberExt;
    let dir = scratch_dir("server-logs-layer");
    let logs = ServerLogs::open(dir.clone());
    let secret = "layer-secret-4f1c9a".to_string();
    crate::secrets::remember_secrets(std::slice::from_ref(&secret));
    let subscriber = tracing_subscriber::registry().with(ServerLogLayer::to(logs.clone()));
    tracing::subscriber::with_default(subscriber, || {
        let name = "svc";
        tracing::warn!(server = %name, attempt = 2, "connection attempt failed: bad key {secret}");
        tracing::info!("about no server");
        tracing::info!(server = "other", "signed in");
    });
    assert!(logs.flush(Duration::from_secs(5)));
    let (lines, _) = logs.search("svc", "", 10).unwrap();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0].source, Source::Mcpool);
    assert_eq!(lines[0].level.as_deref(), Some("warn"));
    assert_eq!(lines[0].text, "connection attempt failed: bad key [secret] attempt=2");
    let (other, _) = logs.search("other", "", 10).unwrap();
    assert_eq!(other[0].text, "signed in");
    let everything: Vec<u8> = std::fs::read_dir(&dir)
        .unwrap()
        .flat_map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    assert!(!String::from_utf8_lossy(&everything).contains("layer-secret"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn stderr_goes_to_the_log_redacted_and_whole() {
    let dir = scratch_dir("server-logs-stderr");
    let logs = ServerLogs::open(dir.clone());
    let secret = "stderr-secret-77d2e0".to_string();
    crate::secrets::remember_secrets(std::slice::from_ref(&secret));
    let tail = crate::stderr_tail::StderrTail::with_log(Some(logs.for_server("svc")));
    let long = "w".repeat(1000);
    let text = format!("key={secret}\n{long}\n");
    tail.clone().drain(text.as_bytes()).await;
    assert!(logs.flush(Duration::from_secs(5)));
    let (lines, _) = logs.search("svc", "", 10).unwrap();
    let texts: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
    assert_eq!(
        texts,
        ["key=[secret]", long.as_str()],
        "the log keeps what the tail cuts"
    );
    assert_eq!(tail.tail()[0], "key=[secret]");
    let _ = std::fs::remove_dir_all(&dir);
}
