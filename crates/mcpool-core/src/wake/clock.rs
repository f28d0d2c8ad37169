//! Detects a sleep from the clocks: wall time that advanced far more than
//! monotonic time (which stops while the machine is suspended) means the
//! machine slept. Works everywhere, without any OS service.

use std::time::{Duration, SystemTime};

use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{until_stopped, PowerEvent, PowerWatcher};

pub struct ClockJump {
    pub every: Duration,
    /// How much more wall time than monotonic time counts as a sleep.
    pub threshold: Duration,
}

impl Default for ClockJump {
    fn default() -> Self {
        ClockJump {
            every: Duration::from_secs(5),
            threshold: Duration::from_secs(10),
        }
    }
}

/// Whether a tick that saw `wall` and `mono` elapse crossed a sleep.
pub fn slept(wall: Option<Duration>, mono: Duration, threshold: Duration) -> bool {
    wall.is_some_and(|w| w > mono + threshold)
}

impl ClockJump {
    /// This detector as a [`PowerWatcher`].
    pub fn watcher(self) -> Box<dyn PowerWatcher> {
        super::watcher("clock", move |tx, stop| self.run(tx, stop))
    }

    async fn run(self, tx: mpsc::Sender<PowerEvent>, stop: CancellationToken) {
        let mut tick = tokio::time::interval(self.every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last = (SystemTime::now(), Instant::now());
        while until_stopped(&stop, tick.tick()).await.is_some() {
            let now = (SystemTime::now(), Instant::now());
            let wall = now.0.duration_since(last.0).ok();
            if slept(wall, now.1 - last.1, self.threshold) {
                tracing::info!("the clocks jumped: the machine slept");
                if tx.send(PowerEvent::DidWake).await.is_err() {
                    return;
                }
            }
            last = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wall_clock_jump_beyond_the_threshold_is_a_sleep() {
        let t = Duration::from_secs(10);
        assert!(!slept(Some(Duration::from_secs(5)), Duration::from_secs(5), t));
        assert!(!slept(Some(Duration::from_secs(14)), Duration::from_secs(5), t));
        assert!(slept(Some(Duration::from_secs(3600)), Duration::from_secs(5), t));
        assert!(
            !slept(None, Duration::from_secs(5), t),
            "a clock set back is not a sleep"
        );
    }
}
