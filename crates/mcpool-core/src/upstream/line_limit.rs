//! Bounds one message from a local server (`maxMessageBytes`): a line over
//! the limit never reaches rmcp whole, and the call it answers gets an error
//! at once instead of waiting forever.
//!
//! [`LineLimit`] sits between the child's stdout and rmcp's line reader.
//! Lines within the limit pass through unchanged. A longer line is dropped as
//! it streams (never buffered) while a [`Scanner`] reads its top-level
//! `"id"`, which may come first or last (Node's SDK writes `{"result":…,
//! "jsonrpc":"2.0","id":1}`). At its newline the adapter hands rmcp a JSON-RPC
//! error response for that id instead. The part of the line already passed
//! on is ended with a byte that is never valid JSON, so rmcp ignores it as
//! unparsable; rmcp's own line limit is set above ours, so it never drops a
//! line silently.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use serde_json::{json, Value};
use tokio::io::{AsyncRead, ReadBuf};

/// How much is read from the child at a time.
const READ_CHUNK: usize = 64 * 1024;
/// Longest `id` value kept; a longer one counts as unreadable.
const MAX_ID_BYTES: usize = 256;
/// Ends the part of an oversized line that rmcp already holds: 0xFF is never
/// valid UTF-8 nor JSON, so rmcp drops that line as unparsable.
const CUT: &[u8] = b"\xff\n";
/// JSON-RPC "internal error".
const INTERNAL_ERROR: i64 = -32603;

/// The room rmcp's own line reader needs above our limit: the cut marker and
/// a `\r` never make a line we passed longer than this.
pub const RMCP_HEADROOM: usize = 1024;

/// An `AsyncRead` over a child's stdout that enforces `limit` bytes per line.
pub struct LineLimit<R> {
    inner: R,
    limit: usize,
    server: String,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    /// Bytes of the current line so far, newline excluded.
    line_len: u64,
    /// Some of the current line has been handed to rmcp.
    passed: bool,
    /// The current line is over the limit: being dropped.
    over: bool,
    scan: Scanner,
    /// Bytes to hand to rmcp before reading on.
    pending: Vec<u8>,
    pending_at: usize,
    /// The connection was ended: every later read fails with this.
    failed: Option<String>,
}

impl<R> LineLimit<R> {
    pub fn new(inner: R, limit: usize, server: &str) -> Self {
        LineLimit {
            inner,
            limit,
            server: server.to_string(),
            buf: vec![0; READ_CHUNK].into_boxed_slice(),
            start: 0,
            end: 0,
            line_len: 0,
            passed: false,
            over: false,
            scan: Scanner::default(),
            pending: Vec::new(),
            pending_at: 0,
            failed: None,
        }
    }

    fn next_line(&mut self) {
        self.line_len = 0;
        self.passed = false;
        self.over = false;
        self.scan = Scanner::default();
    }

    /// The oversized line ended: queue what rmcp gets instead of it.
    fn finish_oversized(&mut self) {
        let size = self.line_len;
        let (server, limit) = (&self.server, self.limit as u64);
        if self.passed {
            self.pending.extend_from_slice(CUT);
        }
        match self.scan.outcome() {
            Outcome::FromServer => {
                tracing::warn!(
                    server = %server,
                    "dropped a request or notification of {} from the server, over its limit of {} (maxMessageBytes)",
                    human(size),
                    human(limit)
                );
            }
            Outcome::Reply(id) => {
                let message = too_big_sentence(server, size, limit);
                tracing::warn!(server = %server, "{message}");
                let reply = json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "error": {
                        "code": INTERNAL_ERROR,
                        "message": message,
                        "data": {"size": size, "limit": limit},
                    },
                });
                self.pending.extend_from_slice(reply.to_string().as_bytes());
                self.pending.push(b'\n');
            }
            Outcome::ReplyWithoutId => {
                // Which call it answers is unknown: end the connection, so
                // every call in flight fails instead of one waiting forever.
                let message = format!(
                    "server '{server}' sent a reply of {}, over its limit of {} (maxMessageBytes in mcpool's config), without an id mcpool could read; the connection was ended",
                    human(size),
                    human(limit)
                );
                tracing::warn!(server = %server, "{message}");
                self.failed = Some(message);
            }
            Outcome::Garbled => {
                tracing::warn!(
                    server = %server,
                    "dropped a line of {} that is not a JSON-RPC message, over the limit of {} (maxMessageBytes)",
                    human(size),
                    human(limit)
                );
            }
        }
    }
}

/// The error message an agent reads for an oversized reply.
pub fn too_big_sentence(server: &str, size: u64, limit: u64) -> String {
    format!(
        "The reply from server '{server}' is {} ({size} bytes), over its limit of {} (maxMessageBytes in mcpool's config); it was dropped.",
        human(size),
        human(limit)
    )
}

/// "16 MiB", "19.1 MiB", "512 KiB", "900 bytes".
pub fn human(bytes: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;
    let (unit, name) = match bytes {
        b if b >= MIB => (MIB, "MiB"),
        b if b >= KIB => (KIB, "KiB"),
        _ => return format!("{bytes} bytes"),
    };
    if bytes.is_multiple_of(unit) {
        format!("{} {name}", bytes / unit)
    } else {
        format!("{:.1} {name}", bytes as f64 / unit as f64)
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineLimit<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, out: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if out.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        loop {
            if this.pending_at < this.pending.len() {
                let n = (this.pending.len() - this.pending_at).min(out.remaining());
                out.put_slice(&this.pending[this.pending_at..this.pending_at + n]);
                this.pending_at += n;
                if this.pending_at == this.pending.len() {
                    this.pending.clear();
                    this.pending_at = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if let Some(message) = &this.failed {
                return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, message.clone())));
            }
            if this.start == this.end {
                let mut read = ReadBuf::new(&mut this.buf);
                ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
                let n = read.filled().len();
                if n == 0 {
                    return Poll::Ready(Ok(()));
                }
                this.start = 0;
                this.end = n;
            }
            let chunk = &this.buf[this.start..this.end];
            let newline = chunk.iter().position(|b| *b == b'\n');
            let content = newline.unwrap_or(chunk.len());
            if !this.over && this.line_len + content as u64 > this.limit as u64 {
                this.over = true;
            }
            if !this.over {
                let take = (content + usize::from(newline.is_some())).min(out.remaining());
                let content_taken = take.min(content);
                this.scan.feed(&chunk[..content_taken]);
                out.put_slice(&chunk[..take]);
                this.start += take;
                this.line_len += content_taken as u64;
                this.passed |= content_taken > 0;
                if take > content {
                    this.next_line();
                }
                return Poll::Ready(Ok(()));
            }
            this.scan.feed(&chunk[..content]);
            this.line_len += content as u64;
            this.start += content;
            if newline.is_some() {
                this.start += 1;
                this.finish_oversized();
                this.next_line();
            }
        }
    }
}

/// What an oversized line turned out to be.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// A reply to the call with this id.
    Reply(Value),
    /// A reply whose id could not be read.
    ReplyWithoutId,
    /// A request or notification of the server's own (has a `method`).
    FromServer,
    /// Not a JSON-RPC object.
    Garbled,
}

/// The top-level key being read.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
enum Key {
    #[default]
    Other,
    Id,
}

/// Reads the top-level keys of one JSON object as it streams by, in O(n)
/// with constant state besides a short id: string, escape and depth state,
/// the top-level key names, and the raw bytes of the `"id"` value.
#[derive(Debug, Default)]
struct Scanner {
    depth: u32,
    in_string: bool,
    escape: bool,
    /// At depth 1, the next string is a key.
    expect_key: bool,
    /// Reading a top-level key's name.
    in_key: bool,
    key: [u8; 8],
    key_len: usize,
    /// The key had an escape or was longer than any we look for.
    key_odd: bool,
    current: Key,
    /// Reading the raw bytes of the `"id"` value.
    in_id: bool,
    id: Vec<u8>,
    id_too_long: bool,
    has_id_key: bool,
    method: bool,
    reply: bool,
}

impl Scanner {
    fn feed(&mut self, bytes: &[u8]) {
        let mut i = 0;
        while i < bytes.len() {
            if self.in_string && !self.escape && !self.in_key && !self.in_id {
                // Fast path: the inside of a string that nobody reads.
                match bytes[i..].iter().position(|b| *b == b'"' || *b == b'\\') {
                    Some(at) => i += at,
                    None => return,
                }
            }
            self.step(bytes[i]);
            i += 1;
        }
    }

    fn step(&mut self, b: u8) {
        if self.in_id {
            if !self.in_string && self.depth == 1 && (b == b',' || b == b'}') {
                self.in_id = false;
            } else if self.id.len() < MAX_ID_BYTES {
                if !(self.id.is_empty() && b.is_ascii_whitespace()) {
                    self.id.push(b);
                }
            } else {
                self.id_too_long = true;
            }
        }
        if self.in_string {
            if self.escape {
                self.escape = false;
                self.key_odd |= self.in_key;
            } else if b == b'\\' {
                self.escape = true;
            } else if b == b'"' {
                self.in_string = false;
                if self.in_key {
                    self.end_key();
                }
            } else if self.in_key {
                if self.key_len < self.key.len() {
                    self.key[self.key_len] = b;
                    self.key_len += 1;
                } else {
                    self.key_odd = true;
                }
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.in_key = true;
                    self.key_len = 0;
                    self.key_odd = false;
                }
            }
            b'{' | b'[' => {
                if self.depth == 0 && b == b'{' {
                    self.expect_key = true;
                }
                self.depth = self.depth.saturating_add(1);
            }
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            b':' if self.depth == 1 => {
                self.expect_key = false;
                if self.current == Key::Id {
                    self.in_id = true;
                    self.id.clear();
                    self.id_too_long = false;
                }
            }
            b',' if self.depth == 1 => {
                self.expect_key = true;
                self.current = Key::Other;
            }
            _ => {}
        }
    }

    fn end_key(&mut self) {
        self.in_key = false;
        let name: &[u8] = if self.key_odd { b"" } else { &self.key[..self.key_len] };
        self.current = Key::Other;
        match name {
            b"id" => {
                self.current = Key::Id;
                self.has_id_key = true;
            }
            b"method" => self.method = true,
            b"result" | b"error" => self.reply = true,
            _ => {}
        }
    }

    fn outcome(&self) -> Outcome {
        if self.method {
            return Outcome::FromServer;
        }
        let id = if self.id_too_long || self.in_id {
            None
        } else {
            let raw = self.id.trim_ascii_end();
            serde_json::from_slice::<Value>(raw)
                .ok()
                .filter(|v| v.is_string() || v.is_number())
        };
        match id {
            Some(id) => Outcome::Reply(id),
            None if self.reply || self.has_id_key => Outcome::ReplyWithoutId,
            None => Outcome::Garbled,
        }
    }
}

#[cfg(test)]
#[path = "line_limit_tests.rs"]
mod tests;
