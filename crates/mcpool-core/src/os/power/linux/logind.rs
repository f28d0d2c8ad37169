//! logind's `PrepareForSleep(bool)` on the system bus (Linux). The bus is
//! found the usual way, so `DBUS_SYSTEM_BUS_ADDRESS` points it elsewhere.

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::os::power::{until_stopped, PowerEvent};

#[zbus::proxy(
    interface = "org.freedesktop.login1.Manager",
    default_service = "org.freedesktop.login1",
    default_path = "/org/freedesktop/login1"
)]
trait Manager {
    #[zbus(signal)]
    fn prepare_for_sleep(&self, start: bool) -> zbus::Result<()>;
}

pub async fn run(tx: mpsc::Sender<PowerEvent>, stop: CancellationToken) {
    let connection = match zbus::Connection::system().await {
        Ok(c) => c,
        Err(e) => {
            tracing::info!("no system bus, so no sleep signals from logind ({e}); the clock detector still works");
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
    while let Some(Some(signal)) = until_stopped(&stop, signals.next()).await {
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
}
