//! How the engine retries an item that failed transiently: bounded exponential backoff with
//! jitter, or the delay the other side asked for (`retry-after`), a bounded number of times.

use std::time::Duration;

/// The retry schedule of transient failures. None of it enters a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0: never retry).
    pub retries: u32,
    /// The delay before the first retry; it doubles with each further one.
    pub base: Duration,
    /// No delay is longer than this, a `retry-after` included.
    pub cap: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            retries: 5,
            base: Duration::from_millis(500),
            cap: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The delay before retry `attempt` (1 for the first retry) of the item `seed` names, or
    /// `None` once the retries are spent. `retry_after` (what the server asked for) wins over the
    /// backoff; a jitter of up to half the backoff spreads items that failed together.
    pub fn delay(
        &self,
        attempt: u32,
        retry_after: Option<Duration>,
        seed: &str,
    ) -> Option<Duration> {
        if attempt == 0 || attempt > self.retries {
            return None;
        }
        if let Some(asked) = retry_after {
            return Some(asked.min(self.cap));
        }
        let backoff = self
            .base
            .saturating_mul(1u32 << (attempt - 1).min(20))
            .min(self.cap);
        let jitter = backoff.mul_f64(unit_jitter(seed, attempt) / 2.0);
        Some((backoff + jitter).min(self.cap))
    }
}

/// A number in [0, 1) from the item, the attempt and the clock: items retried together spread out.
fn unit_jitter(seed: &str, attempt: u32) -> f64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    let mut hasher = blake3::Hasher::new();
    hasher.update(seed.as_bytes());
    hasher.update(&attempt.to_le_bytes());
    hasher.update(&now.to_le_bytes());
    let bytes: [u8; 8] = hasher.finalize().as_bytes()[..8]
        .try_into()
        .expect("eight bytes");
    (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_is_capped_and_runs_out() {
        let policy = RetryPolicy {
            retries: 3,
            base: Duration::from_secs(1),
            cap: Duration::from_secs(3),
        };
        let first = policy.delay(1, None, "item").unwrap();
        assert!(first >= Duration::from_secs(1) && first < Duration::from_millis(1500));
        let second = policy.delay(2, None, "item").unwrap();
        assert!(second >= Duration::from_secs(2) && second <= Duration::from_secs(3));
        assert_eq!(policy.delay(3, None, "item"), Some(Duration::from_secs(3)));
        assert_eq!(policy.delay(4, None, "item"), None);
    }

    #[test]
    fn a_retry_after_wins_but_stays_under_the_cap() {
        let policy = RetryPolicy::default();
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(2)), "item"),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(600)), "item"),
            Some(policy.cap)
        );
    }
}
