//! The network's changes from the System Configuration framework's dynamic
//! store (`SCDynamicStore`): its global IPv4, IPv6 and DNS state and each
//! interface's addresses and link, as [`PowerEvent::NetworkChanged`]. A
//! burst of changed keys is one event.

use std::time::Duration;

use system_configuration::core_foundation::array::CFArray;
use system_configuration::core_foundation::runloop::{kCFRunLoopDefaultMode, CFRunLoop};
use system_configuration::core_foundation::string::CFString;
use system_configuration::dynamic_store::{SCDynamicStore, SCDynamicStoreBuilder, SCDynamicStoreCallBackContext};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{run_loop_thread, Inbox};
use crate::os::power::{until_stopped, PowerEvent};

/// Changes closer together than this are one change.
pub const DEBOUNCE: Duration = Duration::from_millis(300);

/// The keys watched as they are.
const KEYS: &[&str] = &[
    "State:/Network/Global/IPv4",
    "State:/Network/Global/IPv6",
    "State:/Network/Global/DNS",
];

/// The keys watched by pattern (regular expressions of the store).
const PATTERNS: &[&str] = &[
    "State:/Network/Interface/[^/]+/IPv4",
    "State:/Network/Interface/[^/]+/IPv6",
    "State:/Network/Interface/[^/]+/Link",
];

fn on_change(_store: SCDynamicStore, _changed: CFArray<CFString>, inbox: &mut Inbox<()>) {
    let _ = inbox.send(());
}

/// The store, watching [`KEYS`] and [`PATTERNS`] from this thread's run
/// loop; dropping it ends the watch.
fn register(inbox: Inbox<()>) -> Result<SCDynamicStore, String> {
    let context = SCDynamicStoreCallBackContext {
        callout: on_change,
        info: inbox,
    };
    let store = SCDynamicStoreBuilder::new("mcpool")
        .callback_context(context)
        .build()
        .ok_or("SCDynamicStoreCreate made no store")?;
    let cf = |list: &[&str]| CFArray::from_CFTypes(&list.iter().map(|k| CFString::new(k)).collect::<Vec<_>>());
    if !store.set_notification_keys(&cf(KEYS), &cf(PATTERNS)) {
        return Err("SCDynamicStoreSetNotificationKeys refused the network keys".into());
    }
    let source = store
        .create_run_loop_source()
        .ok_or("SCDynamicStoreCreateRunLoopSource made no source")?;
    // SAFETY: the default mode is a constant CFString of the framework.
    CFRunLoop::get_current().add_source(&source, unsafe { kCFRunLoopDefaultMode });
    Ok(store)
}

pub async fn run(tx: mpsc::Sender<PowerEvent>, stop: CancellationToken) {
    let (mut changes, _stop_thread) = run_loop_thread("network-store", register);
    tracing::info!("watching network changes through the System Configuration dynamic store");
    while let Some(Some(())) = until_stopped(&stop, changes.recv()).await {
        // Let the burst settle, then report it once.
        tokio::time::sleep(DEBOUNCE).await;
        while changes.try_recv().is_ok() {}
        tracing::info!("the network changed");
        if tx.send(PowerEvent::NetworkChanged).await.is_err() {
            return;
        }
    }
}
