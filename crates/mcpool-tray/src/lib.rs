//! What the tray shows, as plain data built by pure functions of the pool's
//! snapshot: the menu, the icon, the tooltip, and when to notify. The Tauri
//! shell (src-tauri) only turns these values into native widgets and feeds
//! user clicks back as [`Action`]s; everything here tests without a display.

pub mod icon;
pub mod menu;
pub mod notify;

pub use icon::{icon, tooltip, TrayIcon};
pub use menu::{menu, Action, Item, Menu};
pub use notify::{NoticeAction, Notification, Notifier};

#[cfg(test)]
pub(crate) mod fixtures;
