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

use rmcp::model::{ClientRequest, ErrorCode, JsonRpcMessage, ProtocolVersion, RequestId};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

pub struct LegacyProbe<T> {
    pub inner: T,
    /// The id of the probe, until its answer arrives.
    probe: Option<RequestId>,
}

impl<T> LegacyProbe<T> {
    pub fn new(inner: T) -> Self {
        LegacyProbe { inner, probe: None }
    }
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
            if matches!(r.request, ClientRequest::DiscoverRequest(_)) {
                self.probe = Some(r.id.clone());
            }
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let mut message = self.inner.receive().await;
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
        message
    }

    fn close(&mut self) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
}
