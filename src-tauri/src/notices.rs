//! Desktop notifications (notify-rust, the freedesktop Notifications
//! service on Linux). Activating one (a click on it, or its button) acts
//! on the first server it names: "Sign in" opens the browser at that
//! server's sign-in page, "Open dashboard" the dashboard at its card.

use std::sync::atomic::{AtomicUsize, Ordering};

use mcpool_tray::{NoticeAction, Notification};
use tauri::AppHandle;

/// Notifications still waiting for their answer, each on a thread of its
/// own until the desktop closes it. The notifier's rate limits keep them
/// few; past this many (a desktop that never closes any), new ones are
/// shown without waiting, so threads cannot pile up.
const MAX_WAITING: usize = 8;
static WAITING: AtomicUsize = AtomicUsize::new(0);

pub fn show(app: &AppHandle, notes: Vec<Notification>) {
    for note in notes {
        let app = app.clone();
        let spawned = std::thread::Builder::new()
            .name("notification".into())
            .spawn(move || show_one(&app, note));
        if let Err(e) = spawned {
            tracing::warn!("cannot show a notification: {e}");
        }
    }
}

fn show_one(app: &AppHandle, note: Notification) {
    let shown = notify_rust::Notification::new()
        .appname("mcpool")
        .summary(&note.title)
        .body(&note.body)
        .action("default", note.action.label())
        .show();
    let handle = match shown {
        Ok(handle) => handle,
        Err(e) => {
            tracing::warn!("cannot show a notification ({e}): {}: {}", note.title, note.body);
            return;
        }
    };
    if WAITING.fetch_add(1, Ordering::SeqCst) >= MAX_WAITING {
        WAITING.fetch_sub(1, Ordering::SeqCst);
        tracing::debug!("{MAX_WAITING} notifications still open: not waiting for this one's activation");
        return;
    }
    handle.wait_for_action(|action| {
        if action == "default" {
            match (note.action, note.servers.first()) {
                (NoticeAction::SignIn, Some(server)) => {
                    tracing::info!("notification activated: signing in to {server}");
                    crate::sign_in(app, server.clone());
                }
                _ => {
                    tracing::info!("notification activated: opening the dashboard");
                    crate::open_dashboard(app, note.servers.first().cloned());
                }
            }
        }
    });
    WAITING.fetch_sub(1, Ordering::SeqCst);
}
