//! Windows: Explorer, which opens the URL in the default browser.

/// The desktop's opener.
pub const OPENER: &str = "explorer";

/// Whether the opener's exit status says if it showed the page: Explorer
/// ends with 1 when it did open it.
pub const STATUS_SAYS_WHETHER_SHOWN: bool = false;

/// Why no desktop can show a page here: Windows always has one.
pub fn no_desktop() -> Option<&'static str> {
    None
}
