//! Text a person cannot see: Unicode TAG characters (U+E0000–E007F, which
//! spell ASCII invisibly), variation selectors used as bytes, zero-width
//! characters splitting words, bidirectional controls and private use
//! characters. Each is found, and the text is given back as a model reads
//! it (hidden characters out, smuggled text spelled out) for the other
//! checks.

use std::fmt::Write as _;

/// What a text hides.
#[derive(Debug, Default, PartialEq)]
pub struct Hidden {
    /// ASCII spelled in TAG characters (emoji flag tags excepted).
    pub tags: String,
    /// Bytes spelled in variation selectors after a character that takes none.
    pub selectors: String,
    /// Zero-width characters between two letters or digits.
    pub zero_width: usize,
    /// Bidirectional embeddings, overrides and isolates.
    pub bidi: usize,
    /// Characters of a private use area.
    pub private_use: usize,
    /// The text as a model reads it: hidden characters out, smuggled text
    /// appended.
    pub readable: String,
}

impl Hidden {
    pub fn any(&self) -> bool {
        !self.tags.is_empty()
            || !self.selectors.is_empty()
            || self.zero_width > 0
            || self.bidi > 0
            || self.private_use > 0
    }
}

fn is_tag(c: char) -> bool {
    ('\u{E0000}'..='\u{E007F}').contains(&c)
}

fn is_zero_width(c: char) -> bool {
    matches!(
        c,
        '\u{200B}' | '\u{200C}' | '\u{200D}' | '\u{2060}' | '\u{FEFF}' | '\u{180E}' | '\u{2061}'
            ..='\u{2064}' | '\u{034F}'
    )
}

fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

fn is_private_use(c: char) -> bool {
    matches!(c, '\u{E000}'..='\u{F8FF}' | '\u{F0000}'..='\u{FFFFD}' | '\u{100000}'..='\u{10FFFD}')
}

/// The byte a variation selector stands for when used to smuggle bytes
/// (VS1–16 for 0–15, VS17–256 for 16–255).
fn selector_byte(c: char) -> Option<u8> {
    match c {
        '\u{FE00}'..='\u{FE0F}' => Some((c as u32 - 0xFE00) as u8),
        '\u{E0100}'..='\u{E01EF}' => Some((c as u32 - 0xE0100 + 16) as u8),
        _ => None,
    }
}

/// Characters a variation selector may follow in normal text: emoji and
/// the symbols and CJK ideographs that have standardized variants.
fn takes_selector(c: char) -> bool {
    let c = c as u32;
    c >= 0x2000 && !(0xE0000..=0xE01EF).contains(&c)
}

fn is_emoji_like(c: char) -> bool {
    let c = c as u32;
    (0x1F000..=0x1FAFF).contains(&c) || (0x2600..=0x27BF).contains(&c) || (0x2190..=0x2BFF).contains(&c)
}

/// Finds what `text` hides. Fast for the common case: plain text costs one
/// scan of its characters.
pub fn inspect(text: &str) -> Hidden {
    let mut hidden = Hidden::default();
    if text.is_ascii() {
        return hidden;
    }
    let chars: Vec<char> = text.chars().collect();
    let mut readable = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if is_tag(c) {
            let start = i;
            while i < chars.len() && is_tag(chars[i]) {
                i += 1;
            }
            let run: String = chars[start..i]
                .iter()
                .filter_map(|&t| char::from_u32(t as u32 - 0xE0000))
                .filter(|t| !t.is_control())
                .collect();
            // 🏴 + lowercase letters/digits + CANCEL TAG: a subdivision flag.
            let flag = start > 0
                && chars[start - 1] == '\u{1F3F4}'
                && chars[i - 1] == '\u{E007F}'
                && run.chars().all(|t| t.is_ascii_lowercase() || t.is_ascii_digit());
            if !flag {
                hidden.tags.push_str(&run);
            }
            continue;
        }
        if let Some(byte) = selector_byte(c) {
            let start = i;
            let mut bytes = Vec::new();
            while i < chars.len() {
                match selector_byte(chars[i]) {
                    Some(b) => bytes.push(b),
                    None => break,
                }
                i += 1;
            }
            // One selector after an emoji or a symbol is a presentation
            // choice; a run of them, or one after a letter, spells bytes.
            let normal = bytes.len() == 1 && byte <= 15 && start > 0 && takes_selector(chars[start - 1]);
            if !normal {
                hidden.selectors.push_str(&String::from_utf8_lossy(&bytes));
            }
            continue;
        }
        if is_zero_width(c) {
            let before = i.checked_sub(1).map(|j| chars[j]);
            let after = chars.get(i + 1).copied();
            // A joiner inside an emoji sequence, or a non-joiner in scripts
            // that use it, is part of the text.
            let emoji = c == '\u{200D}' && (before.is_some_and(is_emoji_like) || after.is_some_and(is_emoji_like));
            let joins_script = matches!(c, '\u{200C}' | '\u{200D}') && before.is_some_and(|b| !b.is_ascii());
            let bom = c == '\u{FEFF}' && i == 0;
            let splits = before.is_some_and(char::is_alphanumeric) && after.is_some_and(char::is_alphanumeric);
            if !(emoji || joins_script || bom) && (splits || c == '\u{200B}' || c == '\u{2060}') {
                hidden.zero_width += 1;
            }
            if emoji || joins_script {
                readable.push(c);
            }
            i += 1;
            continue;
        }
        if is_bidi_control(c) {
            hidden.bidi += 1;
            i += 1;
            continue;
        }
        if is_private_use(c) {
            hidden.private_use += 1;
        }
        readable.push(c);
        i += 1;
    }
    for smuggled in [&hidden.tags, &hidden.selectors] {
        if !smuggled.is_empty() {
            readable.push_str(" \n ");
            readable.push_str(smuggled);
        }
    }
    hidden.readable = readable;
    hidden
}

/// `text` with what a person cannot see written out (`U+200B`), cut at
/// `limit` characters: evidence to show.
pub fn shown(text: &str, limit: usize) -> String {
    let mut out = String::new();
    for (n, c) in text.chars().enumerate() {
        if n == limit {
            out.push('…');
            break;
        }
        if matches!(c, '\n' | '\r' | '\t') {
            out.push(' ');
        } else if is_tag(c) || is_zero_width(c) || is_bidi_control(c) || selector_byte(c).is_some() || c.is_control() {
            let _ = write!(out, "<U+{:04X}>", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}
