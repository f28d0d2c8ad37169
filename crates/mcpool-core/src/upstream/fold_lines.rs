//! A local server's stdout with each message's unmodelled fields folded
//! (`kept::fold_text`) before rmcp's reader parses it, and its stdin with
//! each message's kept fields put back (`kept::unfold_body`: an agent's
//! `task` on a call) after rmcp wrote it. Lines are held whole, as rmcp's
//! reader holds them; [`super::line_limit::LineLimit`] below bounds them.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

pub struct FoldLines<R> {
    inner: R,
    /// The line being read.
    line: Vec<u8>,
    /// Lines ready for the reader above, from `sent` on.
    ready: Vec<u8>,
    sent: usize,
    ended: bool,
}

impl<R> FoldLines<R> {
    pub fn new(inner: R) -> Self {
        FoldLines {
            inner,
            line: Vec::new(),
            ready: Vec::new(),
            sent: 0,
            ended: false,
        }
    }

    /// Moves the line read so far to `ready`, folded when it needs to be.
    fn finish_line(&mut self) {
        let newline = self.line.last() == Some(&b'\n');
        let body = if newline {
            &self.line[..self.line.len() - 1]
        } else {
            &self.line[..]
        };
        match crate::kept::fold_text(body) {
            Some(folded) => {
                self.ready.extend_from_slice(&folded);
                if newline {
                    self.ready.push(b'\n');
                }
            }
            None => self.ready.extend_from_slice(&self.line),
        }
        self.line.clear();
    }

    /// Takes what `bytes` holds: whole lines go to `ready`, the rest waits.
    fn take(&mut self, mut bytes: &[u8]) {
        while let Some(end) = memchr::memchr(b'\n', bytes) {
            self.line.extend_from_slice(&bytes[..=end]);
            self.finish_line();
            bytes = &bytes[end + 1..];
        }
        self.line.extend_from_slice(bytes);
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for FoldLines<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, out: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.sent < this.ready.len() {
                let n = out.remaining().min(this.ready.len() - this.sent);
                out.put_slice(&this.ready[this.sent..this.sent + n]);
                this.sent += n;
                if this.sent == this.ready.len() {
                    this.ready.clear();
                    this.sent = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.ended {
                return Poll::Ready(Ok(()));
            }
            let mut chunk = [0u8; 8192];
            let mut read = ReadBuf::new(&mut chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Ready(Ok(())) if read.filled().is_empty() => {
                    this.ended = true;
                    if !this.line.is_empty() {
                        this.finish_line();
                    }
                }
                Poll::Ready(Ok(())) => this.take(read.filled()),
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// A local server's stdin, each line rmcp writes unfolded on its way.
pub struct UnfoldLines<W> {
    inner: W,
    /// The line being written.
    line: Vec<u8>,
    /// Whole lines not yet taken by `inner`, from `sent` on.
    pending: Vec<u8>,
    sent: usize,
}

impl<W> UnfoldLines<W> {
    pub fn new(inner: W) -> Self {
        UnfoldLines {
            inner,
            line: Vec::new(),
            pending: Vec::new(),
            sent: 0,
        }
    }
}

impl<W: AsyncWrite + Unpin> UnfoldLines<W> {
    /// Hands `pending` to `inner`; ready once all of it is taken.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.sent < self.pending.len() {
            match Pin::new(&mut self.inner).poll_write(cx, &self.pending[self.sent..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => self.sent += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        self.pending.clear();
        self.sent = 0;
        Poll::Ready(Ok(()))
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for UnfoldLines<W> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        // What the server has not taken yet holds back what comes next.
        if let Poll::Ready(Err(e)) = this.poll_pending(cx) {
            return Poll::Ready(Err(e));
        }
        if !this.pending.is_empty() {
            return Poll::Pending;
        }
        let mut rest = buf;
        while let Some(end) = memchr::memchr(b'\n', rest) {
            this.line.extend_from_slice(&rest[..=end]);
            let body = &this.line[..this.line.len() - 1];
            match crate::kept::unfold_body(body) {
                Some(unfolded) => {
                    this.pending.extend_from_slice(&unfolded);
                    this.pending.push(b'\n');
                }
                None => this.pending.extend_from_slice(&this.line),
            }
            this.line.clear();
            rest = &rest[end + 1..];
        }
        this.line.extend_from_slice(rest);
        // Taken: what `inner` cannot take now goes with the next write or
        // the flush.
        if let Poll::Ready(Err(e)) = this.poll_pending(cx) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if !this.line.is_empty() {
            let line = std::mem::take(&mut this.line);
            this.pending.extend_from_slice(&line);
        }
        match this.poll_pending(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut this.inner).poll_flush(cx),
            other => other,
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.as_mut().poll_flush(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut self.inner).poll_shutdown(cx),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    #[tokio::test]
    async fn lines_split_anywhere_come_out_whole_and_only_a_result_with_unknown_fields_changes() {
        let plain = br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}"#;
        let execution = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{},"execution":{"taskSupport":"optional"}}]}}"#;
        let mut input = Vec::new();
        for line in [&plain[..], &execution[..], &plain[..]] {
            input.extend_from_slice(line);
            input.push(b'\n');
        }
        input.extend_from_slice(b"{\"unterminated\":true}");
        // Three bytes a read, so lines end in the middle of reads.
        let (mut writer, reader) = tokio::io::duplex(3);
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            writer.write_all(&input).await.unwrap();
        });
        let mut output = String::new();
        FoldLines::new(reader).read_to_string(&mut output).await.unwrap();
        let lines: Vec<&str> = output.split('\n').collect();
        assert_eq!(lines.len(), 4, "{output}");
        assert_eq!(lines[0].as_bytes(), plain);
        assert_eq!(lines[2].as_bytes(), plain);
        assert_eq!(lines[3], "{\"unterminated\":true}");
        let folded: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
        let tool = &folded["result"]["tools"][0];
        assert_eq!(tool.get("execution"), None);
        assert_eq!(tool["_meta"][crate::kept::KEY]["execution"]["taskSupport"], "optional");
    }

    #[tokio::test]
    async fn a_written_line_with_kept_fields_reaches_the_server_unfolded_and_others_as_written() {
        use tokio::io::AsyncWriteExt;
        let (writer, mut reader) = tokio::io::duplex(5);
        let mut unfolding = UnfoldLines::new(writer);
        let kept = format!(
            r#"{{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{{"name":"a","_meta":{{"{}":{{"task":{{"ttl":60000}},"_meta":false}}}}}}}}"#,
            crate::kept::KEY
        );
        let plain = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let read = tokio::spawn(async move {
            let mut all = String::new();
            reader.read_to_string(&mut all).await.unwrap();
            all
        });
        for part in [plain, "\n", &kept[..10], &kept[10..], "\n", plain, "\n"] {
            unfolding.write_all(part.as_bytes()).await.unwrap();
        }
        unfolding.shutdown().await.unwrap();
        drop(unfolding);
        let all = read.await.unwrap();
        let lines: Vec<&str> = all.lines().collect();
        assert_eq!((lines[0], lines[2]), (plain, plain));
        let sent: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(sent["params"], serde_json::json!({"name": "a", "task": {"ttl": 60000}}));
    }
}
