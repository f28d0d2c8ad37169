//! The reconnect backoff policy: 1 s after a failed attempt, doubling on each
//! consecutive failure up to 30 s, with a server's `Retry-After` as a floor.

use std::time::{Duration, SystemTime};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("backoff: initial delay must be positive and not above the maximum")]
pub struct InvalidBackoff;

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(30),
        }
    }
}

impl Backoff {
    pub fn new(initial: Duration, max: Duration) -> Result<Self, InvalidBackoff> {
        if initial.is_zero() || initial > max {
            return Err(InvalidBackoff);
        }
        Ok(Backoff { initial, max })
    }

    /// Delay after `failures` consecutive failed attempts (`failures >= 1`).
    pub fn next_delay(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(31);
        self.initial.saturating_mul(1u32 << doublings).min(self.max)
    }

    /// The delay to wait: the policy's, or the server's hint if longer.
    pub fn with_hint(&self, failures: u32, retry_after: Option<Duration>) -> Duration {
        let policy = self.next_delay(failures);
        retry_after.map_or(policy, |hint| hint.max(policy))
    }
}

/// Parses a `Retry-After` value: delay-seconds or an HTTP date.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn doubles_from_one_second_up_to_thirty() {
        let b = Backoff::default();
        let delays: Vec<u64> = (1..=7).map(|n| b.next_delay(n).as_secs()).collect();
        assert_eq!(delays, vec![1, 2, 4, 8, 16, 30, 30]);
    }

    #[test]
    fn retry_after_is_a_floor() {
        let b = Backoff::default();
        assert_eq!(b.with_hint(1, Some(Duration::from_secs(5))), Duration::from_secs(5));
        assert_eq!(b.with_hint(4, Some(Duration::from_secs(5))), Duration::from_secs(8));
    }

    #[test]
    fn retry_after_forms() {
        let now = httpdate::parse_http_date("Sun, 29 Nov 2026 10:00:00 GMT").unwrap();
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("Sun, 29 Nov 2026 10:00:42 GMT", now),
            Some(Duration::from_secs(42))
        );
        assert_eq!(
            parse_retry_after("Sun, 29 Nov 2026 09:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn invalid_policies_are_refused() {
        assert_eq!(
            Backoff::new(Duration::ZERO, Duration::from_secs(1)),
            Err(InvalidBackoff)
        );
        assert_eq!(
            Backoff::new(Duration::from_secs(2), Duration::from_secs(1)),
            Err(InvalidBackoff)
        );
    }

    proptest! {
        #[test]
        fn bounded_and_monotonic(initial_ms in 1u64..5_000, max_ms in 5_000u64..120_000, n in 1u32..1_000) {
            let b = Backoff::new(Duration::from_millis(initial_ms), Duration::from_millis(max_ms)).unwrap();
            let d = b.next_delay(n);
            prop_assert!(d >= Duration::from_millis(initial_ms));
            prop_assert!(d <= Duration::from_millis(max_ms));
            prop_assert!(b.next_delay(n + 1) >= d);
        }
    }
}
