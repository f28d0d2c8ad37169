//! IOKit's system power notifications: `kIOMessageSystemWillSleep` is
//! [`PowerEvent::WillSleep`], `kIOMessageSystemHasPoweredOn`
//! [`PowerEvent::DidWake`]. The root power domain waits for every
//! registered client to allow a sleep (`IOAllowPowerChange`), so the
//! callback allows it at once: mcpool never holds the machine awake.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};

use system_configuration::core_foundation::runloop::{
    kCFRunLoopDefaultMode, CFRunLoopAddSource, CFRunLoopGetCurrent, CFRunLoopSourceRef,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{run_loop_thread, Inbox};
use crate::os::power::{until_stopped, PowerEvent};

type IoObject = u32;
type IoConnect = u32;
type NotificationPort = *mut c_void;
type InterestCallback = extern "C" fn(refcon: *mut c_void, service: IoObject, message: u32, argument: *mut c_void);

/// `iokit_common_msg(0x270)` and its kin (IOKit's `IOMessage.h`).
const CAN_SYSTEM_SLEEP: u32 = 0xe000_0270;
const SYSTEM_WILL_SLEEP: u32 = 0xe000_0280;
const SYSTEM_HAS_POWERED_ON: u32 = 0xe000_0300;

#[link(name = "IOKit", kind = "framework")]
extern "C" {
    fn IORegisterForSystemPower(
        refcon: *mut c_void,
        port: *mut NotificationPort,
        callback: InterestCallback,
        notifier: *mut IoObject,
    ) -> IoConnect;
    fn IODeregisterForSystemPower(notifier: *mut IoObject) -> i32;
    fn IONotificationPortGetRunLoopSource(port: NotificationPort) -> CFRunLoopSourceRef;
    fn IONotificationPortDestroy(port: NotificationPort);
    fn IOAllowPowerChange(kernel_port: IoConnect, notification_id: isize) -> i32;
    fn IOServiceClose(connect: IoConnect) -> i32;
}

/// What the callback gets: where events go, and the root power domain's
/// connection to allow a sleep on (known once the registration returned).
struct Context {
    inbox: Inbox<PowerEvent>,
    root: AtomicU32,
}

/// The event of a power message, and whether the system waits for it to
/// be allowed.
fn event_of(message: u32) -> (Option<PowerEvent>, bool) {
    match message {
        CAN_SYSTEM_SLEEP => (None, true),
        SYSTEM_WILL_SLEEP => (Some(PowerEvent::WillSleep), true),
        SYSTEM_HAS_POWERED_ON => (Some(PowerEvent::DidWake), false),
        _ => (None, false),
    }
}

extern "C" fn on_power(refcon: *mut c_void, _service: IoObject, message: u32, argument: *mut c_void) {
    // SAFETY: `refcon` is the registration's live `Context`.
    let context = unsafe { &*refcon.cast::<Context>() };
    let (event, allow) = event_of(message);
    if let Some(event) = event {
        let _ = context.inbox.send(event);
    }
    if allow {
        // SAFETY: the root domain's connection and the notification's id,
        // as IOKit asks them back.
        unsafe { IOAllowPowerChange(context.root.load(Ordering::Relaxed), argument as isize) };
    }
}

/// The registration, undone (in the run loop's thread) when dropped.
struct Registration {
    root: IoConnect,
    port: NotificationPort,
    notifier: IoObject,
    context: *mut Context,
}

impl Drop for Registration {
    fn drop(&mut self) {
        // SAFETY: the objects of one registration, released once, in the
        // order IOKit's documentation gives; the context after them.
        unsafe {
            IODeregisterForSystemPower(&mut self.notifier);
            IOServiceClose(self.root);
            IONotificationPortDestroy(self.port);
            drop(Box::from_raw(self.context));
        }
    }
}

/// Registers for the system's power messages on this thread's run loop.
fn register(inbox: Inbox<PowerEvent>) -> Result<Registration, String> {
    let context = Box::into_raw(Box::new(Context {
        inbox,
        root: AtomicU32::new(0),
    }));
    let mut port: NotificationPort = std::ptr::null_mut();
    let mut notifier: IoObject = 0;
    // SAFETY: the context lives until the registration is dropped; the
    // port and notifier are written by the call.
    let root = unsafe { IORegisterForSystemPower(context.cast(), &mut port, on_power, &mut notifier) };
    if root == 0 {
        // SAFETY: never handed on.
        drop(unsafe { Box::from_raw(context) });
        return Err("IORegisterForSystemPower gave no connection to the root power domain".into());
    }
    // SAFETY: `context` is live (above).
    unsafe { (*context).root.store(root, Ordering::Relaxed) };
    // SAFETY: the port's source, added to this thread's own run loop.
    unsafe {
        let source = IONotificationPortGetRunLoopSource(port);
        CFRunLoopAddSource(CFRunLoopGetCurrent(), source, kCFRunLoopDefaultMode);
    }
    Ok(Registration {
        root,
        port,
        notifier,
        context,
    })
}

pub async fn run(tx: mpsc::Sender<PowerEvent>, stop: CancellationToken) {
    let (mut events, _stop_thread) = run_loop_thread("iokit-power", register);
    tracing::info!("listening for IOKit's sleep and wake notifications");
    while let Some(Some(event)) = until_stopped(&stop, events.recv()).await {
        tracing::info!("IOKit power: {event:?}");
        if tx.send(event).await.is_err() {
            return;
        }
    }
}
