//! Windows: the system's suspend/resume notification
//! (`PowerRegisterSuspendResumeNotification` with a callback, no window
//! needed) and the IP interface change notification
//! (`NotifyIpInterfaceChange`, every interface, both families). The system
//! calls each callback on a thread of its own; the callback only puts the
//! notification on a channel, and the watcher's loop (on the runtime) turns
//! it into [`PowerEvent`]s as logind and netlink do on Linux.

use std::ffi::c_void;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use windows_sys::Win32::Foundation::HANDLE;
use windows_sys::Win32::NetworkManagement::IpHelper::{
    CancelMibChangeNotify2, NotifyIpInterfaceChange, MIB_IPINTERFACE_ROW, MIB_NOTIFICATION_TYPE,
};
use windows_sys::Win32::Networking::WinSock::AF_UNSPEC;
use windows_sys::Win32::System::Power::{
    PowerRegisterSuspendResumeNotification, PowerUnregisterSuspendResumeNotification,
    DEVICE_NOTIFY_SUBSCRIBE_PARAMETERS,
};
use windows_sys::Win32::UI::WindowsAndMessaging::{
    DEVICE_NOTIFY_CALLBACK, PBT_APMRESUMEAUTOMATIC, PBT_APMRESUMESUSPEND, PBT_APMSUSPEND,
};

use crate::os::power::{until_stopped, watcher, PowerEvent, PowerWatcher};

/// Notifications closer together than this are one change (an adapter
/// coming up reports each interface and family).
pub const DEBOUNCE: Duration = Duration::from_millis(300);

pub fn watchers() -> Vec<Box<dyn PowerWatcher>> {
    vec![
        watcher("suspend-resume", suspend_resume),
        watcher("ip-interface", ip_interface),
    ]
}

/// The event of a power broadcast. Only the automatic resume, which the
/// system always sends, is a wake: the resume that follows when a person
/// touches the machine (`PBT_APMRESUMESUSPEND`) would be a second one.
pub fn event_of(broadcast: u32) -> Option<PowerEvent> {
    match broadcast {
        PBT_APMSUSPEND => Some(PowerEvent::WillSleep),
        PBT_APMRESUMEAUTOMATIC => Some(PowerEvent::DidWake),
        PBT_APMRESUMESUSPEND => None,
        _ => None,
    }
}

/// The sender a callback writes to; its address is the callback's context.
type Inbox<T> = mpsc::UnboundedSender<T>;

/// A registration with the system, undone when it is dropped. The context
/// (a boxed sender) is freed only after the unregistration, which waits
/// for callbacks in progress.
pub struct Registration {
    handle: HANDLE,
    context: *mut c_void,
    undo: unsafe fn(HANDLE),
    free: unsafe fn(*mut c_void),
}

// SAFETY: the handle and context are only used to unregister and free,
// which the system allows from any thread.
unsafe impl Send for Registration {}

impl Drop for Registration {
    fn drop(&mut self) {
        // SAFETY: the handle came from the matching registration, and the
        // context is freed once, after the system stopped calling back.
        unsafe {
            (self.undo)(self.handle);
            (self.free)(self.context);
        }
    }
}

impl Registration {
    /// The context the system passes to the callback (for tests, which
    /// call the callback as the system does).
    pub fn context(&self) -> *mut c_void {
        self.context
    }
}

unsafe fn free_inbox<T>(context: *mut c_void) {
    // SAFETY: `context` is the `Box<Inbox<T>>` leaked at registration.
    drop(unsafe { Box::from_raw(context.cast::<Inbox<T>>()) });
}

/// The callback of `PowerRegisterSuspendResumeNotification`.
pub unsafe extern "system" fn on_power(context: *const c_void, kind: u32, _setting: *const c_void) -> u32 {
    // SAFETY: the context is the live `Inbox<u32>` of the registration.
    let inbox = unsafe { &*context.cast::<Inbox<u32>>() };
    let _ = inbox.send(kind);
    0
}

/// Asks the system for suspend and resume notifications, sent to `inbox`.
pub fn register_power(inbox: Inbox<u32>) -> std::io::Result<Registration> {
    let context = Box::into_raw(Box::new(inbox)).cast::<c_void>();
    let mut params = DEVICE_NOTIFY_SUBSCRIBE_PARAMETERS {
        Callback: Some(on_power),
        Context: context,
    };
    let mut handle: *mut c_void = std::ptr::null_mut();
    // SAFETY: `params` lives through the call (the system copies it);
    // `handle` receives the registration.
    let code = unsafe {
        PowerRegisterSuspendResumeNotification(
            DEVICE_NOTIFY_CALLBACK,
            (&mut params as *mut DEVICE_NOTIFY_SUBSCRIBE_PARAMETERS).cast(),
            &mut handle,
        )
    };
    if code != 0 {
        // SAFETY: never handed to the system.
        unsafe { free_inbox::<u32>(context) };
        return Err(std::io::Error::from_raw_os_error(code as i32));
    }
    unsafe fn undo(handle: HANDLE) {
        // SAFETY: a handle from PowerRegisterSuspendResumeNotification.
        unsafe { PowerUnregisterSuspendResumeNotification(handle as isize) };
    }
    Ok(Registration {
        handle,
        context,
        undo,
        free: free_inbox::<u32>,
    })
}

/// The callback of `NotifyIpInterfaceChange`.
pub unsafe extern "system" fn on_ip_change(
    context: *const c_void,
    _row: *const MIB_IPINTERFACE_ROW,
    _kind: MIB_NOTIFICATION_TYPE,
) {
    // SAFETY: the context is the live `Inbox<()>` of the registration.
    let inbox = unsafe { &*context.cast::<Inbox<()>>() };
    let _ = inbox.send(());
}

/// Asks the system for IP interface changes (IPv4 and IPv6), sent to `inbox`.
pub fn register_ip_changes(inbox: Inbox<()>) -> std::io::Result<Registration> {
    let context = Box::into_raw(Box::new(inbox)).cast::<c_void>();
    let mut handle: HANDLE = std::ptr::null_mut();
    // SAFETY: the context outlives the registration (freed after the
    // cancel); `handle` receives it. No initial notification.
    let code = unsafe { NotifyIpInterfaceChange(AF_UNSPEC, Some(on_ip_change), context, false, &mut handle) };
    if code != 0 {
        // SAFETY: never handed to the system.
        unsafe { free_inbox::<()>(context) };
        return Err(std::io::Error::from_raw_os_error(code as i32));
    }
    unsafe fn undo(handle: HANDLE) {
        // SAFETY: a handle from NotifyIpInterfaceChange.
        unsafe { CancelMibChangeNotify2(handle) };
    }
    Ok(Registration {
        handle,
        context,
        undo,
        free: free_inbox::<()>,
    })
}

async fn suspend_resume(tx: mpsc::Sender<PowerEvent>, stop: CancellationToken) {
    let (inbox, broadcasts) = mpsc::unbounded_channel();
    let _registration = match register_power(inbox) {
        Ok(r) => r,
        Err(e) => {
            tracing::info!("no suspend/resume notifications from Windows ({e}); the clock detector still works");
            return;
        }
    };
    tracing::info!("listening for Windows' suspend and resume notifications");
    loop_power(broadcasts, tx, stop).await;
}

/// Power broadcasts to events, until `stop`.
async fn loop_power(
    mut broadcasts: mpsc::UnboundedReceiver<u32>,
    tx: mpsc::Sender<PowerEvent>,
    stop: CancellationToken,
) {
    while let Some(Some(broadcast)) = until_stopped(&stop, broadcasts.recv()).await {
        let Some(event) = event_of(broadcast) else { continue };
        tracing::info!("Windows power: {event:?}");
        if tx.send(event).await.is_err() {
            return;
        }
    }
}

async fn ip_interface(tx: mpsc::Sender<PowerEvent>, stop: CancellationToken) {
    let (inbox, changes) = mpsc::unbounded_channel();
    let _registration = match register_ip_changes(inbox) {
        Ok(r) => r,
        Err(e) => {
            tracing::info!("no IP interface change notifications from Windows ({e})");
            return;
        }
    };
    tracing::info!("watching network changes through the IP interface notification");
    loop_ip(changes, tx, stop).await;
}

/// Interface changes to one [`PowerEvent::NetworkChanged`] per burst.
async fn loop_ip(mut changes: mpsc::UnboundedReceiver<()>, tx: mpsc::Sender<PowerEvent>, stop: CancellationToken) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suspend_is_a_sleep_and_only_the_automatic_resume_a_wake() {
        assert_eq!(event_of(PBT_APMSUSPEND), Some(PowerEvent::WillSleep));
        assert_eq!(event_of(PBT_APMRESUMEAUTOMATIC), Some(PowerEvent::DidWake));
        assert_eq!(event_of(PBT_APMRESUMESUSPEND), None);
        // PBT_POWERSETTINGCHANGE and battery broadcasts are not events.
        assert_eq!(event_of(0x8013), None);
        assert_eq!(event_of(0x000A), None);
    }

    /// Both registrations succeed with the real system calls (under Wine
    /// in `scripts/windows.sh test`), and a notification delivered to the
    /// registered callback and context, as the system delivers it, comes
    /// out of the watcher as the event the healer takes.
    #[tokio::test]
    async fn the_real_registrations_succeed_and_feed_the_watchers() {
        let (inbox, mut got) = mpsc::unbounded_channel();
        let power = register_power(inbox).expect("PowerRegisterSuspendResumeNotification");
        let (inbox, mut changed) = mpsc::unbounded_channel();
        let ip = register_ip_changes(inbox).expect("NotifyIpInterfaceChange");
        // SAFETY: the contexts of the live registrations, as the system passes them.
        unsafe {
            on_power(power.context(), PBT_APMSUSPEND, std::ptr::null());
            on_ip_change(ip.context(), std::ptr::null(), 0);
        }
        assert_eq!(got.recv().await, Some(PBT_APMSUSPEND));
        assert_eq!(changed.recv().await, Some(()));
        drop((power, ip));
        // Unregistered: the inboxes are freed, so the channels close.
        assert_eq!(got.recv().await, None);
        assert_eq!(changed.recv().await, None);
    }

    /// The watchers' loops, on paused time, fed as the callbacks feed them:
    /// a sleep, a wake (the second resume is not another), and a burst of
    /// interface changes as one network change.
    #[tokio::test(start_paused = true)]
    async fn the_watchers_turn_notifications_into_events() {
        let stop = CancellationToken::new();
        let (tx, mut rx) = mpsc::channel(8);
        let (power, broadcasts) = mpsc::unbounded_channel();
        let (ip, changes) = mpsc::unbounded_channel();
        tokio::spawn(loop_power(broadcasts, tx.clone(), stop.clone()));
        tokio::spawn(loop_ip(changes, tx, stop.clone()));
        for b in [PBT_APMSUSPEND, PBT_APMRESUMEAUTOMATIC, PBT_APMRESUMESUSPEND] {
            power.send(b).unwrap();
        }
        for _ in 0..5 {
            ip.send(()).unwrap();
        }
        let mut seen = Vec::new();
        for _ in 0..3 {
            seen.push(rx.recv().await.unwrap());
        }
        assert_eq!(
            seen,
            [PowerEvent::WillSleep, PowerEvent::DidWake, PowerEvent::NetworkChanged]
        );
        let more = tokio::time::timeout(Duration::from_secs(60), rx.recv()).await;
        assert!(more.is_err(), "one event per burst: {more:?}");
        stop.cancel();
    }
}
