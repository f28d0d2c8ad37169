use std::pin::Pin;
use std::task::{Context, Poll};

use rmcp::model::{JsonRpcMessage, NumberOrString};
use rmcp::service::RoleClient;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::Transport;
use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};

use super::*;

/// Scans `line` fed in pieces of `piece` bytes.
fn scan(line: &str, piece: usize) -> Outcome {
    let mut s = Scanner::default();
    for chunk in line.as_bytes().chunks(piece) {
        s.feed(chunk);
    }
    s.outcome()
}

/// Every split of `line` gives the same outcome.
fn scan_all_splits(line: &str) -> Outcome {
    let whole = scan(line, line.len().max(1));
    for piece in 1..line.len() {
        assert_eq!(scan(line, piece), whole, "split into pieces of {piece}: {line}");
    }
    for at in 0..line.len() {
        let mut s = Scanner::default();
        s.feed(&line.as_bytes()[..at]);
        s.feed(&line.as_bytes()[at..]);
        assert_eq!(s.outcome(), whole, "split at {at}: {line}");
    }
    whole
}

#[test]
fn id_first_and_id_last() {
    assert_eq!(
        scan_all_splits(r#"{"jsonrpc":"2.0","id":12,"result":{"content":[]}}"#),
        Outcome::Reply(json!(12))
    );
    assert_eq!(
        scan_all_splits(r#"{"result":{"content":[{"type":"text","text":"x"}]},"jsonrpc":"2.0","id":7}"#),
        Outcome::Reply(json!(7))
    );
    assert_eq!(
        scan_all_splits(r#" { "result" : {} , "id" : "a-b" } "#),
        Outcome::Reply(json!("a-b"))
    );
}

#[test]
fn id_inside_strings_or_nested_objects_is_not_the_id() {
    assert_eq!(
        scan_all_splits(r#"{"result":{"text":"\"id\":5, \"id\": 7 {\"id\":9}","id":99,"list":[{"id":3}]},"id":4}"#),
        Outcome::Reply(json!(4))
    );
    // A value that looks like a key.
    assert_eq!(
        scan_all_splits(r#"{"result":"id","x":["id",":",1],"id":5}"#),
        Outcome::Reply(json!(5))
    );
}

#[test]
fn escapes_do_not_end_strings() {
    assert_eq!(
        scan_all_splits(r#"{"result":{"text":"a\\"},"id":1}"#),
        Outcome::Reply(json!(1))
    );
    assert_eq!(
        scan_all_splits(r#"{"result":{"text":"a\"},\"id\":2,\"b\":\""},"id":3}"#),
        Outcome::Reply(json!(3))
    );
    assert_eq!(
        scan_all_splits(r#"{"id":"q\"uote\\","result":{}}"#),
        Outcome::Reply(json!("q\"uote\\"))
    );
    // An escaped key is not read as "id".
    assert_eq!(scan_all_splits(r#"{"result":{},"\u0069d":1}"#), Outcome::ReplyWithoutId);
}

#[test]
fn what_is_not_a_reply_with_an_id() {
    assert_eq!(
        scan_all_splits(r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"id":1}}"#),
        Outcome::FromServer
    );
    assert_eq!(
        scan_all_splits(r#"{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{}}"#),
        Outcome::FromServer
    );
    assert_eq!(
        scan_all_splits(r#"{"jsonrpc":"2.0","result":{}}"#),
        Outcome::ReplyWithoutId
    );
    assert_eq!(
        scan_all_splits(r#"{"jsonrpc":"2.0","id":null,"error":{}}"#),
        Outcome::ReplyWithoutId
    );
    assert_eq!(
        scan_all_splits(r#"{"id":{"a":1},"result":{}}"#),
        Outcome::ReplyWithoutId
    );
    // Cut off inside the id.
    assert_eq!(scan_all_splits(r#"{"result":{},"id":12"#), Outcome::ReplyWithoutId);
    let long = format!(r#"{{"result":{{}},"id":"{}"}}"#, "i".repeat(MAX_ID_BYTES * 2));
    assert_eq!(scan(&long, 7), Outcome::ReplyWithoutId);
    assert_eq!(scan_all_splits("this is not json"), Outcome::Garbled);
    assert_eq!(scan_all_splits(r#"["id",1]"#), Outcome::Garbled);
}

#[test]
fn sizes_are_said_plainly() {
    assert_eq!(human(16 * 1024 * 1024), "16 MiB");
    assert_eq!(human(20_000_000), "19.1 MiB");
    assert_eq!(human(512 * 1024), "512 KiB");
    assert_eq!(human(900), "900 bytes");
}

/// A reader that yields `data` at most `piece` bytes at a time.
struct Pieces {
    data: Vec<u8>,
    at: usize,
    piece: usize,
}

impl AsyncRead for Pieces {
    fn poll_read(mut self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let n = self.piece.min(self.data.len() - self.at).min(buf.remaining());
        let at = self.at;
        buf.put_slice(&self.data[at..at + n]);
        self.at += n;
        Poll::Ready(Ok(()))
    }
}

async fn through(data: &str, limit: usize, piece: usize) -> String {
    let mut reader = LineLimit::new(
        Pieces {
            data: data.as_bytes().to_vec(),
            at: 0,
            piece,
        },
        limit,
        "big",
    );
    let mut out = Vec::new();
    reader.read_to_end(&mut out).await.unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

const REPLY_1: &str = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
const REPLY_2: &str = r#"{"result":{},"jsonrpc":"2.0","id":2}"#;

#[tokio::test]
async fn messages_within_the_limit_pass_unchanged() {
    let note = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#;
    let data = format!("{REPLY_1}\n{note}\r\n[{REPLY_2}]\n{REPLY_2}");
    for piece in [1, 2, 3, 5, 64, 4096] {
        assert_eq!(through(&data, 200, piece).await, data, "pieces of {piece}");
    }
}

#[tokio::test]
async fn lines_that_are_not_json_rpc_are_skipped() {
    let data = format!(
        "starting up\n{{\"level\":\"info\",\"msg\":\"ready\"}}\n{{\"method\":\"GET\",\"id\":4}}\n\n{REPLY_1}\n\
         {{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{{}}\n{{\"level\":\"debug\"}}\n{REPLY_2}\n"
    );
    for piece in [1, 3, 7, 4096] {
        // A JSON logger's lines, a banner, a blank line and a cut object go; the replies stay.
        assert_eq!(
            through(&data, 200, piece).await,
            format!("{REPLY_1}\n{REPLY_2}\n"),
            "pieces of {piece}"
        );
    }
}

#[tokio::test]
async fn the_first_skipped_line_is_told_in_the_tail_redacted() {
    let secret = "tok-linelimit-0123456789abcdef".to_string();
    crate::secrets::remember_secrets(std::slice::from_ref(&secret));
    let data = format!("{{\"level\":\"info\",\"key\":\"{secret}\"}}\n{{\"level\":\"info\",\"n\":2}}\n{REPLY_1}\n");
    let tail = crate::stderr_tail::StderrTail::default();
    let mut reader = LineLimit::new(
        Pieces {
            data: data.into_bytes(),
            at: 0,
            piece: 5,
        },
        200,
        "noisy",
    )
    .with_tail(tail.clone());
    let mut out = Vec::new();
    reader.read_to_end(&mut out).await.unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), format!("{REPLY_1}\n"));
    let lines = tail.tail();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("[mcpool] skipped a stdout line that is not JSON-RPC: {\"level\":\"info\""),
        "{lines:?}"
    );
    assert!(!lines[0].contains(&secret), "{lines:?}");
}

#[tokio::test]
async fn an_oversized_reply_becomes_an_error_for_its_id() {
    let big = format!(
        "{{\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"{}\"}}]}},\"jsonrpc\":\"2.0\",\"id\":7}}",
        "x".repeat(300)
    );
    let data = format!("{REPLY_1}\n{big}\n{REPLY_2}\n");
    for piece in [1, 7, 100, 4096] {
        let out = through(&data, 100, piece).await;
        let lines: Vec<&str> = out.split('\n').collect();
        assert_eq!(lines[0], REPLY_1);
        // Nothing of the big line reaches rmcp: only the error in its place.
        let error: Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(error["id"], json!(7));
        assert_eq!(error["error"]["code"], json!(-32603));
        assert_eq!(
            error["error"]["message"],
            json!(format!("The reply from server 'big' is {} bytes ({} bytes), over its limit of 100 bytes (maxMessageBytes in mcpool's config); it was dropped.", big.len(), big.len()))
        );
        assert_eq!(lines[2], REPLY_2);
    }
}

#[tokio::test]
async fn a_reply_without_a_readable_id_ends_the_connection() {
    let data = format!("{{\"result\":\"{}\"}}\n{REPLY_2}\n", "x".repeat(200));
    let mut reader = LineLimit::new(
        Pieces {
            data: data.into_bytes(),
            at: 0,
            piece: 16,
        },
        100,
        "big",
    );
    let mut out = Vec::new();
    let err = reader.read_to_end(&mut out).await.unwrap_err();
    assert!(err.to_string().contains("without an id mcpool could read"), "{err}");
}

#[tokio::test]
async fn an_oversized_notification_is_dropped_alone() {
    let data = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{\"data\":\"{}\"}}}}\n{REPLY_2}\n",
        "x".repeat(200)
    );
    for piece in [10, 4096] {
        assert_eq!(through(&data, 100, piece).await, format!("{REPLY_2}\n"));
    }
}

/// rmcp's reader gets the reply behind a JSON logger's lines.
#[tokio::test]
async fn rmcp_receives_the_reply_behind_stray_json_lines() {
    let data = format!("{{\"level\":\"info\"}}\n{{\"level\":\"warn\"}}\n{REPLY_1}\n");
    let reader = LineLimit::new(
        Pieces {
            data: data.into_bytes(),
            at: 0,
            piece: 9,
        },
        1000,
        "noisy",
    );
    let mut transport = AsyncRwTransport::<RoleClient, _, _>::new_client(reader, tokio::io::sink())
        .with_max_line_length(1000 + RMCP_HEADROOM);
    let first = Transport::<RoleClient>::receive(&mut transport).await;
    assert!(
        matches!(&first, Some(JsonRpcMessage::Response(r)) if r.id == NumberOrString::Number(1)),
        "{first:?}"
    );
}

/// rmcp's reader, set up as `upstream::connect` sets it up, delivers the
/// error for the oversized reply and the messages around it.
#[tokio::test]
async fn rmcp_receives_the_error_in_place_of_the_reply() {
    let limit = 1000;
    let ok = |id: u32| format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{}}}}\n");
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"result\":{{\"text\":\"{}\"}},\"id\":2}}\n",
        "y".repeat(5000)
    );
    let data = format!("{}{big}{}", ok(1), ok(3));
    let reader = LineLimit::new(
        Pieces {
            data: data.into_bytes(),
            at: 0,
            piece: 333,
        },
        limit,
        "big",
    );
    let mut transport = AsyncRwTransport::<RoleClient, _, _>::new_client(reader, tokio::io::sink())
        .with_max_line_length(limit + RMCP_HEADROOM);
    let mut seen = Vec::new();
    while let Some(message) = Transport::<RoleClient>::receive(&mut transport).await {
        seen.push(match message {
            JsonRpcMessage::Response(r) => format!("result {:?}", r.id),
            JsonRpcMessage::Error(e) => format!("error {:?}: {}", e.id, e.error.message),
            other => format!("other {other:?}"),
        });
    }
    assert_eq!(
        seen,
        vec![
            format!("result {:?}", NumberOrString::Number(1)),
            format!(
                "error {:?}: The reply from server 'big' is 4.9 KiB (5045 bytes), over its limit of 1000 bytes (maxMessageBytes in mcpool's config); it was dropped.",
                Some(NumberOrString::Number(2))
            ),
            format!("result {:?}", NumberOrString::Number(3)),
        ]
    );
}
