//! What runs beside the endpoint until shutdown: the tool call counts
//! written now and then, wake healing, and the config file followed.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio_util::sync::CancellationToken;

use crate::config;
use crate::pool::Pool;
use crate::wake::{self, gate::DnsTcp, healer::HealConfig};

/// How often the config file is checked for changes.
const CONFIG_POLL: Duration = Duration::from_secs(2);

/// Writes the tool call counts every [`crate::usage::FLUSH_EVERY`] while
/// they change, until shutdown (which writes them once more).
pub(super) async fn flush_usage(pool: Pool, stop: CancellationToken) {
    let mut tick = tokio::time::interval(crate::usage::FLUSH_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {
                let pool = pool.clone();
                let _ = tokio::task::spawn_blocking(move || pool.flush_usage()).await;
            }
        }
    }
}

/// Sleep, wake and network changes heal the pool by themselves (rule 11).
pub(super) fn start_healing(pool: &Pool, window: Option<Duration>, stop: &CancellationToken) {
    let mut config = HealConfig::default();
    if let Some(window) = window {
        config.window = window;
    }
    let events = wake::spawn(wake::platform_watchers(), stop.clone());
    tokio::spawn(super::wake_driver::run(
        pool.clone(),
        events,
        Arc::new(DnsTcp),
        config,
        stop.clone(),
    ));
}

/// Applies the config file whenever it changes, until `stop`.
pub(super) async fn follow_config(
    pool: Pool,
    path: PathBuf,
    mut seen: Option<(SystemTime, u64)>,
    stop: CancellationToken,
) {
    let mut poll = tokio::time::interval(CONFIG_POLL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = poll.tick() => {
                let now = stamp(&path);
                if now != seen {
                    seen = now;
                    reload(&pool, &path);
                }
            }
        }
    }
}

fn reload(pool: &Pool, path: &Path) {
    let loaded = config::load(path);
    match &loaded {
        Ok(c) => tracing::info!("config changed: {}", super::servers(c.servers.len())),
        // A half-written or broken file never takes the running servers down.
        Err(problem) => tracing::error!("{problem}; keeping the servers that are running"),
    }
    pool.config_loaded(path, loaded.as_ref());
}

pub(super) fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}
