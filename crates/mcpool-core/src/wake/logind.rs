//! logind's `PrepareForSleep(bool)` on the system bus (Linux). The bus is
//! found the usual way, so `DBUS_SYSTEM_BUS_ADDRESS` points it elsewhere.

use std::future::Future;
use std::pin::Pin;

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{PowerEvent, PowerWatcher};

pub struct Logind;

#[zbus::proxy(
    interface = "org.freedesktop.login1.Manager",
    default_service = "org.freedesktop.login1",
    default_path = "/org/freedesktop/login1"
)]
trait Manager {
    #[zbus(signal)]
    fn prepare_for_sleep(&self, start: bool) -> zbus::Result<()>;
}

impl PowerWatcher for Logind {
    fn name(&self) -> &'static str {
        "logind"
    }

    fn run(
        self: Box<Self>,
        tx: mpsc::Sender<PowerEvent>,
        stop: CancellationToken,
    ) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async move {
            let connection = match zbus::Connection::system().await {
                Ok(c) => c,
                Err(e) => {
                    tracing::info!(
                        "no system bus, so no sleep signals from logind ({e}); the clock detector still works"
                    );
                    return;
                }
            };
            let proxy = match ManagerProxy::new(&connection).await {
                Ok(p) => p,
                Err(e) => {
                    tracing::info!("logind is not reachable ({e})");
                    return;
                }
            };
            let mut signals = match proxy.receive_prepare_for_sleep().await {
                Ok(s) => s,
                Err(e) => {
                    tracing::info!("cannot subscribe to logind's PrepareForSleep ({e})");
                    return;
                }
            };
            tracing::info!("listening for logind's sleep signals");
            loop {
                let signal = tokio::select! {
                    _ = stop.cancelled() => return,
                    s = signals.next() => s,
                };
                let Some(signal) = signal else { return };
                let Ok(args) = signal.args() else { continue };
                let event = if args.start {
                    PowerEvent::WillSleep
                } else {
                    PowerEvent::DidWake
                };
                tracing::info!("logind: {event:?}");
                if tx.send(event).await.is_err() {
                    return;
                }
            }
        })
    }
}
