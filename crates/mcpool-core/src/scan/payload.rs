//! Encoded payloads: runs of base64 or hex long enough to carry a message,
//! decoded. What decodes to binary (a hash, an id, an image) is nobody's
//! text and passes; what decodes to readable text is hidden from a person
//! reading the definition and is judged by the same phrases as the rest.

use base64::Engine as _;

/// A run decoded to readable text.
#[derive(Debug, PartialEq)]
pub struct Decoded {
    /// `base64` or `hex`.
    pub encoding: &'static str,
    pub text: String,
}

/// The shortest run looked at: 16 bytes of payload.
const MIN_BASE64: usize = 24;
const MIN_HEX: usize = 32;

fn is_base64(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_')
}

/// Each run of `text` that decodes to readable text.
pub fn decode_runs(text: &str) -> Vec<Decoded> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !is_base64(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && is_base64(bytes[i]) {
            i += 1;
        }
        let mut end = i;
        while i < bytes.len() && bytes[i] == b'=' && i - end < 2 {
            i += 1;
        }
        let padded = i;
        let run = &text[start..end];
        if run.len() >= MIN_HEX && run.bytes().all(|b| b.is_ascii_hexdigit()) {
            if let Ok(raw) = hex::decode(if run.len().is_multiple_of(2) { run } else { &run[..run.len() - 1] }) {
                if let Some(text) = readable(&raw) {
                    found.push(Decoded { encoding: "hex", text });
                }
            }
            continue;
        }
        if run.len() < MIN_BASE64 || !looks_encoded(run) {
            continue;
        }
        end = padded;
        if let Some(text) = decode_base64(&text[start..end]).and_then(|raw| readable(&raw)) {
            found.push(Decoded {
                encoding: "base64",
                text,
            });
        }
    }
    found
}

/// Whether a run of base64's alphabet is likely encoded rather than a word,
/// a path or an identifier: it mixes cases and has no long lowercase word.
fn looks_encoded(run: &str) -> bool {
    let upper = run.bytes().filter(u8::is_ascii_uppercase).count();
    let lower = run.bytes().filter(u8::is_ascii_lowercase).count();
    let digits = run.bytes().filter(u8::is_ascii_digit).count();
    upper >= 2 && lower >= 2 && (digits >= 1 || upper * 5 >= run.len())
}

fn decode_base64(run: &str) -> Option<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let trimmed = run.trim_end_matches('=');
    // A run may start mid-word (`key=QmFz…`): try it from each of its first
    // four characters.
    for skip in 0..4 {
        let Some(part) = trimmed.get(skip..) else { break };
        let part = if part.len() % 4 == 1 {
            &part[..part.len() - 1]
        } else {
            part
        };
        for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            if let Ok(raw) = engine.decode(part) {
                return Some(raw);
            }
        }
    }
    None
}

/// `raw` as text when nearly all of it is printable words (a message),
/// else `None` (binary: a hash, an image).
fn readable(raw: &[u8]) -> Option<String> {
    if raw.len() < 12 {
        return None;
    }
    let text = std::str::from_utf8(raw).ok()?;
    let total = text.chars().count();
    let clean = text.chars().filter(|c| !c.is_control() || c.is_whitespace()).count();
    let letters = text.chars().filter(|c| c.is_alphabetic()).count();
    let words = text.contains(' ') || text.contains('/') || text.contains('.');
    (clean * 100 >= total * 95 && letters * 3 >= total && words).then(|| text.to_string())
}
