//! What the engine tells the outside world while it works. The engine only sends events; one
//! reporter ([`super::reporter`]) turns them into progress bars or lines.

use std::time::Duration;

/// One thing that happened during a run.
#[derive(Debug, Clone)]
pub enum Event {
    /// A step's items are known: `total` items, of which `cached` are already in the cache. Those
    /// send no [`Event::ItemFinished`] of their own (at tens of thousands of items the events
    /// would cost more than the lookups): they count as done from here.
    StepPlanned {
        step: String,
        total: usize,
        cached: usize,
    },
    /// One item to run finished: computed, or `cached` when another run computed it meanwhile.
    ItemFinished {
        step: String,
        item: String,
        cached: bool,
        elapsed: Duration,
    },
    /// One item failed; it is not cached.
    ItemFailed {
        step: String,
        item: String,
        error: String,
    },
    /// One item failed transiently and is tried again after `delay` (attempt `attempt`, from 1).
    ItemRetry {
        step: String,
        item: String,
        attempt: u32,
        delay: Duration,
        error: String,
    },
    /// A step finished: `computed` items were run, `cached` came from the cache.
    StepFinished {
        step: String,
        computed: usize,
        cached: usize,
        elapsed: Duration,
    },
    /// A step failed (planning, an item, or publishing).
    StepFailed { step: String, error: String },
    /// A step was not run because a step it needs failed or was left out by `--until`.
    StepSkipped { step: String, because: String },
    /// A note for the user that is not an error.
    Note { step: String, message: String },
}

/// Receives events. Implementations must be cheap: they are called from worker threads.
pub trait Reporter: Send + Sync {
    fn event(&self, event: &Event);
}

/// A reporter that drops every event (library use, tests).
pub struct Silent;

impl Reporter for Silent {
    fn event(&self, _event: &Event) {}
}

/// A reporter that records every event, for tests that assert on what ran.
#[derive(Default)]
pub struct Recording {
    events: std::sync::Mutex<Vec<Event>>,
}

impl Recording {
    /// Every event so far.
    pub fn events(&self) -> Vec<Event> {
        self.events.lock().expect("recording lock").clone()
    }
}

impl Reporter for Recording {
    fn event(&self, event: &Event) {
        self.events
            .lock()
            .expect("recording lock")
            .push(event.clone());
    }
}
