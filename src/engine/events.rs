//! What the engine tells the outside world while it works. The engine only sends events; one
//! reporter ([`super::reporter`]) turns them into progress bars or lines.

use std::time::Duration;

use serde::Serialize;

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
    /// One item failed; it is not cached. `error` is the error's whole chain, outermost cause
    /// first ([`super::StepError::chain`]); `class` what it means for the run.
    ItemFailed {
        step: String,
        item: String,
        error: String,
        class: ErrorClass,
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
    /// A step failed (planning, an item, or publishing): its error's chain and class.
    StepFailed {
        step: String,
        error: String,
        class: ErrorClass,
    },
    /// A step was not run because a step it needs failed or was left out by `--until`.
    StepSkipped { step: String, because: String },
    /// A note for the user that is not an error.
    Note { step: String, message: String },
    /// A step's item paid for a model call: the printer sums them into a running total, and the
    /// run's summary holds the run's own ([`super::RunSummary::spent`]).
    Spent { step: String, spend: Spend },
}

/// What model calls used: calls made (never those served from the cache), tokens, cost.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spend {
    pub calls: u64,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub cost: f64,
}

impl Spend {
    /// Adds `other` to this total.
    pub fn add(&mut self, other: &Spend) {
        self.calls += other.calls;
        self.tokens_in += other.tokens_in;
        self.tokens_out += other.tokens_out;
        self.cost += other.cost;
    }
}

impl std::fmt::Display for Spend {
    /// `12 calls, 10234 tokens in, 512 out, $0.0041`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} calls, {} tokens in, {} out, ${:.4}",
            self.calls, self.tokens_in, self.tokens_out, self.cost
        )
    }
}

/// The reporter of one run: passes every event on, and sums what the run's model calls used.
pub(crate) struct Tally<'a> {
    inner: &'a dyn Reporter,
    spent: std::sync::Mutex<Spend>,
}

impl<'a> Tally<'a> {
    pub(crate) fn new(inner: &'a dyn Reporter) -> Self {
        Tally {
            inner,
            spent: std::sync::Mutex::new(Spend::default()),
        }
    }

    /// What the run's model calls used so far.
    pub(crate) fn spent(&self) -> Spend {
        *self
            .spent
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Reporter for Tally<'_> {
    fn event(&self, event: &Event) {
        if let Event::Spent { spend, .. } = event {
            self.spent
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .add(spend);
        }
        self.inner.event(event);
    }
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

/// What a failure means for the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ErrorClass {
    /// The user's input is wrong: exit 2.
    Input,
    /// Worth retrying.
    Transient,
    /// The run was stopped.
    Cancelled,
    /// The step failed: exit 1.
    Failure,
}
