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

/// Each run of `text` that decodes to readable text: base64, hex (bare or
/// `0x…`), and byte escapes (`\x41`, `%41`, `0x41 0x42`); what a run
/// decodes to is looked into once more (base64 of base64).
pub fn decode_runs(text: &str) -> Vec<Decoded> {
    if !may_hold_payload(text.as_bytes()) {
        return Vec::new();
    }
    let mut found = decode_once(text);
    let nested: Vec<Decoded> = found
        .iter()
        .flat_map(|d| decode_once(&d.text))
        .map(|d| Decoded {
            encoding: "base64 or hex, twice",
            text: d.text,
        })
        .collect();
    found.extend(nested);
    found
}

/// Whether `text` has a run of base64's alphabet long enough for a
/// payload, or a byte escape (`\x41`, `%41`, `0x41`), so that prose (whose words
/// are short) skips the decoding. Read 64 bytes at a time, each block as
/// a mask of its base64 bytes, without a branch per byte.
fn may_hold_payload(text: &[u8]) -> bool {
    // The length of the run of base64 bytes that ends the blocks read.
    let mut run = 0u32;
    let next = text.get(1..).unwrap_or_default();
    let pairs = next.chunks(64).chain(std::iter::repeat(&[][..]));
    for (block, after) in text.chunks(64).zip(pairs) {
        let (mut base64, mut escape) = (0u64, false);
        for (j, &b) in block.iter().enumerate() {
            base64 |= u64::from(BASE64[usize::from(b)]) << j;
            escape |= (b == b'\\') | (b == b'%');
        }
        // `0x41 0x42 …`: short runs, each with its prefix.
        for (&b, &a) in block.iter().zip(after) {
            escape |= (b == b'0') & (a == b'x');
        }
        if escape || run + base64.trailing_ones() >= MIN_BASE64 as u32 || has_run_of_24(base64) {
            return true;
        }
        run = if block.len() == 64 && base64 == u64::MAX {
            run + 64
        } else {
            (base64 << (64 - block.len())).leading_ones()
        };
    }
    false
}

const _: () = assert!(MIN_BASE64 == 24);

/// Whether `bits` has 24 set bits in a row: [`MIN_BASE64`].
fn has_run_of_24(bits: u64) -> bool {
    // Each step: bit j set when the bits j.. are set, for 2, 4, 8, 16 in a row.
    let mut x = bits & (bits >> 1);
    x &= x >> 2;
    x &= x >> 4;
    x &= x >> 8;
    x & (x >> 8) != 0
}

/// [`is_base64`] of every byte.
const BASE64: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'-' | b'_');
        b += 1;
    }
    table
};

fn decode_once(text: &str) -> Vec<Decoded> {
    let mut found = escapes(text);
    let bytes = text.as_bytes();
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
        let end = i;
        while i < bytes.len() && bytes[i] == b'=' && i - end < 2 {
            i += 1;
        }
        let padded = i;
        let run = &text[start..end];
        let hex_digits = run.strip_prefix("0x").or_else(|| run.strip_prefix("0X")).unwrap_or(run);
        if hex_digits.len() >= MIN_HEX && hex_digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            let even = &hex_digits[..hex_digits.len() - hex_digits.len() % 2];
            if let Some(text) = hex::decode(even).ok().and_then(|raw| readable(&raw)) {
                found.push(Decoded { encoding: "hex", text });
            }
            continue;
        }
        if run.len() < MIN_BASE64 || !looks_encoded(run) {
            continue;
        }
        if let Some(text) = decode_base64(&text[start..padded]).and_then(|raw| readable(&raw)) {
            found.push(Decoded {
                encoding: "base64",
                text,
            });
        }
    }
    found
}

/// The fewest escaped bytes in a row that count as a payload.
const MIN_ESCAPES: usize = 8;

/// Runs of escaped bytes: `\x41\x42`, `%41%42` (among plain characters,
/// as URLs have them), `0x41 0x42` or `0x41,0x42`.
fn escapes(text: &str) -> Vec<Decoded> {
    let mut found = Vec::new();
    let bytes = text.as_bytes();
    if memchr::memchr2(b'\\', b'%', bytes).is_none() && memchr::memmem::find(bytes, b"0x").is_none() {
        return found;
    }
    for (encoding, prefix, separators) in [
        ("\\x escapes", "\\x", ""),
        ("percent escapes", "%", ""),
        ("0x bytes", "0x", " ,"),
    ] {
        let mut rest = text;
        while let Some(at) = rest.find(prefix) {
            let (raw, used, escaped) = escaped_run(&rest[at..], prefix, separators, encoding == "percent escapes");
            rest = &rest[at + used.max(prefix.len())..];
            if escaped >= MIN_ESCAPES {
                if let Some(text) = readable(&raw) {
                    found.push(Decoded { encoding, text });
                }
            }
        }
    }
    found
}

/// The bytes of the escapes at the start of `text` (plain characters
/// between them kept where `plain` allows), the bytes of `text` used, and
/// how many were escapes.
fn escaped_run(text: &str, prefix: &str, separators: &str, plain: bool) -> (Vec<u8>, usize, usize) {
    let bytes = text.as_bytes();
    let (mut raw, mut i, mut escaped) = (Vec::new(), 0, 0);
    while i < bytes.len() {
        if text[i..].starts_with(prefix) {
            let digits = text.get(i + prefix.len()..i + prefix.len() + 2);
            if let Some(byte) = digits.and_then(|d| u8::from_str_radix(d, 16).ok()) {
                raw.push(byte);
                escaped += 1;
                i += prefix.len() + 2;
                continue;
            }
            break;
        }
        let b = bytes[i];
        if separators.as_bytes().contains(&b) {
            i += 1;
        } else if plain && (b.is_ascii_alphanumeric() || b"-._~/:+".contains(&b)) {
            raw.push(b);
            i += 1;
        } else {
            break;
        }
    }
    (raw, i, escaped)
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

/// `raw` as text when nearly all of it is printable (a message in any
/// script), else `None` (binary: a hash, an image).
fn readable(raw: &[u8]) -> Option<String> {
    if raw.len() < 12 {
        return None;
    }
    let text = std::str::from_utf8(raw).ok()?;
    let total = text.chars().count();
    let clean = text.chars().filter(|c| !c.is_control() || c.is_whitespace()).count();
    let letters = text.chars().filter(|c| c.is_alphabetic()).count();
    (clean * 100 >= total * 95 && letters >= 4).then(|| text.to_string())
}
