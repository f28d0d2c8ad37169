//! macOS: the tray icon is a menu-bar item, notices go to Notification
//! Center and the dashboard window is WebKit's, all part of the system, so
//! there is nothing to look for (whether the person allowed mcpool-app's
//! notices is theirs to see in System Settings, and no API tells another
//! program).

use super::DesktopCheck;

pub async fn checks() -> Vec<DesktopCheck> {
    vec![
        DesktopCheck::found("tray", "the menu bar is built into macOS"),
        DesktopCheck::found(
            "notifications",
            "Notification Center is built into macOS (System Settings > Notifications says whether mcpool-app may show notices)",
        ),
    ]
}
