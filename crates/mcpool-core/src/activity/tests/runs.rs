//! A script run and its calls: each call names the run as its parent.

use std::time::Duration;

use super::*;

#[test]
fn a_script_runs_calls_name_it_as_their_parent() {
    let (a, _path) = opened("parent");
    let inner = |tool: &str| Entry {
        parent_run: Some("run-1".into()),
        ..call("github", tool, "agent", "ok", 5, Duration::from_secs(3))
    };
    // The calls end (and are recorded) before the run that made them.
    a.record(inner("search"));
    a.record(inner("get"));
    a.record(call("github", "alone", "agent", "ok", 5, Duration::from_secs(2)));
    a.record(Entry {
        run: Some("run-1".into()),
        ..call("mcpool", "run_script", "agent", "ok", 50, Duration::from_secs(4))
    });
    assert!(a.flush(Duration::from_secs(5)));
    let page = query(&a, &[]);
    let run = page
        .items
        .iter()
        .find(|i| i.tool.as_deref() == Some("run_script"))
        .expect("the run");
    assert_eq!(run.parent, None);
    let parents: Vec<(Option<&str>, Option<i64>)> = page.items.iter().map(|i| (i.tool.as_deref(), i.parent)).collect();
    assert!(parents.contains(&(Some("search"), Some(run.id))), "{parents:?}");
    assert!(parents.contains(&(Some("get"), Some(run.id))), "{parents:?}");
    assert!(parents.contains(&(Some("alone"), None)), "{parents:?}");
    let run_id = run.id.to_string();
    let calls = query(&a, &[("parent", run_id.as_str())]);
    let tools: Vec<&str> = calls.items.iter().filter_map(|i| i.tool.as_deref()).collect();
    assert_eq!(tools, ["get", "search"]);
}
