//! macOS: IOKit's system power notifications (`IORegisterForSystemPower`:
//! the system will sleep, has powered on) and the System Configuration
//! dynamic store's network keys (`SCDynamicStore`: the global and
//! per-interface addresses, the DNS settings). Both deliver their callbacks
//! on a Core Foundation run loop, so each runs on a thread of its own that
//! turns that loop ([`run_loop_thread`]); the callback only puts the
//! notification on a channel, and the watcher's loop (on the runtime) turns
//! it into [`PowerEvent`]s as logind and netlink do on Linux. Compiled by
//! `scripts/macos.sh check`; never run on a Mac.

mod network;
mod sleep;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use system_configuration::core_foundation::runloop::{kCFRunLoopDefaultMode, CFRunLoop, CFRunLoopRunResult};
use tokio::sync::mpsc;

use crate::os::power::{watcher, PowerWatcher};

/// How long the run loop turns before it looks whether it should stop.
const TURN: Duration = Duration::from_millis(500);

pub fn watchers() -> Vec<Box<dyn PowerWatcher>> {
    vec![
        watcher("iokit-power", sleep::run),
        watcher("network-store", network::run),
    ]
}

/// The sender a callback writes to.
type Inbox<T> = mpsc::UnboundedSender<T>;

/// Sets its flag when dropped: the watcher's loop holds it, so its run loop
/// thread ends with it, however the loop ends.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Starts a thread named `name` that calls `register` (which adds its
/// source to the thread's run loop and returns what undoes it when
/// dropped) and turns the run loop until the returned guard is dropped.
/// The receiver ends when registering failed (said in the log) or the
/// thread ended.
fn run_loop_thread<T, G>(
    name: &'static str,
    register: impl FnOnce(Inbox<T>) -> Result<G, String> + Send + 'static,
) -> (mpsc::UnboundedReceiver<T>, StopOnDrop)
where
    T: Send + 'static,
{
    let (inbox, received) = mpsc::unbounded_channel();
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    let spawned = std::thread::Builder::new().name(name.into()).spawn(move || {
        let _registration = match register(inbox) {
            Ok(r) => r,
            Err(e) => {
                tracing::info!("{name}: {e}; the clock detector still works");
                return;
            }
        };
        while !stopped.load(Ordering::Relaxed) {
            // SAFETY: the default mode is a constant CFString of the framework.
            let turned = CFRunLoop::run_in_mode(unsafe { kCFRunLoopDefaultMode }, TURN, false);
            if turned == CFRunLoopRunResult::Finished {
                // No source left in the loop: nothing more will come.
                return;
            }
        }
    });
    if let Err(e) = spawned {
        tracing::info!("{name}: no thread for its run loop ({e})");
    }
    (received, StopOnDrop(stop))
}
