//! Keeps a call's progress in wire order and ahead of its result. rmcp
//! hands each incoming notification to a task of its own but delivers a
//! response at once, so a result could overtake the progress sent before
//! it, and progress read in one burst runs in any order (tokio runs the
//! newest spawned task first). The transport wrapper [`Observed`] numbers
//! progress notifications per token in wire order ([`Turn`]); the handler
//! waits for its turn, and counts each once delivered; a call waits for
//! the two counts to meet. The same count tells a call's limit
//! (`callTimeout`) that the server is still at work:
//! [`ProgressLedger::quiet_for`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    GetExtensions, JsonRpcError, JsonRpcMessage, JsonRpcResponse, NumberOrString, ProgressToken, RequestId,
    ServerNotification,
};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::Notify;

use crate::sync::lock;

#[derive(Default)]
pub struct ProgressLedger {
    /// Per token: progress notifications read, and handled.
    counts: Mutex<HashMap<ProgressToken, (u64, u64)>>,
    changed: Notify,
    /// Set for a server's second connection (supervisor/session_upstream.rs):
    /// rmcp numbers progress tokens per connection, and the hub routes them
    /// by server, so that connection's tokens go to the hub renamed.
    hub_prefix: Option<&'static str>,
}

/// A progress notification's place among its token's, in the order the
/// transport read them; [`Observed`] puts it in the notification's
/// extensions, which rmcp hands the handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Turn(u64);

/// How long a progress notification waits for those read before it: one
/// that is stuck (its agent does not read) holds the others back no longer.
pub const TURN_WAIT: Duration = Duration::from_secs(5);

impl ProgressLedger {
    /// A ledger whose tokens reach the hub as `PREFIX` + the token.
    pub fn with_hub_prefix(prefix: &'static str) -> Self {
        ProgressLedger {
            hub_prefix: Some(prefix),
            ..Default::default()
        }
    }

    /// The name under which the hub routes this connection's `token`.
    pub fn hub_token(&self, token: &ProgressToken) -> ProgressToken {
        match self.hub_prefix {
            None => token.clone(),
            Some(prefix) => ProgressToken(rmcp::model::NumberOrString::String(
                format!("{prefix}{}", token.0).into(),
            )),
        }
    }

    fn received(&self, token: &ProgressToken) -> Turn {
        let turn = {
            let mut counts = lock(&self.counts);
            let (received, _) = counts.entry(token.clone()).or_default();
            let turn = Turn(*received);
            *received += 1;
            turn
        };
        self.changed.notify_waiters();
        turn
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

    /// Waits (at most `limit`) until every progress notification for `token`
    /// read before the one in `turn` has been handled, so that they go on in
    /// the order the server sent them.
    pub async fn wait_turn(&self, token: &ProgressToken, turn: Turn, limit: Duration) {
        let wait = async {
            loop {
                let notified = self.changed.notified();
                let due = lock(&self.counts).get(token).is_none_or(|(_, h)| *h >= turn.0);
                if due {
                    return;
                }
                notified.await;
            }
        };
        let _ = tokio::time::timeout(limit, wait).await;
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
        // Turns still waiting on this token need not wait any longer.
        self.changed.notify_waiters();
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
            let mut message = self.inner.receive().await;
            match &mut message {
                Some(JsonRpcMessage::Notification(n)) => {
                    if let ServerNotification::ProgressNotification(p) = &n.notification {
                        let turn = self.ledger.received(&p.params.progress_token);
                        n.notification.extensions_mut().insert(turn);
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

    #[test]
    fn a_second_connections_tokens_reach_the_hub_apart_from_the_firsts() {
        let token = ProgressToken(NumberOrString::Number(3));
        assert_eq!(ProgressLedger::default().hub_token(&token), token);
        let renamed = ProgressLedger::with_hub_prefix("s-").hub_token(&token);
        assert_eq!(renamed, ProgressToken(NumberOrString::String("s-3".into())));
    }

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

    #[tokio::test(start_paused = true)]
    async fn progress_read_in_a_burst_goes_on_in_wire_order() {
        let ledger = Arc::new(ProgressLedger::default());
        let token = ProgressToken(NumberOrString::Number(1));
        let turns: Vec<Turn> = (0..3).map(|_| ledger.received(&token)).collect();
        assert_eq!(turns, [Turn(0), Turn(1), Turn(2)]);
        let delivered = Arc::new(Mutex::new(Vec::new()));
        let began = tokio::time::Instant::now();
        // Started newest first, as tokio runs a burst of rmcp's tasks.
        let mut tasks = Vec::new();
        for (step, turn) in turns.into_iter().enumerate().rev() {
            let (l, t, d) = (ledger.clone(), token.clone(), delivered.clone());
            tasks.push(tokio::spawn(async move {
                l.wait_turn(&t, turn, TURN_WAIT).await;
                lock(&d).push(step);
                l.handled(&t);
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(*lock(&delivered), [0, 1, 2]);
        assert_eq!(began.elapsed(), Duration::ZERO, "no turn waited for its limit");

        // Bounded: a turn whose predecessor is never handled goes on after TURN_WAIT.
        let _lost = ledger.received(&token);
        let next = ledger.received(&token);
        let start = tokio::time::Instant::now();
        ledger.wait_turn(&token, next, TURN_WAIT).await;
        assert_eq!(start.elapsed(), TURN_WAIT);
    }

    #[tokio::test(start_paused = true)]
    async fn a_settled_token_releases_the_turns_still_waiting() {
        let ledger = Arc::new(ProgressLedger::default());
        let token = ProgressToken(NumberOrString::Number(1));
        let _lost = ledger.received(&token);
        let next = ledger.received(&token);
        let (l, t) = (ledger.clone(), token.clone());
        let waiter = tokio::spawn(async move {
            l.wait_turn(&t, next, TURN_WAIT).await;
            tokio::time::Instant::now()
        });
        let start = tokio::time::Instant::now();
        // The call's result came and its wait for the lost step ran out.
        ledger.settle(&token, Duration::from_secs(1)).await;
        assert_eq!(waiter.await.unwrap() - start, Duration::from_secs(1));
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
