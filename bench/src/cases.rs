//! One measured case: calls, timing and CPU marks.

use crate::*;
use anyhow::{anyhow, bail};
use rmcp::model::{CallToolRequestParams, ClientRequest, PingRequest};
use rmcp::service::{Peer, RoleClient};
use serde_json::{Map, Value};
use std::time::{Duration, Instant};

/// What a measured call does.
#[derive(Clone)]

pub(crate) enum Op {
    Echo { tool: String, key: &'static str },
    Ping,
}

pub(crate) async fn call(peer: &Peer<RoleClient>, op: &Op, i: usize) -> anyhow::Result<()> {
    let fut = async {
        match op {
            Op::Echo { tool, key } => {
                let mut args = Map::new();
                args.insert((*key).to_string(), Value::String(format!("hello {i}")));
                let result = peer
                    .call_tool(CallToolRequestParams::new(tool.clone()).with_arguments(args))
                    .await?;
                if result.is_error == Some(true) {
                    bail!("{tool} returned an error: {:?}", result.content);
                }
            }
            Op::Ping => {
                peer.send_request(ClientRequest::PingRequest(PingRequest::default()))
                    .await?;
            }
        }
        Ok(())
    };
    tokio::time::timeout(CALL_LIMIT, fut)
        .await
        .map_err(|_| anyhow!("a call took more than {CALL_LIMIT:?}"))?
}

/// One latency case: the peers its workers use and the processes whose CPU
/// time is charged to it.
pub(crate) struct Case {
    pub(crate) upstream: &'static str,
    pub(crate) path: &'static str,
    pub(crate) what: &'static str,
    pub(crate) op: Op,
    /// One per worker; sequential runs use the first.
    pub(crate) peers: Vec<Peer<RoleClient>>,
    pub(crate) mcpool_pid: Option<u32>,
    pub(crate) upstream_pid: Option<u32>,
}

#[derive(Default)]
pub(crate) struct CaseResult {
    pub(crate) micros: Vec<f64>,
    pub(crate) block_medians: Vec<f64>,
    pub(crate) wall: Duration,
    pub(crate) cpu_self_ns: u64,
    pub(crate) cpu_mcpool_ns: u64,
    pub(crate) cpu_upstream_ns: u64,
}

pub(crate) struct CpuMark {
    pub(crate) me: u64,
    pub(crate) mcpool: u64,
    pub(crate) upstream: u64,
}

impl Case {
    pub(crate) fn cpu_mark(&self) -> CpuMark {
        CpuMark {
            me: sys::cpu_ns(None),
            mcpool: self.mcpool_pid.map(|p| sys::cpu_ns(Some(p))).unwrap_or(0),
            upstream: self.upstream_pid.map(|p| sys::cpu_ns(Some(p))).unwrap_or(0),
        }
    }

    /// Runs `per_worker` calls on each of `workers` peers at once; returns
    /// every call's latency in µs.
    pub(crate) async fn run_block(
        &self,
        workers: usize,
        per_worker: usize,
        result: Option<&mut CaseResult>,
    ) -> anyhow::Result<()> {
        let before = self.cpu_mark();
        let started = Instant::now();
        let mut set = tokio::task::JoinSet::new();
        for peer in self.peers.iter().take(workers) {
            let peer = peer.clone();
            let op = self.op.clone();
            set.spawn(async move {
                let mut micros = Vec::with_capacity(per_worker);
                for i in 0..per_worker {
                    let t = Instant::now();
                    call(&peer, &op, i).await?;
                    micros.push(t.elapsed().as_secs_f64() * 1e6);
                }
                anyhow::Ok(micros)
            });
        }
        let mut block = Vec::with_capacity(workers * per_worker);
        while let Some(joined) = set.join_next().await {
            block.extend(joined??);
        }
        let wall = started.elapsed();
        let after = self.cpu_mark();
        if let Some(r) = result {
            r.wall += wall;
            r.cpu_self_ns += after.me.saturating_sub(before.me);
            r.cpu_mcpool_ns += after.mcpool.saturating_sub(before.mcpool);
            r.cpu_upstream_ns += after.upstream.saturating_sub(before.upstream);
            r.block_medians.push(stats::median(&block));
            r.micros.extend(block);
        }
        Ok(())
    }
}

/// Runs every case `total` calls per worker, interleaved in blocks of `block`.
pub(crate) async fn run_interleaved(
    cases: &[Case],
    workers: usize,
    warmup: usize,
    total: usize,
    block: usize,
) -> anyhow::Result<Vec<CaseResult>> {
    for case in cases {
        case.run_block(workers, warmup, None).await?;
    }
    let mut results: Vec<CaseResult> = cases.iter().map(|_| CaseResult::default()).collect();
    let block = block.max(1);
    let mut done = 0;
    while done < total {
        let n = block.min(total - done);
        for (case, result) in cases.iter().zip(results.iter_mut()) {
            case.run_block(workers, n, Some(result)).await?;
        }
        done += n;
    }
    Ok(results)
}

pub(crate) struct LatencyReport {
    pub(crate) cases: Vec<(String, String, String)>,
    pub(crate) results: Vec<CaseResult>,
}
