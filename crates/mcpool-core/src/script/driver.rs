//! A run from async code: the engine on a thread of its own (it blocks
//! while it waits for answers, and a runaway script must not hold a tokio
//! worker), its calls made here by the caller's closure, concurrently.
//! Dropping the run's future stops the engine at its next instruction.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Instant;

use futures::stream::{FuturesUnordered, StreamExt};
use serde_json::{Map, Value};
use tokio::sync::{mpsc as tokio_mpsc, oneshot};

use super::engine::{self, Host};
use super::{Answer, Code, Failure, Limits, Report};

/// The engine thread's stack: room for QuickJS's own limit
/// (`engine::STACK`) and the host functions below it.
const THREAD_STACK: usize = 8 * 1024 * 1024;

/// Runs at once in this process, each with its own thread and up to
/// [`Limits::memory`]; more wait their turn within their own wall time.
const RUNS_AT_ONCE: usize = 16;
static RUNS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(RUNS_AT_ONCE);

/// Runs `code` with `names` as its `tools`; each call the script makes is
/// `call(name, arguments)`.
pub async fn run<F, Fut>(code: String, names: Vec<String>, limits: Limits, call: F) -> Report
where
    F: Fn(String, Map<String, Value>) -> Fut,
    Fut: Future<Output = Answer>,
{
    let started = Instant::now();
    let Ok(Ok(_turn)) = tokio::time::timeout(limits.timeout, RUNS.acquire()).await else {
        return Report {
            outcome: Err(Failure {
                code: Code::Timeout,
                message: format!("mcpool was running {RUNS_AT_ONCE} scripts already for the whole of this run's time"),
                line: None,
            }),
            logs: Vec::new(),
            calls: 0,
            elapsed: started.elapsed(),
            memory: 0,
        };
    };
    let (calls, mut requested) = tokio_mpsc::unbounded_channel();
    let (answer, answers) = mpsc::channel();
    let (done, mut finished) = oneshot::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let engine_stop = stop.clone();
    let spawned = std::thread::Builder::new()
        .name("mcpool-script".into())
        .stack_size(THREAD_STACK)
        .spawn(move || {
            let mut host = Channels { calls, answers };
            let report = engine::run(&code, &names, limits, engine_stop, &mut host);
            let _ = done.send(report);
        });
    if let Err(e) = spawned {
        return Report {
            outcome: Err(Failure {
                code: Code::Runtime,
                message: format!("the script engine could not start: {e}"),
                line: None,
            }),
            logs: Vec::new(),
            calls: 0,
            elapsed: started.elapsed(),
            memory: 0,
        };
    }
    // Set when this future ends, finished or dropped: the engine stops.
    let _stop = StopOnDrop(stop);
    let call = &call;
    let mut in_flight = FuturesUnordered::new();
    loop {
        tokio::select! {
            report = &mut finished => {
                return report.unwrap_or_else(|_| Report {
                    outcome: Err(Failure { code: Code::Runtime, message: "the script engine ended without an answer".into(), line: None }),
                    logs: Vec::new(),
                    calls: 0,
                    elapsed: started.elapsed(),
                    memory: 0,
                });
            }
            Some((id, name, arguments)) = requested.recv() => {
                in_flight.push(async move { (id, call(name, arguments).await) });
            }
            Some((id, answered)) = in_flight.next(), if !in_flight.is_empty() => {
                let _ = answer.send((id, answered));
            }
        }
    }
}

struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// The engine's [`Host`]: calls out over one channel, answers back over another.
struct Channels {
    calls: tokio_mpsc::UnboundedSender<(u64, String, Map<String, Value>)>,
    answers: mpsc::Receiver<(u64, Answer)>,
}

impl Host for Channels {
    fn start(&mut self, id: u64, name: String, arguments: Map<String, Value>) {
        let _ = self.calls.send((id, name, arguments));
    }

    fn next(&mut self, deadline: Instant) -> Option<(u64, Answer)> {
        let wait = deadline.checked_duration_since(Instant::now())?;
        self.answers.recv_timeout(wait).ok()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::{json, Map};
    use tokio::sync::watch;

    use super::*;

    fn limits(timeout: Duration) -> Limits {
        Limits {
            timeout,
            ..Limits::default()
        }
    }

    /// Sixteen runs at once; a seventeenth waits for a turn within its own
    /// wall time, and ends as a timeout that says why when none comes. The
    /// only test in this binary that runs scripts through the driver, so
    /// no other test holds a turn.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_run_past_sixteen_at_once_waits_its_turn_within_its_time() {
        let (release, held) = watch::channel(false);
        let (started, mut starts) = tokio_mpsc::unbounded_channel::<()>();
        let blocking = |held: watch::Receiver<bool>, started: tokio_mpsc::UnboundedSender<()>| {
            move |_name: String, _args: Map<String, Value>| {
                let mut held = held.clone();
                let started = started.clone();
                async move {
                    let _ = started.send(());
                    let _ = held.wait_for(|go| *go).await;
                    Answer::Value(json!(1))
                }
            }
        };
        let mut runs = Vec::new();
        for _ in 0..RUNS_AT_ONCE {
            let call = blocking(held.clone(), started.clone());
            runs.push(tokio::spawn(run(
                "return await tools.wait({})".into(),
                vec!["wait".into()],
                limits(Duration::from_secs(60)),
                call,
            )));
        }
        for _ in 0..RUNS_AT_ONCE {
            starts.recv().await.unwrap();
        }
        let turned_away = run(
            "return 2".into(),
            Vec::new(),
            limits(Duration::from_millis(200)),
            |_name: String, _args: Map<String, Value>| async { Answer::Value(json!(0)) },
        )
        .await;
        let failure = turned_away.outcome.unwrap_err();
        assert_eq!(failure.code, Code::Timeout);
        assert!(
            failure.message.contains("running 16 scripts already"),
            "{}",
            failure.message
        );

        // One waiting within its time gets the first turn freed.
        let waiting = tokio::spawn(run(
            "return 3".into(),
            Vec::new(),
            limits(Duration::from_secs(60)),
            |_name: String, _args: Map<String, Value>| async { Answer::Value(json!(0)) },
        ));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "a seventeenth run started while sixteen ran");
        release.send(true).unwrap();
        for r in runs {
            assert_eq!(r.await.unwrap().outcome.unwrap(), json!(1));
        }
        assert_eq!(waiting.await.unwrap().outcome.unwrap(), json!(3));
    }
}
