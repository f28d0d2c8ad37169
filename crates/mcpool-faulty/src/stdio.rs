//! Serving over stdio, with stdout funnelled through one writer so faults can inject lines.
//!
//! rmcp writes its frames into an in-memory pipe; a forwarder copies whole
//! lines from it to stdout and slips injected lines (the `malformed` tool)
//! in between frames, never inside one.

use std::{sync::Arc, time::Duration};

use anyhow::Context as _;
use rmcp::ServiceExt as _;
use tokio::{
    io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader},
    sync::mpsc,
};

use serde_json::Value;

use crate::{server::Faulty, shared::Shared};

/// Room for one frame in flight between rmcp and the forwarder.
const PIPE_BYTES: usize = 256 * 1024;
/// How long the forwarder may take to drain stdout once the session ended.
const DRAIN_DEADLINE: Duration = Duration::from_secs(5);

/// Serves one MCP session on stdin/stdout until stdin closes; with
/// `ignore_discover`, it never sees `server/discover` (as servers on SDKs
/// that drop unknown requests before `initialize` do). `raw_tools`
/// (`--raw-tools`) are appended as they are to every `tools/list` result,
/// so a test can list tool definitions that rmcp's types cannot hold.
pub async fn serve(
    ignore_discover: bool,
    make_shared: impl FnOnce(mpsc::UnboundedSender<String>) -> Shared,
    raw_tools: Vec<Value>,
) -> anyhow::Result<()> {
    let (inject_tx, inject_rx) = mpsc::unbounded_channel();
    let shared = Arc::new(make_shared(inject_tx));
    let (rmcp_side, forwarder_side) = tokio::io::duplex(PIPE_BYTES);
    let rewrite = move |frame: &mut Vec<u8>| append_raw_tools(frame, &raw_tools);
    let forwarder = tokio::spawn(forward_lines(forwarder_side, inject_rx, tokio::io::stdout(), rewrite));

    let served = if ignore_discover {
        let (filtered, input) = tokio::io::duplex(PIPE_BYTES);
        tokio::spawn(drop_discover(tokio::io::stdin(), filtered));
        Faulty::new(shared).serve((input, rmcp_side)).await
    } else {
        Faulty::new(shared).serve((tokio::io::stdin(), rmcp_side)).await
    };
    let running = match served {
        Ok(running) => running,
        Err(e) => {
            // What rmcp wrote before it gave up (its answer refusing the
            // request it could not start with) still reaches stdout: the
            // client learns why, instead of racing our exit.
            let _ = tokio::time::timeout(DRAIN_DEADLINE, forwarder).await;
            return Err(e).context("stdio session did not start");
        }
    };
    running.waiting().await.context("stdio session failed")?;

    match tokio::time::timeout(DRAIN_DEADLINE, forwarder).await {
        Ok(Ok(result)) => result.context("writing stdout"),
        Ok(Err(join_error)) => Err(join_error).context("stdout forwarder panicked"),
        Err(_) => anyhow::bail!("stdout forwarder did not drain in time"),
    }
}

/// Copies the client's lines to `out`, leaving out `server/discover`
/// requests without a word.
async fn drop_discover(input: impl AsyncRead + Unpin, mut out: impl AsyncWrite + Unpin) -> std::io::Result<()> {
    let mut lines = BufReader::new(input).lines();
    while let Some(line) = lines.next_line().await? {
        let method = serde_json::from_str::<serde_json::Value>(&line)
            .ok()
            .and_then(|m| m.get("method").and_then(|m| m.as_str()).map(str::to_owned));
        if method.as_deref() == Some("server/discover") {
            continue;
        }
        out.write_all(line.as_bytes()).await?;
        out.write_all(b"\n").await?;
        out.flush().await?;
    }
    Ok(())
}

/// Adds `raw` to the tools of a frame that is a `tools/list` result.
fn append_raw_tools(frame: &mut Vec<u8>, raw: &[Value]) {
    if raw.is_empty() || !frame.windows(8).any(|w| w == b"\"tools\":") {
        return;
    }
    let Ok(mut message) = serde_json::from_slice::<Value>(frame) else {
        return;
    };
    let Some(tools) = message.pointer_mut("/result/tools").and_then(Value::as_array_mut) else {
        return;
    };
    tools.extend(raw.iter().cloned());
    if let Ok(mut text) = serde_json::to_vec(&message) {
        text.push(b'\n');
        *frame = text;
    }
}

/// Copies newline-terminated frames from `frames` to `out`, each through
/// `rewrite`, interleaving injected lines only at frame boundaries. Ends
/// when `frames` closes.
pub async fn forward_lines(
    frames: impl AsyncRead + Unpin,
    mut injected: mpsc::UnboundedReceiver<String>,
    mut out: impl AsyncWrite + Unpin,
    rewrite: impl Fn(&mut Vec<u8>),
) -> std::io::Result<()> {
    let mut frames = BufReader::new(frames);
    let mut frame = Vec::new();
    loop {
        tokio::select! {
            biased;
            Some(line) = injected.recv() => {
                out.write_all(line.as_bytes()).await?;
                out.write_all(b"\n").await?;
                out.flush().await?;
            }
            // Cancel safe: a partial read stays in `frame` for the next turn.
            read = frames.read_until(b'\n', &mut frame) => {
                if read? == 0 {
                    out.write_all(&frame).await?;
                    out.flush().await?;
                    return Ok(());
                }
                if frame.ends_with(b"\n") {
                    rewrite(&mut frame);
                    out.write_all(&frame).await?;
                    out.flush().await?;
                    frame.clear();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt as _;

    use super::*;

    #[tokio::test]
    async fn injected_lines_never_split_a_frame() {
        let (mut writer, reader) = tokio::io::duplex(64);
        let (tx, rx) = mpsc::unbounded_channel();
        let (out, mut out_reader) = tokio::io::duplex(4096);
        let forwarder = tokio::spawn(forward_lines(reader, rx, out, |_: &mut Vec<u8>| {}));
        writer.write_all(b"{\"a\":").await.unwrap();
        writer.flush().await.unwrap();
        tokio::task::yield_now().await;
        tx.send("garbage".to_owned()).unwrap();
        tokio::task::yield_now().await;
        writer.write_all(b"1}\n{\"b\":2}\n").await.unwrap();
        drop(writer);
        forwarder.await.unwrap().unwrap();
        let mut text = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut out_reader, &mut text)
            .await
            .unwrap();
        assert_eq!(text, "garbage\n{\"a\":1}\n{\"b\":2}\n");
    }

    #[test]
    fn raw_tools_join_a_tools_list_result_only() {
        let raw = vec![serde_json::json!({"name": "bad", "inputSchema": "x"})];
        let mut list = b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":[{\"name\":\"echo\"}]}}\n".to_vec();
        append_raw_tools(&mut list, &raw);
        let value: Value = serde_json::from_slice(&list).unwrap();
        assert_eq!(value["result"]["tools"][1]["name"], "bad");
        assert!(list.ends_with(b"\n"));
        let mut other = b"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[]}}\n".to_vec();
        let before = other.clone();
        append_raw_tools(&mut other, &raw);
        assert_eq!(other, before);
    }
}
