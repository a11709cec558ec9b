//! A model entry's limits: requests in flight, and requests and tokens started per minute.
//!
//! The minute limits are a sliding window over the last sixty seconds; a request waits until both
//! fit. Tokens are estimated before sending (a provider counts its own way), so the estimate leans
//! high: the prompt at four characters a token plus the answer's maximum.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::sync::{Mutex, Semaphore, SemaphorePermit};
use tokio::time::Instant;

const WINDOW: Duration = Duration::from_secs(60);

/// The limits of one model entry, shared by every request to it.
#[derive(Debug)]
pub struct Limits {
    slots: Semaphore,
    requests_per_minute: Option<u32>,
    tokens_per_minute: Option<u64>,
    window: Mutex<VecDeque<(Instant, u64)>>,
}

impl Limits {
    pub fn new(
        concurrency: usize,
        requests_per_minute: Option<u32>,
        tokens_per_minute: Option<u64>,
    ) -> Self {
        Limits {
            slots: Semaphore::new(concurrency.max(1)),
            requests_per_minute,
            tokens_per_minute,
            window: Mutex::new(VecDeque::new()),
        }
    }

    /// A request slot, held until the returned permit drops.
    pub async fn slot(&self) -> SemaphorePermit<'_> {
        self.slots
            .acquire()
            .await
            .expect("the semaphore is never closed")
    }

    /// Waits until a request of `tokens` fits the minute limits, and records it.
    pub async fn admit(&self, tokens: u64) {
        if self.requests_per_minute.is_none() && self.tokens_per_minute.is_none() {
            return;
        }
        loop {
            let wait = {
                let mut window = self.window.lock().await;
                let now = Instant::now();
                while window
                    .front()
                    .is_some_and(|(started, _)| now.duration_since(*started) >= WINDOW)
                {
                    window.pop_front();
                }
                let requests_fit = self
                    .requests_per_minute
                    .is_none_or(|limit| window.len() < limit as usize);
                let used: u64 = window.iter().map(|(_, tokens)| tokens).sum();
                // A request larger than the whole budget goes alone rather than never.
                let tokens_fit = self
                    .tokens_per_minute
                    .is_none_or(|limit| window.is_empty() || used.saturating_add(tokens) <= limit);
                if requests_fit && tokens_fit {
                    window.push_back((now, tokens));
                    return;
                }
                let oldest = window.front().expect("a full window has entries").0;
                (oldest + WINDOW).saturating_duration_since(now)
            };
            tokio::time::sleep(wait.max(Duration::from_millis(1))).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn requests_per_minute_hold_back_the_next_request() {
        let limits = Limits::new(4, Some(2), None);
        let start = Instant::now();
        limits.admit(1).await;
        limits.admit(1).await;
        assert!(start.elapsed() < Duration::from_secs(1));
        limits.admit(1).await;
        assert!(start.elapsed() >= WINDOW, "{:?}", start.elapsed());
    }

    #[tokio::test(start_paused = true)]
    async fn tokens_per_minute_hold_back_a_request_that_does_not_fit() {
        let limits = Limits::new(4, None, Some(1000));
        let start = Instant::now();
        limits.admit(600).await;
        limits.admit(300).await;
        assert!(start.elapsed() < Duration::from_secs(1));
        limits.admit(200).await;
        assert!(start.elapsed() >= WINDOW);
        // Larger than the budget: admitted alone once the window is empty.
        limits.admit(5000).await;
    }
}
