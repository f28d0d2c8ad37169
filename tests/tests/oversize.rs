//! A reply over a local server's `maxMessageBytes` fails its call at once
//! with a sentence naming the server, the size and the limit; the server
//! stays connected and answers the next call; a raised limit lets it through.

use std::time::Duration;

use mcpool_tests::*;
use rmcp::service::ServiceExt;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::json;

/// Far more than a 50 MB reply needs (it takes about a second); a hang
/// fails here instead of never ending.
const CALL_LIMIT: Duration = Duration::from_secs(90);
const MIB: u64 = 1024 * 1024;

/// An agent whose own transport takes replies of up to 128 MiB, so what is
/// tested is mcpool's limit, not the agent's.
async fn roomy_agent(pool: &Mcpool) -> anyhow::Result<Agent> {
    let handler = AgentHandler::default();
    let counters = handler.clone();
    let mut config = StreamableHttpClientTransportConfig::with_uri(pool.url("/mcp"))
        .auth_header(pool.token.clone())
        .max_sse_event_size(128 * MIB as usize);
    config.max_json_response_size = 128 * MIB as usize;
    let service = handler
        .serve(StreamableHttpClientTransport::from_config(config))
        .await?;
    Ok(Agent {
        service,
        handler: counters,
    })
}

/// Calls `tool` with `bytes`, bounded by [`CALL_LIMIT`].
async fn big(agent: &Agent, tool: &str, bytes: u64) -> anyhow::Result<anyhow::Result<String>> {
    let started = std::time::Instant::now();
    let call = agent.call(tool, json!({"bytes": bytes}));
    let result = tokio::time::timeout(CALL_LIMIT, call)
        .await
        .map_err(|_| anyhow::anyhow!("{tool} of {bytes} bytes did not end within {CALL_LIMIT:?}"))?;
    eprintln!("{tool} of {bytes} bytes ended in {:?}", started.elapsed());
    Ok(result.map(|r| text(&r)))
}

#[tokio::test]
async fn an_oversized_reply_fails_its_call_at_once_and_the_server_keeps_answering() -> anyhow::Result<()> {
    let (_dir, log) = TempDir::with_spawn_log("oversize");
    let mut low = faulty_stdio(&log, &[]);
    low["maxMessageBytes"] = json!(MIB);
    let mut high = faulty_stdio(&log, &[]);
    high["maxMessageBytes"] = json!(64 * MIB);
    let pool = Mcpool::start(json!({"mcpServers": {
        "big": faulty_stdio(&log, &[]),
        "low": low,
        "high": high,
    }}))
    .await?;
    for name in ["big", "low", "high"] {
        pool.wait_status(name, "connected", Duration::from_secs(20)).await?;
    }
    let agent = roomy_agent(&pool).await?;

    for (bytes, size) in [(20_000_000, "19.1 MiB"), (50_000_000, "47.7 MiB")] {
        let err = big(&agent, "big__big", bytes)
            .await?
            .expect_err("a reply over 16 MiB must fail");
        let err = format!("{err:#}");
        // The reply is the result plus its JSON-RPC envelope, a little over `bytes`.
        assert!(
            err.contains(&format!("The reply from server 'big' is {size} (")),
            "{err}"
        );
        assert!(
            err.contains("bytes), over its limit of 16 MiB (maxMessageBytes in mcpool's config); it was dropped."),
            "{err}"
        );
        // Still connected, and the next call is answered.
        assert_eq!(pool.server("big").await?["status"], "connected");
        let r = agent.call("big__echo", json!({"text": "still here"})).await?;
        assert_eq!(text(&r), "still here");
    }
    assert_eq!(count_lines(&log, "start"), 3, "no server was restarted");

    // A lower limit of the entry's own.
    let err = big(&agent, "low__big", 2_000_000)
        .await?
        .expect_err("a reply over 1 MiB must fail");
    assert!(
        format!("{err:#}").contains("The reply from server 'low' is 1.9 MiB ("),
        "{err:#}"
    );
    assert!(format!("{err:#}").contains("over its limit of 1 MiB"), "{err:#}");
    let under = big(&agent, "low__big", 900_000).await??;
    assert_eq!(under.len(), 900_000);

    // A raised limit lets a reply over the default through.
    let through = big(&agent, "high__big", 20_000_000).await??;
    assert_eq!(through.len(), 20_000_000);
    assert!(through.bytes().all(|b| b == b'x'));
    Ok(())
}
