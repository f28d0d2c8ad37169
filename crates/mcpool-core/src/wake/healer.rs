//! Healing after sleep or a network change (rule 11): for each remote server
//! that was connected, wait until the network can reach its host (probing,
//! never dialling MCP), reset its backoff, and reconnect it, retrying
//! transient failures with backoff within a bounded window. All servers heal
//! in one batch, each with a little jitter.

use std::future::Future;
use std::time::Duration;

use rand::Rng;
use tokio::time::Instant;

use super::gate::Reachability;

#[derive(Debug, Clone, Copy)]
pub struct HealConfig {
    /// How long transient failures are retried after a wake.
    pub window: Duration,
    /// How often the gate is probed while the network is away.
    pub poll: Duration,
    /// Upper bound of the random delay before each reconnect.
    pub jitter: Duration,
}

impl Default for HealConfig {
    fn default() -> Self {
        HealConfig {
            window: Duration::from_secs(300),
            poll: Duration::from_millis(500),
            jitter: Duration::from_millis(200),
        }
    }
}

/// What a reconnect attempt tells the healer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Retry {
    /// A transient failure: try again after this long.
    After(Duration),
    /// Permanent, needs sign-in, or disabled: stop.
    Never,
}

/// One server as the healer sees it.
pub trait Patient: Send + Sync {
    fn name(&self) -> &str;
    /// Host and port to probe; `None` for a local server.
    fn target(&self) -> Option<(String, u16)>;
    /// Shows the server as waiting for the network, tools kept.
    fn waiting(&self, reason: &str);
    fn reset_backoff(&self);
    fn reconnect(&self) -> impl Future<Output = Result<(), Retry>> + Send;
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Healed,
    /// Still failing when the window closed, or a permanent failure: rules
    /// 3-5 apply again.
    GaveUp,
}

/// Heals one server; see the module docs.
pub async fn heal_one<P: Patient, G: Reachability + ?Sized>(patient: &P, gate: &G, config: HealConfig) -> Outcome {
    let deadline = Instant::now() + config.window;
    if let Some((host, port)) = patient.target() {
        loop {
            match gate.probe(&host, port).await {
                Ok(()) => break,
                Err(e) => {
                    patient.waiting(&e.to_string());
                    if Instant::now() >= deadline {
                        tracing::info!(
                            server = patient.name(),
                            "the network did not come back within the wake window"
                        );
                        return Outcome::GaveUp;
                    }
                    tokio::time::sleep(config.poll).await;
                }
            }
        }
    }
    patient.reset_backoff();
    let jitter = if config.jitter.is_zero() {
        Duration::ZERO
    } else {
        rand::rng().random_range(Duration::ZERO..config.jitter)
    };
    tokio::time::sleep(jitter).await;
    loop {
        match patient.reconnect().await {
            Ok(()) => return Outcome::Healed,
            Err(Retry::Never) => return Outcome::GaveUp,
            Err(Retry::After(delay)) => {
                if Instant::now() + delay > deadline {
                    return Outcome::GaveUp;
                }
                tokio::time::sleep(delay).await;
            }
        }
    }
}

/// Heals every patient concurrently: one batch.
pub async fn heal_all<P: Patient, G: Reachability + ?Sized>(
    patients: &[P],
    gate: &G,
    config: HealConfig,
) -> Vec<Outcome> {
    futures::future::join_all(patients.iter().map(|p| heal_one(p, gate, config))).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wake::gate::ProbeError;
    use std::pin::Pin;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Mutex;

    /// A network that answers only after `gap` from the start.
    struct Gap {
        start: Instant,
        gap: Duration,
        probes: AtomicU32,
    }

    impl Reachability for Gap {
        fn probe<'a>(
            &'a self,
            host: &'a str,
            _port: u16,
        ) -> Pin<Box<dyn Future<Output = Result<(), ProbeError>> + Send + 'a>> {
            self.probes.fetch_add(1, Ordering::SeqCst);
            let open = self.start.elapsed() >= self.gap;
            Box::pin(async move {
                if open {
                    Ok(())
                } else {
                    Err(ProbeError::Dns {
                        host: host.into(),
                        reason: "Name or service not known".into(),
                    })
                }
            })
        }
    }

    /// A server whose reconnects follow a script of outcomes.
    struct Fake {
        name: &'static str,
        remote: bool,
        script: Mutex<Vec<Result<(), Retry>>>,
        attempts: Mutex<Vec<Duration>>,
        waiting: Mutex<Option<String>>,
        resets: AtomicU32,
        t0: Instant,
    }

    impl Fake {
        fn new(name: &'static str, remote: bool, script: Vec<Result<(), Retry>>, t0: Instant) -> Self {
            Fake {
                name,
                remote,
                script: Mutex::new(script),
                attempts: Mutex::default(),
                waiting: Mutex::default(),
                resets: AtomicU32::new(0),
                t0,
            }
        }
        fn attempts(&self) -> Vec<u64> {
            self.attempts
                .lock()
                .unwrap()
                .iter()
                .map(|d| d.as_millis() as u64)
                .collect()
        }
    }

    impl Patient for Fake {
        fn name(&self) -> &str {
            self.name
        }
        fn target(&self) -> Option<(String, u16)> {
            self.remote.then(|| ("api.example.test".to_string(), 443))
        }
        fn waiting(&self, reason: &str) {
            *self.waiting.lock().unwrap() = Some(reason.to_string());
        }
        fn reset_backoff(&self) {
            self.resets.fetch_add(1, Ordering::SeqCst);
        }
        async fn reconnect(&self) -> Result<(), Retry> {
            self.attempts.lock().unwrap().push(self.t0.elapsed());
            let mut script = self.script.lock().unwrap();
            if script.is_empty() {
                Ok(())
            } else {
                script.remove(0)
            }
        }
    }

    fn no_jitter() -> HealConfig {
        HealConfig {
            jitter: Duration::ZERO,
            ..HealConfig::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_45_s_dns_gap_makes_no_attempt_until_the_gate_opens_then_connects_at_once() {
        let t0 = Instant::now();
        let gate = Gap {
            start: t0,
            gap: Duration::from_secs(45),
            probes: AtomicU32::new(0),
        };
        let server = Fake::new("remote", true, vec![], t0);
        assert_eq!(heal_one(&server, &gate, no_jitter()).await, Outcome::Healed);
        // One reconnect, made within one poll of the network's return.
        let attempts = server.attempts();
        assert_eq!(attempts.len(), 1, "{attempts:?}");
        assert!((45_000..=45_500).contains(&attempts[0]), "{attempts:?}");
        assert!(server
            .waiting
            .lock()
            .unwrap()
            .as_deref()
            .unwrap_or("")
            .contains("cannot resolve api.example.test"));
        assert_eq!(server.resets.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn wake_heals_every_server_in_one_batch() {
        let t0 = Instant::now();
        let gate = Gap {
            start: t0,
            gap: Duration::ZERO,
            probes: AtomicU32::new(0),
        };
        let servers = vec![
            Fake::new("a", true, vec![], t0),
            Fake::new("b", true, vec![], t0),
            Fake::new("local", false, vec![], t0),
        ];
        let outcomes = heal_all(&servers, &gate, HealConfig::default()).await;
        assert_eq!(outcomes, vec![Outcome::Healed; 3]);
        for s in &servers {
            let a = s.attempts();
            assert_eq!(a.len(), 1);
            // The jitter is under 200 ms, but tokio's timer rounds a sleep up
            // to the next millisecond: a jitter of 199.6 ms wakes at 200 ms.
            assert!(a[0] <= 200, "{} waited {a:?}", s.name);
        }
        assert_eq!(gate.probes.load(Ordering::SeqCst), 2, "local servers are not probed");
    }

    #[tokio::test(start_paused = true)]
    async fn transient_failures_retry_with_backoff_within_the_window_only() {
        let t0 = Instant::now();
        let gate = Gap {
            start: t0,
            gap: Duration::ZERO,
            probes: AtomicU32::new(0),
        };
        let flaky = Fake::new(
            "flaky",
            true,
            vec![
                Err(Retry::After(Duration::from_secs(1))),
                Err(Retry::After(Duration::from_secs(2))),
                Ok(()),
            ],
            t0,
        );
        assert_eq!(heal_one(&flaky, &gate, no_jitter()).await, Outcome::Healed);
        assert_eq!(flaky.attempts(), vec![0, 1000, 3000]);
        let endless = Fake::new(
            "down",
            true,
            (0..100).map(|_| Err(Retry::After(Duration::from_secs(30)))).collect(),
            t0,
        );
        let start = Instant::now();
        assert_eq!(heal_one(&endless, &gate, no_jitter()).await, Outcome::GaveUp);
        assert!(start.elapsed() <= Duration::from_secs(300));
        // At 0, 30, ..., 300 s: one attempt per backoff step, none after the window.
        assert_eq!(endless.attempts().len(), 11, "{:?}", endless.attempts());
    }

    #[tokio::test(start_paused = true)]
    async fn a_429_waits_at_least_its_retry_after() {
        let t0 = Instant::now();
        let gate = Gap {
            start: t0,
            gap: Duration::ZERO,
            probes: AtomicU32::new(0),
        };
        // The server's Retry-After (7 s) is longer than the 1 s backoff: the
        // supervisor reports it, and the next attempt waits for it.
        let limited = Fake::new("429", true, vec![Err(Retry::After(Duration::from_secs(7)))], t0);
        assert_eq!(heal_one(&limited, &gate, no_jitter()).await, Outcome::Healed);
        assert_eq!(limited.attempts(), vec![0, 7000]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_permanent_failure_is_not_retried_over_an_hour() {
        let t0 = Instant::now();
        let gate = Gap {
            start: t0,
            gap: Duration::ZERO,
            probes: AtomicU32::new(0),
        };
        let forbidden = Fake::new("403", true, vec![Err(Retry::Never)], t0);
        let config = HealConfig {
            window: Duration::from_secs(3600),
            ..no_jitter()
        };
        assert_eq!(heal_one(&forbidden, &gate, config).await, Outcome::GaveUp);
        tokio::time::advance(Duration::from_secs(3600)).await;
        assert_eq!(forbidden.attempts().len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_network_that_never_returns_gives_up_at_the_end_of_the_window() {
        let t0 = Instant::now();
        let gate = Gap {
            start: t0,
            gap: Duration::from_secs(10_000),
            probes: AtomicU32::new(0),
        };
        let server = Fake::new("remote", true, vec![], t0);
        assert_eq!(heal_one(&server, &gate, no_jitter()).await, Outcome::GaveUp);
        assert!(server.attempts().is_empty(), "no MCP attempt while the network is away");
        assert!(t0.elapsed() >= Duration::from_secs(300) && t0.elapsed() < Duration::from_secs(301));
    }
}
