//! Turns power events into healing: on sleep, note which servers were
//! connected and pause keepalives; on wake or a network change, probe the
//! remote connections and heal, in one batch, those that were connected.

use std::collections::BTreeSet;
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::lifecycle::Status;
use crate::pool::Pool;
use crate::supervisor::SupervisorPatient;
use crate::wake::gate::Reachability;
use crate::wake::healer::{heal_all, HealConfig};
use crate::wake::PowerEvent;

pub const WAKE_PING_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Runs until `stop` is cancelled or the events end.
pub async fn run(
    pool: Pool,
    mut events: mpsc::Receiver<PowerEvent>,
    gate: Arc<dyn Reachability>,
    config: HealConfig,
    stop: CancellationToken,
) {
    let mut before_sleep: Option<BTreeSet<String>> = None;
    let mut batch: Option<JoinHandle<()>> = None;
    loop {
        let event = tokio::select! {
            _ = stop.cancelled() => break,
            e = events.recv() => e,
        };
        let Some(event) = event else { break };
        // Between the sleep and the wake, network changes are the machine
        // going down (NetworkManager drops its links on PrepareForSleep):
        // healing then would ping and drop every connection on the way into
        // sleep and forget which were connected. The wake heals them all.
        if event == PowerEvent::NetworkChanged && before_sleep.is_some() {
            tracing::info!("the network changed while going to sleep; healing waits for the wake");
            continue;
        }
        // A new event supersedes the batch in flight.
        if let Some(b) = batch.take() {
            b.abort();
        }
        match event {
            PowerEvent::WillSleep => {
                before_sleep = Some(pool.connected());
                pool.set_asleep(true);
                tracing::info!(
                    "going to sleep with {} servers connected",
                    before_sleep.as_ref().map_or(0, BTreeSet::len)
                );
            }
            PowerEvent::DidWake | PowerEvent::NetworkChanged => {
                pool.set_asleep(false);
                let remembered = before_sleep.take();
                let pool = pool.clone();
                let gate = gate.clone();
                batch = Some(tokio::spawn(async move {
                    let patients = patients(&pool, remembered.as_ref()).await;
                    if patients.is_empty() {
                        return;
                    }
                    tracing::info!("healing {} servers after {event:?}", patients.len());
                    heal_all(&patients, gate.as_ref(), config).await;
                }));
            }
        }
    }
    if let Some(b) = batch {
        b.abort();
    }
}

/// The remote servers to heal: a connected one only if its `ping` fails,
/// and any that dropped or was connected before the sleep. The pings run
/// concurrently, so one silent server costs the batch one timeout, not one
/// per server.
async fn patients(pool: &Pool, before_sleep: Option<&BTreeSet<String>>) -> Vec<SupervisorPatient> {
    let checks = pool.servers().into_iter().map(|sup| async move {
        // Local servers are watched by their process, not the network.
        sup.remote_target()?;
        if sup.status() == Status::Connected {
            if sup.probe(WAKE_PING_TIMEOUT).await {
                return None;
            }
        } else if !(before_sleep.is_some_and(|b| b.contains(sup.name())) || sup.healable()) {
            return None;
        }
        Some(SupervisorPatient(sup))
    });
    futures::future::join_all(checks).await.into_iter().flatten().collect()
}
