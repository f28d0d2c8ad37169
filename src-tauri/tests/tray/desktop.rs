//! The desktop's side of the session bus, played by the test: a
//! StatusNotifierWatcher that records the items registered with it, a
//! notification server that records what it is asked to show, and a
//! dbusmenu client that reads and clicks a tray item's menu as a panel does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use anyhow::bail;
use zbus::message::Header;
use zbus::object_server::SignalEmitter;
use zbus::zvariant::{OwnedObjectPath, OwnedValue, Value as Variant};
use zbus::{interface, Connection};

use crate::support::{eventually, PATIENCE};

/// Items registered with the watcher: (bus name of the app, object path).
#[derive(Default, Clone)]
pub struct Watcher {
    pub items: Arc<Mutex<Vec<(String, String)>>>,
}

#[interface(name = "org.kde.StatusNotifierWatcher")]
impl Watcher {
    async fn register_status_notifier_item(
        &self,
        service: String,
        #[zbus(header)] header: Header<'_>,
        #[zbus(signal_emitter)] emitter: SignalEmitter<'_>,
    ) {
        let sender = header.sender().map(|s| s.to_string()).unwrap_or_default();
        // Ayatana passes its object path; other implementations a bus name.
        let (name, path) = if service.starts_with('/') {
            (sender, service)
        } else {
            (service, "/StatusNotifierItem".to_string())
        };
        let full = format!("{name}{path}");
        if let Ok(mut items) = self.items.lock() {
            items.push((name, path));
        }
        let _ = Self::status_notifier_item_registered(&emitter, &full).await;
    }

    fn register_status_notifier_host(&self, _service: String) {}

    #[zbus(property)]
    fn registered_status_notifier_items(&self) -> Vec<String> {
        self.items
            .lock()
            .map(|items| items.iter().map(|(n, p)| format!("{n}{p}")).collect())
            .unwrap_or_default()
    }

    #[zbus(property)]
    fn is_status_notifier_host_registered(&self) -> bool {
        true
    }

    #[zbus(property)]
    fn protocol_version(&self) -> i32 {
        0
    }

    #[zbus(signal)]
    async fn status_notifier_item_registered(emitter: &SignalEmitter<'_>, service: &str) -> zbus::Result<()>;

    #[zbus(signal)]
    async fn status_notifier_host_registered(emitter: &SignalEmitter<'_>) -> zbus::Result<()>;
}

#[derive(Debug, Clone)]
pub struct Note {
    pub id: u32,
    pub summary: String,
    pub body: String,
    /// (key, label) pairs, as the spec flattens them.
    pub actions: Vec<(String, String)>,
}

#[derive(Default, Clone)]
pub struct Notifications {
    pub notes: Arc<Mutex<Vec<Note>>>,
}

#[interface(name = "org.freedesktop.Notifications")]
impl Notifications {
    #[allow(clippy::too_many_arguments)]
    fn notify(
        &self,
        _app_name: String,
        _replaces_id: u32,
        _app_icon: String,
        summary: String,
        body: String,
        actions: Vec<String>,
        _hints: HashMap<String, OwnedValue>,
        _expire_timeout: i32,
    ) -> u32 {
        let mut notes = self.notes.lock().unwrap_or_else(|p| p.into_inner());
        let id = notes.len() as u32 + 1;
        let actions = actions
            .chunks(2)
            .map(|pair| (pair[0].clone(), pair.get(1).cloned().unwrap_or_default()))
            .collect();
        notes.push(Note {
            id,
            summary,
            body,
            actions,
        });
        id
    }

    fn close_notification(&self, _id: u32) {}

    fn get_capabilities(&self) -> Vec<String> {
        vec!["body".into(), "actions".into()]
    }

    /// What a notification server sends when the user activates a notification.
    #[zbus(signal)]
    pub async fn action_invoked(emitter: &SignalEmitter<'_>, id: u32, action_key: &str) -> zbus::Result<()>;

    fn get_server_information(&self) -> (String, String, String, String) {
        ("fake".into(), "mcpool-tests".into(), "1".into(), "1.2".into())
    }
}

impl Notifications {
    pub fn recorded(&self) -> Vec<Note> {
        self.notes.lock().map(|n| n.clone()).unwrap_or_default()
    }
}

/// One dbusmenu item: its id, label, whether enabled, and children.
#[derive(Debug, Clone)]
pub struct MenuNode {
    pub id: i32,
    pub label: String,
    pub enabled: bool,
    pub separator: bool,
    /// A check item's mark: `Some(true)` checked, `None` for a plain item.
    pub checked: Option<bool>,
    pub children: Vec<MenuNode>,
}

type Layout = (i32, HashMap<String, OwnedValue>, Vec<OwnedValue>);

fn node(layout: Layout) -> anyhow::Result<MenuNode> {
    let (id, props, children) = layout;
    let label = match props.get("label") {
        Some(v) => String::try_from(v.try_clone()?)?,
        None => String::new(),
    };
    let enabled = match props.get("enabled") {
        Some(v) => bool::try_from(v.try_clone()?)?,
        None => true,
    };
    let separator = match props.get("type") {
        Some(v) => String::try_from(v.try_clone()?)? == "separator",
        None => false,
    };
    let checked = match props.get("toggle-state") {
        Some(v) => match i32::try_from(v.try_clone()?)? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        },
        None => None,
    };
    let children = children
        .into_iter()
        .map(|c| node(Layout::try_from(c)?))
        .collect::<anyhow::Result<_>>()?;
    // GTK mnemonics: "_" marks an access key, "__" is a literal underscore.
    let label = label.replace("__", "\u{0}").replace('_', "").replace('\u{0}', "_");
    Ok(MenuNode {
        id,
        label,
        enabled,
        separator,
        checked,
        children,
    })
}

impl MenuNode {
    /// One line per item, submenus indented, as mcpool-tray's `Menu` prints.
    pub fn render(&self, depth: usize, out: &mut String) {
        for c in &self.children {
            let indent = "    ".repeat(depth);
            if c.separator {
                out.push_str(&format!("{indent}---\n"));
                continue;
            }
            let grey = if c.enabled { "" } else { " (disabled)" };
            let more = if c.children.is_empty() { "" } else { " >" };
            out.push_str(&format!("{indent}{}{grey}{more}\n", c.label));
            c.render(depth + 1, out);
        }
    }

    pub fn child(&self, prefix: &str) -> Option<&MenuNode> {
        self.children.iter().find(|c| c.label.starts_with(prefix))
    }
}

pub struct TrayMenu<'a> {
    pub conn: &'a Connection,
    pub dest: String,
    pub path: OwnedObjectPath,
}

impl TrayMenu<'_> {
    async fn proxy(&self) -> zbus::Result<zbus::Proxy<'_>> {
        zbus::Proxy::new(
            self.conn,
            self.dest.as_str(),
            self.path.as_str(),
            "com.canonical.dbusmenu",
        )
        .await
    }

    pub async fn layout(&self) -> anyhow::Result<MenuNode> {
        let (_revision, root): (u32, Layout) = self
            .proxy()
            .await?
            .call("GetLayout", &(0i32, -1i32, Vec::<String>::new()))
            .await?;
        node(root)
    }

    pub async fn click(&self, id: i32) -> anyhow::Result<()> {
        let data = Variant::from(0i32);
        self.proxy()
            .await?
            .call::<_, _, ()>("Event", &(id, "clicked", data, 0u32))
            .await?;
        Ok(())
    }

    /// The menu once `ready` holds for it (the app rebuilds it on status changes).
    pub async fn wait_for(&self, what: &str, ready: impl Fn(&MenuNode) -> bool) -> anyhow::Result<MenuNode> {
        eventually(&format!("the tray menu showing {what}"), PATIENCE, || async {
            let menu = self.layout().await?;
            if ready(&menu) {
                return Ok(Some(menu));
            }
            let mut shown = String::new();
            menu.render(0, &mut shown);
            bail!("\n{shown}")
        })
        .await
    }
}
