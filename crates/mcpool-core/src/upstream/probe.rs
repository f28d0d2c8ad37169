//! The answer to the `server/discover` probe from a server that has only
//! session revisions: [`LegacyProbe`] makes rmcp fall back to `initialize`.
//!
//! rmcp's automatic lifecycle falls back when the probe gets an error that a
//! 2026-07-28 server would not give (method not found, a bare 400), but an
//! `Unsupported protocol version` (-32022) error ends the attempt, even when
//! the versions it lists are all session revisions: the answer of a server
//! built on a 2026-07-28 SDK and capped at an older revision (rmcp's own
//! servers do this). Such a server speaks `initialize`, so the error is
//! handed to rmcp as "method not found" and the same connection goes on
//! with `initialize`.
//!
//! A local server that says nothing at all to the probe (an SDK that drops
//! what it does not know before `initialize`) would cost rmcp's 10 s at
//! every connect: with [`LegacyProbe::with_silence`], a probe unanswered
//! for that long is handed to rmcp as "method not found" too, and a late
//! answer is dropped. Should the server then prove to be a 2026-07-28 one
//! (it answered the probe after all, or refuses `initialize` with -32022:
//! it was only slow to start), [`Verdict::modern_after_silence`] says so,
//! and the caller connects again with `server/discover` alone.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    ClientRequest, ErrorCode, ErrorData, JsonRpcError, JsonRpcMessage, ProtocolVersion, RequestId, ServerResult,
};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::time::Instant;

pub struct LegacyProbe<T> {
    pub inner: T,
    /// The id of the probe, until its answer arrives.
    probe: Option<RequestId>,
    /// How long the probe may go unanswered (none: as long as rmcp waits).
    silence: Option<Duration>,
    /// When the probe is due to count as unanswered.
    deadline: Option<Instant>,
    /// A probe handed to rmcp as unanswered, whose late answer is dropped.
    abandoned: Option<RequestId>,
    /// The `initialize` sent after an abandoned probe.
    fallback: Option<RequestId>,
    verdict: Verdict,
}

/// What a connection's probe learned, shared with whoever made it.
#[derive(Debug, Clone, Default)]
pub struct Verdict {
    modern_after_silence: Arc<AtomicBool>,
}

impl Verdict {
    /// The probe went unanswered, and the server turned out to speak
    /// 2026-07-28 after all.
    pub fn modern_after_silence(&self) -> bool {
        self.modern_after_silence.load(Ordering::SeqCst)
    }

    fn modern(&self) {
        self.modern_after_silence.store(true, Ordering::SeqCst);
    }
}

impl<T> LegacyProbe<T> {
    pub fn new(inner: T) -> Self {
        LegacyProbe {
            inner,
            probe: None,
            silence: None,
            deadline: None,
            abandoned: None,
            fallback: None,
            verdict: Verdict::default(),
        }
    }

    /// A probe unanswered for `silence` counts as "method not found"; what
    /// came of it is told to `verdict`.
    pub fn with_silence(mut self, silence: Duration, verdict: Verdict) -> Self {
        self.silence = Some(silence);
        self.verdict = verdict;
        self
    }
}

/// The error rmcp reads as "a session server": the same as a server that
/// does not know the method.
fn unanswered(id: RequestId) -> RxJsonRpcMessage<RoleClient> {
    JsonRpcMessage::Error(JsonRpcError::new(
        Some(id),
        ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            "server/discover went unanswered; trying initialize",
            None,
        ),
    ))
}

/// Whether `data` (of a -32022 error) lists versions and none of them is
/// stateless: the server has only `initialize` revisions.
fn only_session_revisions(data: Option<&serde_json::Value>) -> bool {
    let Some(list) = data.and_then(|d| d.get("supported")).and_then(|s| s.as_array()) else {
        return false;
    };
    !list.is_empty()
        && list
            .iter()
            .all(|v| v.as_str().is_some_and(|v| v < ProtocolVersion::NO_INITIALIZE.as_str()))
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for LegacyProbe<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Request(r) = &item {
            match r.request {
                ClientRequest::DiscoverRequest(_) => {
                    self.probe = Some(r.id.clone());
                    self.deadline = self.silence.map(|s| Instant::now() + s);
                }
                ClientRequest::InitializeRequest(_) if self.abandoned.is_some() => {
                    self.fallback = Some(r.id.clone());
                }
                _ => {}
            }
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let mut message = loop {
            let message = match (self.probe.is_some(), self.deadline) {
                // rmcp's own service loop polls `receive` in a `select!` too:
                // the inner read keeps a partial line for the next call.
                (true, Some(deadline)) => tokio::select! {
                    message = self.inner.receive() => message,
                    () = tokio::time::sleep_until(deadline) => {
                        self.deadline = None;
                        let Some(probe) = self.probe.take() else { continue };
                        self.abandoned = Some(probe.clone());
                        return Some(unanswered(probe));
                    }
                },
                _ => self.inner.receive().await,
            };
            if !self.after_silence(message.as_ref()) {
                break message;
            }
        };
        let Some(probe) = &self.probe else {
            return message;
        };
        match &mut message {
            Some(JsonRpcMessage::Error(e)) if e.id.as_ref() == Some(probe) => {
                self.probe = None;
                if e.error.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
                    && only_session_revisions(e.error.data.as_ref())
                {
                    e.error.code = ErrorCode::METHOD_NOT_FOUND;
                }
            }
            Some(JsonRpcMessage::Response(r)) if &r.id == probe => self.probe = None,
            _ => {}
        }
        if self.probe.is_none() {
            self.deadline = None;
        }
        message
    }

    fn close(&mut self) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

impl<T> LegacyProbe<T> {
    /// Notes what a message says after an abandoned probe; `true` when it
    /// is the probe's late answer, which rmcp must not see.
    fn after_silence(&mut self, message: Option<&RxJsonRpcMessage<RoleClient>>) -> bool {
        let Some(abandoned) = &self.abandoned else {
            return false;
        };
        match message {
            Some(JsonRpcMessage::Response(r)) if &r.id == abandoned => {
                if matches!(r.result, ServerResult::DiscoverResult(_)) {
                    self.verdict.modern();
                }
                true
            }
            Some(JsonRpcMessage::Error(e)) if e.id.as_ref() == Some(abandoned) => true,
            Some(JsonRpcMessage::Error(e))
                if e.id.is_some()
                    && e.id == self.fallback
                    && e.error.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION =>
            {
                self.verdict.modern();
                false
            }
            _ => false,
        }
    }
}

#[cfg(test)]
#[path = "probe_tests.rs"]
mod tests;
