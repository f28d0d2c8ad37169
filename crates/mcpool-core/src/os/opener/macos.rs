//! macOS: `open`, which hands the URL to the default browser through
//! Launch Services; a logged-in Mac always has a desktop to show it on.

/// The desktop's opener.
pub const OPENER: &str = "open";

/// Whether the opener's exit status says if it showed the page.
pub const STATUS_SAYS_WHETHER_SHOWN: bool = true;

/// Why no desktop can show a page here: never on macOS (`open` itself says
/// so when the session has no window server).
pub fn no_desktop() -> Option<&'static str> {
    None
}
