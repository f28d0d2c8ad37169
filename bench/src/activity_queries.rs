//! How long the activity log's reads take on the file the size step wrote
//! (a million entries): each filter of `GET /api/activity`, a deep page,
//! and what the plots read (`series`, `overview`, `tools`), through the same
//! calls the API makes.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use mcpool_core::activity::{Activity, Filter, Retention};

use crate::stats::Summary;

/// One read, timed `reps` times (ms) after one untimed warm-up.
pub struct Timed {
    pub what: String,
    pub ms: Summary,
    /// What the last answer held (entries or series), to see it did work.
    pub items: usize,
}

fn filter(pairs: &[(&str, String)]) -> anyhow::Result<Filter> {
    let params: BTreeMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    Filter::from_query(&params, SystemTime::now()).map_err(|e| anyhow::anyhow!("{e}"))
}

fn time(reps: usize, mut read: impl FnMut() -> anyhow::Result<usize>) -> anyhow::Result<(Summary, usize)> {
    let mut items = read()?;
    let mut ms = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        items = read()?;
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    Ok((Summary::of(&ms), items))
}

/// The reads on `path`; `mid_ms` is the time of the middle entry and
/// `mid_id` an id about halfway (a deep cursor).
pub fn run(path: &Path, mid_ms: i64, mid_id: i64, reps: usize) -> anyhow::Result<Vec<Timed>> {
    let activity = Activity::open(path.to_path_buf(), Retention::default());
    // Let the writer open (and check) the file before the clock starts.
    if !activity.flush(Duration::from_secs(60)) {
        anyhow::bail!("the activity writer did not open {}", path.display());
    }
    let pages: Vec<(&str, Vec<(&str, String)>)> = vec![
        ("newest page, no filter", vec![]),
        ("server=server-3", vec![("server", "server-3".into())]),
        ("tool=tool_7", vec![("tool", "tool_7".into())]),
        ("client=claude-code", vec![("client", "claude-code".into())]),
        ("outcome=error", vec![("outcome", "error".into())]),
        ("kind=server", vec![("kind", "server".into())]),
        ("since=the middle entry's time", vec![("since", mid_ms.to_string())]),
        ("until=the middle entry's time", vec![("until", mid_ms.to_string())]),
        ("cursor=an id halfway", vec![("cursor", mid_id.to_string())]),
        (
            "server=server-3 & outcome=error & until=middle",
            vec![
                ("server", "server-3".into()),
                ("outcome", "error".into()),
                ("until", mid_ms.to_string()),
            ],
        ),
        ("limit=1000", vec![("limit", "1000".into())]),
    ];
    let mut out = Vec::new();
    for (what, pairs) in pages {
        let f = filter(&pairs)?;
        let (ms, items) = time(reps, || {
            activity
                .query(&f)
                .map(|p| p.items.len())
                .map_err(|e| anyhow::anyhow!(e))
        })
        .with_context(|| what.to_string())?;
        out.push(Timed {
            what: format!("`/api/activity`: {what}"),
            ms,
            items,
        });
    }
    let (ms, items) = time(reps, || {
        activity
            .series(Some("server-3"), None, 60)
            .map(|s| s.calls as usize)
            .map_err(|e| anyhow::anyhow!(e))
    })?;
    out.push(Timed {
        what: "`/api/activity/series?server=server-3` (60 min)".into(),
        ms,
        items,
    });
    let (ms, items) = time(reps, || {
        let each = activity.each(60, false).map_err(|e| anyhow::anyhow!(e))?;
        let bands = activity.bands(None, 24).map_err(|e| anyhow::anyhow!(e))?;
        Ok(each.len() + bands.len())
    })?;
    out.push(Timed {
        what: "`/api/activity/overview` (series per server, 24 h bands)".into(),
        ms,
        items,
    });
    let (ms, items) = time(reps, || {
        activity.each(60, true).map(|e| e.len()).map_err(|e| anyhow::anyhow!(e))
    })?;
    out.push(Timed {
        what: "`/api/activity/tools` (series per tool)".into(),
        ms,
        items,
    });
    Ok(out)
}
