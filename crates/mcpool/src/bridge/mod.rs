//! `mcpool stdio`: a stdio MCP server that relays every message to the
//! running instance's endpoint, for clients that only spawn stdio servers,
//! and keeps the agent's session while mcpool restarts.
//!
//! `relay` decides (no I/O); this module drives it: stdin lines in, stdout
//! lines out, one session task at a time on mcpool (`http`), one attempt at
//! a time to open the next session, and a task per stateless (2026-07-28)
//! request (`revision`), which needs no session.

mod http;
mod relay;
mod revision;
mod vocabulary;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use mcpool_core::backoff::Backoff;
use mcpool_core::service::Setup;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::task::AbortOnDropHandle;

use self::http::{SendError, Sent, Upstream};
use self::relay::{Attempt, Connect, Effect, Failure, Policy, Relay};
use crate::{client, Instance};

/// Reconnect attempts: 100 ms after the first failure, doubling up to 2 s.
const FIRST_RETRY: Duration = Duration::from_millis(100);
const MAX_RETRY: Duration = Duration::from_secs(2);
/// One attempt (connect, initialize, initialized) ends within this.
const ATTEMPT_LIMIT: Duration = Duration::from_secs(10);
const CLOSE_LIMIT: Duration = Duration::from_secs(2);
/// mcpool takes a message (answers the POST's headers) within this.
const SEND_LIMIT: Duration = Duration::from_secs(30);

#[derive(clap::Args)]
pub struct StdioArgs {
    #[command(flatten)]
    pub instance: Instance,
    /// Seconds a request waits for mcpool to come back after it went away
    /// (and, at start, for an instance to start) before it fails.
    #[arg(long, env = "MCPOOL_STDIO_WAIT", default_value_t = 30, value_name = "SECONDS")]
    pub wait: u64,
    /// The tool listing the agent gets (`all`, `search` or `auto`) over the
    /// config's `toolListing`, as `mcpool connect` writes it per client.
    #[arg(long, value_name = "MODE", value_parser = ["all", "search", "auto"])]
    pub tool_listing: Option<String>,
}

/// What a session's readers report, tagged with the session's generation
/// so that news from a replaced session is ignored.
enum Event {
    Message(u64, Value),
    /// A request's answer stream ended (`None`) or mcpool refused it with
    /// an HTTP error (the sentence).
    RequestEnded(u64, Value, Option<String>),
    /// The same for stateless requests, which belong to no session (each
    /// exchange numbered: an agent may reuse an id once answered).
    StatelessMessage(Value),
    StatelessEnded(u64, Value, Option<String>),
    /// This stateless request never reached mcpool.
    StatelessUndelivered(u64, Value, Failure),
}

struct Live {
    generation: u64,
    upstream: Arc<Upstream>,
    queue: mpsc::UnboundedSender<Value>,
    task: AbortOnDropHandle<Ended>,
}

/// How a session task ends: why, and the messages that never left (the
/// one refused, then its queue, which the driver drains).
struct Ended {
    failure: Failure,
    unsent: Vec<Value>,
    queue: mpsc::UnboundedReceiver<Value>,
}

struct Done {
    attempt: Attempt,
    upstream: Option<Upstream>,
    initialized: bool,
    token: String,
}

pub async fn run(args: StdioArgs) -> anyhow::Result<ExitCode> {
    let addr = args.instance.listen;
    let mcp: Arc<str> = match &args.tool_listing {
        Some(mode) => format!("/mcp?{}={mode}", mcpool_core::search::listing::URL_PARAM).into(),
        None => "/mcp".into(),
    };
    // A token from the environment is fixed; one from the keyring is read
    // again when the instance refuses it (it may have been renewed).
    let setup = args.instance.setup.clone();
    let mut token = client::token_or_create(&setup).await?;
    let http_client = http::client()?;
    // Stateless requests under way, by id (as JSON text), with their
    // exchange's number: dropping one ends its exchange.
    let mut stateless: HashMap<String, (u64, AbortOnDropHandle<()>)> = HashMap::new();
    let mut exchanges = 0u64;
    let policy = Policy {
        backoff: Backoff::new(FIRST_RETRY, MAX_RETRY)?,
        wait: Duration::from_secs(args.wait),
    };
    let mut relay = Relay::new(addr.to_string(), policy, Instant::now());
    let (events_tx, mut events) = mpsc::unbounded_channel::<Event>();
    let mut attempts: JoinSet<Done> = JoinSet::new();
    let mut live: Option<Live> = None;
    let mut generation = 0u64;
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    let mut stdout = tokio::io::stdout();
    let mut effects = relay.tick(Instant::now());
    loop {
        for effect in effects.drain(..) {
            match effect {
                Effect::ToAgent(message) => {
                    let mut line = serde_json::to_vec(&message)?;
                    line.push(b'\n');
                    stdout.write_all(&line).await?;
                    stdout.flush().await?;
                }
                Effect::ToUpstream(message) => {
                    if let Some(live) = &live {
                        let _ = live.queue.send(message);
                    }
                }
                Effect::Stateless(message) => {
                    let upstream = Upstream::new(http_client.clone(), addr, &mcp, token.clone());
                    let id = message.get("id").map(Value::to_string).unwrap_or_default();
                    exchanges += 1;
                    let task = tokio::spawn(send_stateless(exchanges, upstream, message, addr, events_tx.clone()));
                    stateless.insert(id, (exchanges, AbortOnDropHandle::new(task)));
                }
                Effect::Abandon(id) => {
                    stateless.remove(&id.to_string());
                }
                Effect::Connect(connect) => {
                    let token = token.clone();
                    attempts.spawn(attempt(
                        http_client.clone(),
                        addr,
                        mcp.clone(),
                        token,
                        setup.clone(),
                        connect,
                    ));
                }
                Effect::Log(line) => eprintln!("mcpool stdio: {line}"),
                Effect::Exit(line) => {
                    eprintln!("mcpool stdio: {line}");
                    let _ = stdout.flush().await;
                    // Not a return: the runtime would wait for the blocking
                    // stdin read, which ends only when the client closes it.
                    std::process::exit(1);
                }
            }
        }
        let deadline = relay.next_deadline();
        effects = tokio::select! {
            line = stdin.next_line() => match line {
                Ok(Some(line)) if line.trim().is_empty() => Vec::new(),
                Ok(Some(line)) => match serde_json::from_str::<Value>(&line) {
                    Ok(message) => relay.on_agent(message, Instant::now()),
                    Err(e) => {
                        eprintln!("mcpool stdio: ignored a line from the client that is not JSON: {e}");
                        Vec::new()
                    }
                },
                Ok(None) => break,
                Err(e) => {
                    eprintln!("mcpool stdio: cannot read from the client: {e}");
                    break;
                }
            },
            Some(event) = events.recv() => {
                // A stateless exchange that ended is no longer one to abandon.
                let ended = match &event {
                    Event::StatelessEnded(n, id, _) => Some((*n, id.to_string())),
                    Event::StatelessUndelivered(n, message, _) => {
                        Some((*n, message.get("id").map(Value::to_string).unwrap_or_default()))
                    }
                    _ => None,
                };
                if let Some((n, id)) = ended {
                    if stateless.get(&id).is_some_and(|(current, _)| *current == n) {
                        stateless.remove(&id);
                    }
                }
                on_event(&mut relay, live.as_ref(), event)
            },
            ended = session_end(&mut live) => {
                let current = live.take();
                // What the readers sent before the session ended comes first.
                let mut out = Vec::new();
                while let Ok(event) = events.try_recv() {
                    out.extend(on_event(&mut relay, current.as_ref(), event));
                }
                let (failure, unsent) = match ended {
                    Ok(Ended { failure, mut unsent, mut queue }) => {
                        while let Ok(message) = queue.try_recv() {
                            unsent.push(message);
                        }
                        (failure, unsent)
                    }
                    Err(e) => (Failure::Other(e.to_string()), Vec::new()),
                };
                out.extend(relay.session_lost(failure, unsent, Instant::now()));
                out
            },
            Some(done) = attempts.join_next(), if !attempts.is_empty() => {
                let done = done.unwrap_or_else(|e| Done {
                    attempt: Attempt::Failed(Failure::Other(e.to_string())),
                    upstream: None,
                    initialized: false,
                    token: token.clone(),
                });
                token = done.token;
                if let Some(upstream) = done.upstream {
                    generation += 1;
                    live = Some(start_session(generation, upstream, done.initialized, addr, events_tx.clone()));
                }
                relay.attempt_done(done.attempt, Instant::now())
            },
            () = sleep_until(deadline), if deadline.is_some() => relay.tick(Instant::now()),
        };
    }
    if let Some(live) = live {
        let _ = tokio::time::timeout(CLOSE_LIMIT, live.upstream.close()).await;
    }
    Ok(ExitCode::SUCCESS)
}

fn on_event(relay: &mut Relay, live: Option<&Live>, event: Event) -> Vec<Effect> {
    let current = live.map(|l| l.generation);
    match event {
        Event::Message(g, message) if Some(g) == current => relay.on_upstream(message),
        Event::RequestEnded(g, id, why) if Some(g) == current => relay.request_ended(&id, why),
        Event::StatelessMessage(message) => relay.on_upstream(message),
        Event::StatelessEnded(_, id, why) => relay.request_ended(&id, why),
        Event::StatelessUndelivered(_, message, failure) => {
            relay.stateless_undelivered(message, failure, Instant::now())
        }
        _ => Vec::new(),
    }
}

/// One stateless request: POSTed on its own, its answers relayed until its
/// stream ends.
async fn send_stateless(
    n: u64,
    upstream: Upstream,
    message: Value,
    addr: SocketAddr,
    events: mpsc::UnboundedSender<Event>,
) {
    use futures::StreamExt;
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let sent = tokio::time::timeout(SEND_LIMIT, upstream.send_stateless(&message))
        .await
        .unwrap_or_else(|_| Err(SendError::Broken("mcpool did not take the message in time".into())));
    let why = match sent {
        Ok(Sent::Messages(mut answers)) => {
            while let Some(Ok(answer)) = answers.next().await {
                let _ = events.send(Event::StatelessMessage(answer));
            }
            None
        }
        Ok(Sent::Accepted) | Err(SendError::Broken(_)) => None,
        Err(SendError::Status(status)) => Some(format!("mcpool at {addr} answered HTTP {status} to this request")),
        Err(SendError::Undelivered(failure)) => {
            let _ = events.send(Event::StatelessUndelivered(n, message, failure));
            return;
        }
    };
    let _ = events.send(Event::StatelessEnded(n, id, why));
}

/// The end of the live session's task; never, without one.
async fn session_end(live: &mut Option<Live>) -> Result<Ended, tokio::task::JoinError> {
    match live {
        Some(live) => (&mut live.task).await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    if let Some(at) = deadline {
        tokio::time::sleep_until(at).await;
    }
}

/// One attempt, bounded; a refused token is read again once (unless it
/// came from the environment).
async fn attempt(
    http_client: reqwest::Client,
    addr: SocketAddr,
    mcp: Arc<str>,
    mut token: String,
    setup: Setup,
    connect: Connect,
) -> Done {
    let once = |token: String| {
        let connect = connect.clone();
        let http_client = http_client.clone();
        let mcp = mcp.clone();
        async move {
            tokio::time::timeout(ATTEMPT_LIMIT, http::attempt(http_client, addr, &mcp, token, &connect))
                .await
                .unwrap_or((
                    Attempt::Failed(Failure::Other("mcpool did not answer in time".into())),
                    None,
                ))
        }
    };
    let (mut outcome, mut upstream) = once(token.clone()).await;
    if outcome == Attempt::Failed(Failure::Unauthorized) && setup.fixed_token().is_none() {
        if let Ok(Some(fresh)) = client::load_token(&setup, false).await {
            if fresh != token {
                token = fresh;
                (outcome, upstream) = once(token.clone()).await;
            }
        }
    }
    Done {
        attempt: outcome,
        upstream,
        initialized: connect.initialized,
        token,
    }
}

fn start_session(
    generation: u64,
    upstream: Upstream,
    initialized: bool,
    addr: SocketAddr,
    events: mpsc::UnboundedSender<Event>,
) -> Live {
    let upstream = Arc::new(upstream);
    let (queue, rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(session(generation, upstream.clone(), rx, initialized, addr, events));
    Live {
        generation,
        upstream,
        queue,
        task: AbortOnDropHandle::new(task),
    }
}

/// Sends the agent's messages one after the other (each once mcpool took
/// the previous: the order is the agent's), and reads every answer stream
/// and the session's event stream. It ends when the event stream ends or a
/// message is refused, after the send under way has its outcome: a request
/// is then either known to have arrived or known not to have. Dropping it
/// ends the readers.
async fn session(
    generation: u64,
    upstream: Arc<Upstream>,
    mut queue: mpsc::UnboundedReceiver<Value>,
    initialized: bool,
    addr: SocketAddr,
    events: mpsc::UnboundedSender<Event>,
) -> Ended {
    // Readers end with `None`, the event stream with why the session did.
    let mut readers: JoinSet<Option<Failure>> = JoinSet::new();
    if initialized {
        readers.spawn(watch(generation, upstream.clone(), events.clone()));
    }
    loop {
        let message = tokio::select! {
            biased;
            Some(done) = readers.join_next(), if !readers.is_empty() => match done {
                Ok(Some(failure)) => return Ended { failure, unsent: Vec::new(), queue },
                _ => continue,
            },
            message = queue.recv() => match message {
                Some(message) => message,
                None => {
                    let failure = Failure::Other("the bridge closed the session".into());
                    return Ended { failure, unsent: Vec::new(), queue };
                }
            },
        };
        let id = message.get("method").and(message.get("id")).cloned();
        let opens_events = message.get("method").and_then(Value::as_str) == Some("notifications/initialized");
        let sent = tokio::time::timeout(SEND_LIMIT, upstream.send(&message))
            .await
            .unwrap_or_else(|_| Err(SendError::Broken("mcpool did not take the message in time".into())));
        match sent {
            Ok(Sent::Accepted) => {
                if opens_events {
                    readers.spawn(watch(generation, upstream.clone(), events.clone()));
                }
            }
            Ok(Sent::Messages(mut answers)) => {
                let events = events.clone();
                readers.spawn(async move {
                    use futures::StreamExt;
                    while let Some(Ok(message)) = answers.next().await {
                        let _ = events.send(Event::Message(generation, message));
                    }
                    if let Some(id) = id {
                        let _ = events.send(Event::RequestEnded(generation, id, None));
                    }
                    None
                });
            }
            Err(SendError::Undelivered(failure)) => {
                return Ended {
                    failure,
                    unsent: vec![message],
                    queue,
                }
            }
            Err(SendError::Status(status)) => {
                if let Some(id) = id {
                    let why = format!("mcpool at {addr} answered HTTP {status} to this request");
                    let _ = events.send(Event::RequestEnded(generation, id, Some(why)));
                }
            }
            Err(SendError::Broken(_)) => {
                if let Some(id) = id {
                    let _ = events.send(Event::RequestEnded(generation, id, None));
                }
            }
        }
    }
}

/// The session's event stream, until it ends (`Some(why)`); `None` when
/// mcpool offers none.
async fn watch(generation: u64, upstream: Arc<Upstream>, events: mpsc::UnboundedSender<Event>) -> Option<Failure> {
    use futures::StreamExt;
    match upstream.events().await {
        Ok(mut stream) => {
            while let Some(Ok(message)) = stream.next().await {
                let _ = events.send(Event::Message(generation, message));
            }
            Some(Failure::Other("the event stream closed".into()))
        }
        Err(SendError::Status(405)) => None,
        Err(SendError::Undelivered(failure)) => Some(failure),
        Err(SendError::Status(status)) => Some(Failure::Other(format!("HTTP {status} to the event stream"))),
        Err(SendError::Broken(e)) => Some(Failure::Other(e)),
    }
}
