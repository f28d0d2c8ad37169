//! The X display as a window manager and a paste see it: top-level windows
//! by title, whether one is shown, the close request a title bar's close
//! button sends (`WM_DELETE_WINDOW`), and the clipboard's text. Xvfb runs no
//! window manager, so the test plays that part.

use anyhow::Context as _;
use x11rb::connection::Connection as _;
use x11rb::protocol::xproto::{
    AtomEnum, ClientMessageEvent, ConnectionExt as _, CreateWindowAux, EventMask, MapState, Window, WindowClass,
};
use x11rb::protocol::Event;
use x11rb::rust_connection::RustConnection;

use crate::support::{eventually, PATIENCE};

pub struct Display {
    conn: RustConnection,
    root: Window,
    utf8_string: u32,
    net_wm_name: u32,
}

impl Display {
    pub fn open() -> anyhow::Result<Display> {
        let (conn, screen) = x11rb::connect(None).context("cannot open the X display")?;
        let root = conn.setup().roots[screen].root;
        let atom = |name: &str| anyhow::Ok(conn.intern_atom(false, name.as_bytes())?.reply()?.atom);
        let (utf8_string, net_wm_name) = (atom("UTF8_STRING")?, atom("_NET_WM_NAME")?);
        Ok(Display {
            conn,
            root,
            utf8_string,
            net_wm_name,
        })
    }

    fn atom(&self, name: &str) -> anyhow::Result<u32> {
        Ok(self.conn.intern_atom(false, name.as_bytes())?.reply()?.atom)
    }

    /// `_NET_WM_NAME` (UTF-8, what GTK sets), else `WM_NAME`.
    fn title(&self, window: Window) -> anyhow::Result<Option<String>> {
        for (name, kind) in [
            (self.net_wm_name, self.utf8_string),
            (AtomEnum::WM_NAME.into(), AtomEnum::STRING.into()),
        ] {
            let value = self
                .conn
                .get_property(false, window, name, kind, 0, 1024)?
                .reply()?
                .value;
            if !value.is_empty() {
                return Ok(Some(String::from_utf8_lossy(&value).into_owned()));
            }
        }
        Ok(None)
    }

    /// The window titled exactly `title`, anywhere in the tree. Windows come
    /// and go while the tree is walked (GTK makes and drops helpers): one
    /// gone by the time it is asked about (BadWindow) is skipped.
    pub fn find(&self, title: &str) -> anyhow::Result<Option<Window>> {
        let mut stack = vec![self.root];
        while let Some(window) = stack.pop() {
            let Ok(name) = self.title(window) else { continue };
            if name.as_deref() == Some(title) {
                return Ok(Some(window));
            }
            if let Ok(tree) = self.conn.query_tree(window)?.reply() {
                stack.extend(tree.children);
            }
        }
        Ok(None)
    }

    /// Whether `title` names a window that is on the screen.
    pub fn shown(&self, title: &str) -> anyhow::Result<bool> {
        match self.find(title)? {
            // Gone between the two questions: not shown.
            Some(window) => Ok(self
                .conn
                .get_window_attributes(window)?
                .reply()
                .is_ok_and(|a| a.map_state == MapState::VIEWABLE)),
            None => Ok(false),
        }
    }

    /// Asks the window titled `title` to close, as a close button does.
    pub fn close(&self, title: &str) -> anyhow::Result<()> {
        let window = self
            .find(title)?
            .with_context(|| format!("no window titled {title:?}"))?;
        let protocols = self.atom("WM_PROTOCOLS")?;
        let delete = self.atom("WM_DELETE_WINDOW")?;
        let event = ClientMessageEvent::new(32, window, protocols, [delete, x11rb::CURRENT_TIME, 0, 0, 0]);
        self.conn.send_event(false, window, EventMask::NO_EVENT, event)?;
        self.conn.flush()?;
        Ok(())
    }

    /// Waits (PATIENCE) for the window titled `title` to be shown (or not).
    pub async fn wait_shown(&self, title: &str, shown: bool) -> anyhow::Result<()> {
        let state = if shown { "shown" } else { "hidden" };
        eventually(&format!("the window {title:?} {state}"), PATIENCE, || async {
            Ok((self.shown(title)? == shown).then_some(()))
        })
        .await
    }

    /// The text on the CLIPBOARD, asked of its owner as a paste would ask.
    pub async fn clipboard_text(&self) -> anyhow::Result<Option<String>> {
        let clipboard = self.atom("CLIPBOARD")?;
        let target = self.atom("MCPOOL_TEST_PASTE")?;
        let window = self.conn.generate_id()?;
        self.conn.create_window(
            x11rb::COPY_DEPTH_FROM_PARENT,
            window,
            self.root,
            0,
            0,
            1,
            1,
            0,
            WindowClass::INPUT_OUTPUT,
            x11rb::COPY_FROM_PARENT,
            &CreateWindowAux::new(),
        )?;
        self.conn
            .convert_selection(window, clipboard, self.utf8_string, target, x11rb::CURRENT_TIME)?;
        self.conn.flush()?;
        let mut text = None;
        for _ in 0..50 {
            match self.conn.poll_for_event()? {
                Some(Event::SelectionNotify(e)) if e.requestor == window => {
                    if e.property != u32::from(AtomEnum::NONE) {
                        let reply = self
                            .conn
                            .get_property(true, window, target, AtomEnum::ANY, 0, 1 << 16)?
                            .reply()?;
                        text = Some(String::from_utf8_lossy(&reply.value).into_owned());
                    }
                    break;
                }
                Some(_) => {}
                None => tokio::time::sleep(std::time::Duration::from_millis(100)).await,
            }
        }
        self.conn.destroy_window(window)?;
        self.conn.flush()?;
        Ok(text)
    }
}
