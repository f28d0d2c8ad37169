//! The probe's verdicts: a session-revision refusal, and silence on paused time.

use super::*;
use serde_json::{json, Value};
use tokio::sync::mpsc;

/// A server's side of a connection: what the client sent, and what the
/// test makes the server say.
struct Fake {
    sent: mpsc::UnboundedSender<TxJsonRpcMessage<RoleClient>>,
    incoming: mpsc::UnboundedReceiver<RxJsonRpcMessage<RoleClient>>,
}

impl Transport<RoleClient> for Fake {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let _ = self.sent.send(item);
        std::future::ready(Ok(()))
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        self.incoming.recv().await
    }

    fn close(&mut self) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send {
        std::future::ready(Ok(()))
    }
}

type Server = mpsc::UnboundedSender<RxJsonRpcMessage<RoleClient>>;

fn silent_probe() -> (LegacyProbe<Fake>, Server, Verdict) {
    let (sent, _) = mpsc::unbounded_channel();
    let (server, incoming) = mpsc::unbounded_channel();
    let verdict = Verdict::default();
    let probe = LegacyProbe::new(Fake { sent, incoming }).with_silence(Duration::from_secs(2), verdict.clone());
    (probe, server, verdict)
}

fn from(v: Value) -> RxJsonRpcMessage<RoleClient> {
    serde_json::from_value(v).unwrap()
}

/// Messages have no `PartialEq`: compared as their JSON.
fn json_of(m: Option<RxJsonRpcMessage<RoleClient>>) -> Value {
    serde_json::to_value(m).unwrap()
}

fn request(id: u32, method: &str, params: Value) -> TxJsonRpcMessage<RoleClient> {
    serde_json::from_value(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).unwrap()
}

fn discover(id: u32) -> TxJsonRpcMessage<RoleClient> {
    request(
        id,
        "server/discover",
        json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "mcpool", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }}),
    )
}

fn initialize(id: u32) -> TxJsonRpcMessage<RoleClient> {
    request(
        id,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "mcpool", "version": "0"}}),
    )
}

fn discover_result(id: u32) -> RxJsonRpcMessage<RoleClient> {
    from(json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "complete",
        "supportedVersions": ["2026-07-28"], "capabilities": {}, "ttlMs": 0, "cacheScope": "private"}}))
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_probe_is_method_not_found_after_the_silence() {
    let (mut probe, server, verdict) = silent_probe();
    probe.send(discover(1)).await.unwrap();
    let start = Instant::now();
    let Some(JsonRpcMessage::Error(e)) = probe.receive().await else {
        panic!("no error for the probe");
    };
    assert_eq!(start.elapsed(), Duration::from_secs(2));
    assert_eq!(e.id, Some(RequestId::Number(1)));
    assert_eq!(
        e.error.code,
        ErrorCode::METHOD_NOT_FOUND,
        "rmcp goes on with initialize"
    );

    // A server that answers initialize: the late discover answer of a
    // dual server is dropped, the session revision goes on.
    probe.send(initialize(2)).await.unwrap();
    server
        .send(from(
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "no"}}),
        ))
        .unwrap();
    let answer = from(
        json!({"jsonrpc": "2.0", "id": 2, "result": {"protocolVersion": "2025-11-25",
        "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}}),
    );
    server.send(answer.clone()).unwrap();
    assert_eq!(json_of(probe.receive().await), json_of(Some(answer)));
    assert!(!verdict.modern_after_silence());
}

#[tokio::test(start_paused = true)]
async fn a_server_that_was_only_slow_shows_it_is_modern() {
    let (mut probe, server, verdict) = silent_probe();
    probe.send(discover(1)).await.unwrap();
    assert!(matches!(probe.receive().await, Some(JsonRpcMessage::Error(_))));
    probe.send(initialize(2)).await.unwrap();
    server.send(discover_result(1)).unwrap();
    let refused = from(json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32022,
        "message": "Unsupported protocol version", "data": {"supported": ["2026-07-28"]}}}));
    server.send(refused.clone()).unwrap();
    assert_eq!(
        json_of(probe.receive().await),
        json_of(Some(refused)),
        "the late answer is not rmcp's to see"
    );
    assert!(verdict.modern_after_silence());
}

#[tokio::test(start_paused = true)]
async fn an_answer_in_time_passes_and_nothing_times_out() {
    let (mut probe, server, verdict) = silent_probe();
    probe.send(discover(1)).await.unwrap();
    server.send(discover_result(1)).unwrap();
    assert_eq!(json_of(probe.receive().await), json_of(Some(discover_result(1))));
    // Later silence is nobody's business: no deadline is left.
    let waited = tokio::time::timeout(Duration::from_secs(60), probe.receive()).await;
    assert!(waited.is_err());
    assert!(!verdict.modern_after_silence());
}

#[test]
fn only_a_list_of_session_revisions_counts() {
    assert!(only_session_revisions(Some(
        &json!({"supported": ["2024-11-05", "2025-11-25"]})
    )));
    assert!(!only_session_revisions(Some(
        &json!({"supported": ["2025-11-25", "2026-07-28"]})
    )));
    assert!(!only_session_revisions(Some(&json!({"supported": []}))));
    assert!(!only_session_revisions(Some(&json!({"requested": "2026-07-28"}))));
    assert!(!only_session_revisions(None));
}
