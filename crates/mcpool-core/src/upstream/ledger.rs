//! Keeps a call's progress ahead of its result. rmcp hands each incoming
//! notification to a task of its own but delivers a response at once, so a
//! result could overtake the progress sent before it. The transport wrapper
//! [`Observed`] counts progress notifications in wire order; the handler
//! counts them again once delivered; a call waits for the two to meet.
//! The same count tells a call's limit (`callTimeout`) that the server is
//! still at work: [`ProgressLedger::quiet_for`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    JsonRpcError, JsonRpcMessage, JsonRpcResponse, NumberOrString, ProgressToken, RequestId, ServerNotification,
};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::Notify;

use crate::sync::lock;

#[derive(Default)]
pub struct ProgressLedger {
    counts: Mutex<HashMap<ProgressToken, (u64, u64)>>,
    changed: Notify,
}

impl ProgressLedger {
    fn received(&self, token: &ProgressToken) {
        lock(&self.counts).entry(token.clone()).or_default().0 += 1;
        self.changed.notify_waiters();
    }

    fn received_count(&self, token: &ProgressToken) -> u64 {
        lock(&self.counts).get(token).map_or(0, |(r, _)| *r)
    }

    /// Ends once `limit` has passed without a progress notification for
    /// `token`: each one read starts the wait anew.
    pub async fn quiet_for(&self, token: &ProgressToken, limit: Duration) {
        let mut seen = self.received_count(token);
        let mut deadline = tokio::time::Instant::now() + limit;
        loop {
            let notified = self.changed.notified();
            let now_seen = self.received_count(token);
            if now_seen != seen {
                seen = now_seen;
                deadline = tokio::time::Instant::now() + limit;
            }
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => {
                    if self.received_count(token) == seen {
                        return;
                    }
                }
                () = notified => {}
            }
        }
    }

    /// Forgets `token`, for a call that ended without its result.
    pub fn forget(&self, token: &ProgressToken) {
        lock(&self.counts).remove(token);
    }

    /// Marks one progress notification for `token` as handled (sent on or dropped).
    pub fn handled(&self, token: &ProgressToken) {
        lock(&self.counts).entry(token.clone()).or_default().1 += 1;
        self.changed.notify_waiters();
    }

    /// Waits (bounded) until every progress notification read before now for
    /// `token` has been handled, then forgets the token.
    pub async fn settle(&self, token: &ProgressToken, limit: Duration) {
        let wait = async {
            loop {
                let notified = self.changed.notified();
                let done = lock(&self.counts).get(token).is_none_or(|(r, h)| h >= r);
                if done {
                    return;
                }
                notified.await;
            }
        };
        let _ = tokio::time::timeout(limit, wait).await;
        lock(&self.counts).remove(token);
    }
}

/// Whether a reply's id can answer none of mcpool's requests, which rmcp
/// numbers: a string id (`"3"`) is not the number 3, though rmcp would take
/// it for one.
fn answers_nothing(id: &RequestId) -> bool {
    matches!(id, NumberOrString::String(_))
}

/// A transport that notes progress notifications as they are read, and
/// drops replies whose id answers none of mcpool's requests.
pub struct Observed<T> {
    pub inner: T,
    pub ledger: Arc<ProgressLedger>,
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Observed<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let message = self.inner.receive().await;
            match &message {
                Some(JsonRpcMessage::Notification(n)) => {
                    if let ServerNotification::ProgressNotification(p) = &n.notification {
                        self.ledger.received(&p.params.progress_token);
                    }
                }
                Some(JsonRpcMessage::Response(JsonRpcResponse { id, .. }))
                | Some(JsonRpcMessage::Error(JsonRpcError { id: Some(id), .. }))
                    if answers_nothing(id) =>
                {
                    tracing::warn!(
                        "ignored a reply with the id {id:?}: mcpool numbers its requests, and a JSON-RPC id answers only a request of the same type"
                    );
                    continue;
                }
                _ => {}
            }
            return message;
        }
    }

    fn close(&mut self) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn settle_waits_for_every_received_progress() {
        let ledger = Arc::new(ProgressLedger::default());
        let token = ProgressToken(NumberOrString::Number(1));
        ledger.received(&token);
        ledger.received(&token);
        let l = ledger.clone();
        let t = token.clone();
        let waiter = tokio::spawn(async move { l.settle(&t, Duration::from_secs(5)).await });
        ledger.handled(&token);
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "one progress is still on its way");
        ledger.handled(&token);
        tokio::time::timeout(Duration::from_millis(10), waiter)
            .await
            .unwrap()
            .unwrap();
        // Bounded: a progress that never arrives does not hold a call forever.
        ledger.received(&token);
        let start = tokio::time::Instant::now();
        ledger.settle(&token, Duration::from_secs(1)).await;
        assert_eq!(start.elapsed(), Duration::from_secs(1));
    }

    #[test]
    fn only_a_numbered_reply_can_answer() {
        assert!(answers_nothing(&NumberOrString::String("3".into())));
        assert!(!answers_nothing(&NumberOrString::Number(3)));
    }

    #[tokio::test(start_paused = true)]
    async fn quiet_for_restarts_at_each_progress_of_its_own_call() {
        let ledger = Arc::new(ProgressLedger::default());
        let token = ProgressToken(NumberOrString::Number(1));
        let other = ProgressToken(NumberOrString::Number(2));
        let start = tokio::time::Instant::now();
        let l = ledger.clone();
        let t = token.clone();
        let waiter = tokio::spawn(async move { l.quiet_for(&t, Duration::from_secs(10)).await });
        tokio::time::sleep(Duration::from_secs(6)).await;
        ledger.received(&token);
        tokio::time::sleep(Duration::from_secs(6)).await;
        // Another call's progress says nothing of this one.
        ledger.received(&other);
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert!(!waiter.is_finished(), "10 s have not passed since the progress at 6 s");
        waiter.await.unwrap();
        assert_eq!(start.elapsed(), Duration::from_secs(16));
        // Without any progress it ends after the limit.
        let start = tokio::time::Instant::now();
        ledger.quiet_for(&other, Duration::from_secs(2)).await;
        assert_eq!(start.elapsed(), Duration::from_secs(2));
        ledger.forget(&token);
        assert_eq!(ledger.received_count(&token), 0);
    }
}
