//! Turns `mcpool-tray`'s plain values into Tauri's native menu and icons.

use mcpool_tray::{Action, Item, Menu, TrayIcon};
use tauri::image::Image;
use tauri::menu::{CheckMenuItem, IsMenuItem, Menu as NativeMenu, MenuItem, PredefinedMenuItem, Submenu};
use tauri::{AppHandle, Wry};
use tauri_plugin_autostart::ManagerExt as _;

/// The id of the shell's own "Open at login" item (not in `mcpool-tray`'s
/// model: it is a desktop setting, not pool state).
pub const OPEN_AT_LOGIN: &str = "open-at-login";

pub fn menu(app: &AppHandle, menu: &Menu) -> tauri::Result<NativeMenu<Wry>> {
    let native = NativeMenu::new(app)?;
    for item in &menu.items {
        // "Open at login" goes just above Quit.
        if matches!(
            item,
            Item::Action {
                action: Action::Quit,
                ..
            }
        ) {
            native.append(&open_at_login(app)?)?;
        }
        native.append(item_of(app, item)?.as_ref())?;
    }
    Ok(native)
}

fn open_at_login(app: &AppHandle) -> tauri::Result<CheckMenuItem<Wry>> {
    let checked = app.autolaunch().is_enabled().unwrap_or(false);
    CheckMenuItem::with_id(app, OPEN_AT_LOGIN, "Open at login", true, checked, None::<&str>)
}

fn item_of(app: &AppHandle, item: &Item) -> tauri::Result<Box<dyn IsMenuItem<Wry>>> {
    Ok(match item {
        Item::Label(text) => Box::new(MenuItem::new(app, text, false, None::<&str>)?),
        Item::Action { action, text, enabled } => {
            Box::new(MenuItem::with_id(app, action.id(), text, *enabled, None::<&str>)?)
        }
        Item::Submenu { text, items } => {
            let sub = Submenu::new(app, text, true)?;
            for child in items {
                sub.append(item_of(app, child)?.as_ref())?;
            }
            Box::new(sub)
        }
        Item::Separator => Box::new(PredefinedMenuItem::separator(app)?),
    })
}

pub fn icon(icon: TrayIcon) -> tauri::Result<Image<'static>> {
    let bytes: &'static [u8] = match icon {
        TrayIcon::AllConnected => include_bytes!("../../icons/tray/connected.png"),
        TrayIcon::SomeFailedToolsKept => include_bytes!("../../icons/tray/degraded.png"),
        TrayIcon::NeedsSignIn => include_bytes!("../../icons/tray/needs-sign-in.png"),
        TrayIcon::NothingReachable => include_bytes!("../../icons/tray/unreachable.png"),
    };
    Image::from_bytes(bytes)
}
