//! Linux (and the other free desktops): `xdg-open`, which hands the URL to
//! the desktop's default browser. Without a display it would fall back to a
//! text browser in the terminal, so no display is said as an error instead.

/// The desktop's opener.
pub const OPENER: &str = "xdg-open";

/// Whether the opener's exit status says if it showed the page.
pub const STATUS_SAYS_WHETHER_SHOWN: bool = true;

/// Why no desktop can show a page here, if none can.
pub fn no_desktop() -> Option<&'static str> {
    let named = |v: &str| std::env::var_os(v).is_some_and(|d| !d.is_empty());
    (!named("DISPLAY") && !named("WAYLAND_DISPLAY"))
        .then_some("no display (neither DISPLAY nor WAYLAND_DISPLAY is set)")
}
