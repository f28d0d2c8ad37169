//! Turns `mcpool-tray`'s plain values into Tauri's native menu and icons.

use mcpool_tray::{Item, Menu, TrayIcon};
use tauri::image::Image;
use tauri::menu::{IsMenuItem, Menu as NativeMenu, MenuItem, PredefinedMenuItem, Submenu};
use tauri::{AppHandle, Wry};

pub fn menu(app: &AppHandle, menu: &Menu) -> tauri::Result<NativeMenu<Wry>> {
    let native = NativeMenu::new(app)?;
    for item in &menu.items {
        native.append(item_of(app, item)?.as_ref())?;
    }
    Ok(native)
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
