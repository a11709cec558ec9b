//! When to try a request again, and how long to wait first.
//!
//! Transport faults (429, 408, 5xx, 529, timeouts, refused or dropped connections) are retried with
//! exponential backoff and full jitter, bounded by the entry's `retries`; a server's `Retry-After`
//! (seconds, or `retry-after-ms`) is waited out in full. Nothing about an answer's *content* is ever
//! retried.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::HeaderMap;

/// The longest `Retry-After` honoured; a server asking for more fails the call instead.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(600);

/// Exponential backoff with jitter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// The first delay.
    pub base: Duration,
    /// No delay is longer.
    pub cap: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            base: Duration::from_millis(500),
            cap: Duration::from_secs(30),
        }
    }
}

impl Backoff {
    /// The wait before retry number `retry` (0 for the first), at least `retry_after` when the
    /// server named one.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        let exponential = self
            .base
            .saturating_mul(1u32.checked_shl(retry.min(20)).unwrap_or(u32::MAX))
            .min(self.cap);
        // Half fixed, half random: spreads a burst of retries without waiting less than half.
        let jittered = exponential.mul_f64(0.5 + fastrand::f64() * 0.5);
        match retry_after {
            // Waited out in full, plus up to a tenth so a burst told the same does not return at once.
            Some(wait) => wait + wait.mul_f64(fastrand::f64() * 0.1),
            None => jittered,
        }
    }
}

/// True for statuses worth another try.
pub fn retryable_status(status: StatusCode) -> bool {
    matches!(status.as_u16(), 408 | 409 | 425 | 429 | 529) || status.is_server_error()
}

/// The wait a server asks for: `retry-after-ms`, else `Retry-After` in seconds.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let read = |name: &str| headers.get(name)?.to_str().ok()?.trim().parse::<f64>().ok();
    if let Some(milliseconds) =
        read("retry-after-ms").filter(|value| value.is_finite() && *value >= 0.0)
    {
        return Some(Duration::from_secs_f64(milliseconds / 1000.0));
    }
    read("retry-after")
        .filter(|value| value.is_finite() && *value >= 0.0)
        .map(Duration::from_secs_f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn delays_grow_to_the_cap_and_stay_jittered() {
        let backoff = Backoff {
            base: Duration::from_millis(100),
            cap: Duration::from_secs(1),
        };
        for retry in 0..30 {
            let delay = backoff.delay(retry, None);
            let full =
                (Duration::from_millis(100) * 2u32.pow(retry.min(10))).min(Duration::from_secs(1));
            assert!(delay >= full / 2 && delay <= full, "{retry}: {delay:?}");
        }
    }

    #[test]
    fn retry_after_is_waited_out() {
        let backoff = Backoff::default();
        let delay = backoff.delay(0, Some(Duration::from_secs(3)));
        assert!(delay >= Duration::from_secs(3), "{delay:?}");
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(250)));
    }

    #[test]
    fn which_statuses_are_retried() {
        for code in [408, 429, 500, 502, 503, 504, 529] {
            assert!(
                retryable_status(StatusCode::from_u16(code).unwrap()),
                "{code}"
            );
        }
        for code in [400, 401, 403, 404, 422] {
            assert!(
                !retryable_status(StatusCode::from_u16(code).unwrap()),
                "{code}"
            );
        }
    }
}
