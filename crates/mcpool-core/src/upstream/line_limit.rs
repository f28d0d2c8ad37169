//! Reads a local server's stdout for rmcp: only JSON-RPC messages get
//! through, and one message is bounded (`maxMessageBytes`), so a call ends
//! instead of waiting forever behind a stray line or an oversized reply.
//!
//! [`LineLimit`] sits between the child's stdout and rmcp's line reader. It
//! holds each line until its newline while a [`Scanner`] reads its top-level
//! keys, then passes it on only if it is a JSON-RPC message (an object with
//! `jsonrpc` and a `method`, `result`, `error` or `id`) or a batch. Anything
//! else a server prints on stdout (a JSON logger's lines, a banner) is
//! skipped: the first such line of a connection goes, redacted, to the log
//! and the stderr tail. A line over the limit is dropped as it streams
//! (never held whole) while the scanner reads its `"id"`, which may come
//! first or last (Node's SDK writes `{"result":…,"jsonrpc":"2.0","id":1}`).
//! At its newline the adapter hands rmcp a JSON-RPC error response for that
//! id instead. rmcp's own line limit is set above ours, so it never drops a
//! line silently.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use serde_json::{json, Value};
use tokio::io::{AsyncRead, ReadBuf};

use crate::stderr_tail::StderrTail;

/// How much is read from the child at a time.
const READ_CHUNK: usize = 64 * 1024;
/// Longest `id` value kept; a longer one counts as unreadable.
const MAX_ID_BYTES: usize = 256;
/// JSON-RPC "internal error".
const INTERNAL_ERROR: i64 = -32603;
/// A line buffer grown past this by one big message is given back after it.
const KEEP_CAPACITY: usize = 1024 * 1024;
/// How much of a skipped line the log and the stderr tail quote.
const SKIPPED_EXCERPT: usize = 200;

/// The room rmcp's own line reader needs above our limit: a `\r` never makes
/// a line we passed longer than this.
pub const RMCP_HEADROOM: usize = 1024;

/// An `AsyncRead` over a child's stdout that passes only JSON-RPC messages,
/// each at most `limit` bytes.
pub struct LineLimit<R> {
    inner: R,
    limit: usize,
    server: String,
    /// Where a skipped line is told (the server's stderr tail).
    tail: Option<StderrTail>,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    /// The current line so far, newline excluded, while within the limit.
    line: Vec<u8>,
    /// Bytes of the current line so far, newline excluded.
    line_len: u64,
    /// The current line is over the limit: being dropped.
    over: bool,
    scan: Scanner,
    /// Bytes to hand to rmcp before reading on.
    pending: Vec<u8>,
    pending_at: usize,
    /// Lines skipped as not JSON-RPC on this connection.
    skipped: u64,
    /// The child's stdout ended.
    eof: bool,
    /// The connection was ended: every later read fails with this.
    failed: Option<String>,
}

impl<R> LineLimit<R> {
    pub fn new(inner: R, limit: usize, server: &str) -> Self {
        LineLimit {
            inner,
            limit,
            server: server.to_string(),
            tail: None,
            buf: vec![0; READ_CHUNK].into_boxed_slice(),
            start: 0,
            end: 0,
            line: Vec::new(),
            line_len: 0,
            over: false,
            scan: Scanner::default(),
            pending: Vec::new(),
            pending_at: 0,
            skipped: 0,
            eof: false,
            failed: None,
        }
    }

    /// Tells the first skipped line of the connection in `tail` too.
    pub fn with_tail(mut self, tail: StderrTail) -> Self {
        self.tail = Some(tail);
        self
    }

    fn next_line(&mut self) {
        self.line.clear();
        if self.line.capacity() > KEEP_CAPACITY {
            self.line = Vec::new();
        }
        self.line_len = 0;
        self.over = false;
        self.scan = Scanner::default();
    }

    /// A line within the limit ended: pass it on if it is a message.
    fn finish_line(&mut self, newline: bool) {
        let first = self.line.iter().find(|b| !b.is_ascii_whitespace()).copied();
        match first {
            None => {}
            Some(b'[') => self.pass_line(newline),
            Some(_) if self.scan.is_message() => self.pass_line(newline),
            Some(_) => self.skip_line(),
        }
    }

    fn pass_line(&mut self, newline: bool) {
        self.pending.extend_from_slice(&self.line);
        if newline {
            self.pending.push(b'\n');
        }
    }

    fn skip_line(&mut self) {
        self.skipped += 1;
        if self.skipped > 1 {
            return;
        }
        let text = String::from_utf8_lossy(&self.line);
        let excerpt = crate::errors::excerpt(text.trim(), SKIPPED_EXCERPT);
        tracing::warn!(
            server = %self.server,
            "skipped a line on the server's stdout that is not a JSON-RPC message (later ones are skipped silently): {excerpt}"
        );
        if let Some(tail) = &self.tail {
            tail.push(&format!(
                "[mcpool] skipped a stdout line that is not JSON-RPC: {excerpt}"
            ));
        }
    }

    /// The oversized line ended: queue what rmcp gets instead of it.
    fn finish_oversized(&mut self) {
        let size = self.line_len;
        let (server, limit) = (&self.server, self.limit as u64);
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
                    if this.pending.capacity() > KEEP_CAPACITY {
                        this.pending = Vec::new();
                    }
                }
                return Poll::Ready(Ok(()));
            }
            if let Some(message) = &this.failed {
                return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, message.clone())));
            }
            if this.eof {
                return Poll::Ready(Ok(()));
            }
            if this.start == this.end {
                let mut read = ReadBuf::new(&mut this.buf);
                ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
                let n = read.filled().len();
                if n == 0 {
                    // A last line without a newline is judged like any other.
                    this.eof = true;
                    if !this.over {
                        this.finish_line(false);
                    }
                    continue;
                }
                this.start = 0;
                this.end = n;
            }
            let chunk = &this.buf[this.start..this.end];
            let newline = chunk.iter().position(|b| *b == b'\n');
            let content = newline.unwrap_or(chunk.len());
            this.scan.feed(&chunk[..content]);
            if !this.over && this.line_len + content as u64 > this.limit as u64 {
                // Nothing of the line was passed on yet: it is dropped whole.
                this.over = true;
                this.line.clear();
            }
            if !this.over {
                this.line.extend_from_slice(&chunk[..content]);
            }
            this.line_len += content as u64;
            this.start += content;
            if newline.is_some() {
                this.start += 1;
                if this.over {
                    this.finish_oversized();
                } else {
                    this.finish_line(true);
                }
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
    jsonrpc: bool,
    /// The line is a JSON object (its first byte outside whitespace is `{`).
    object: bool,
    /// Something other than whitespace came before the first byte read.
    started: bool,
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
        if !self.started && !b.is_ascii_whitespace() {
            self.started = true;
            self.object = b == b'{';
        }
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
            b"jsonrpc" => self.jsonrpc = true,
            b"result" | b"error" => self.reply = true,
            _ => {}
        }
    }

    /// Whether the line read whole is a JSON-RPC message: one object, with
    /// `jsonrpc` and what makes it a request, notification or reply.
    fn is_message(&self) -> bool {
        self.object
            && self.depth == 0
            && !self.in_string
            && self.jsonrpc
            && (self.method || self.reply || self.has_id_key)
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
