//! Notes from inside an item's work: a plain line for the user while a long item runs (mining
//! falling back to another interpreter), sent to the reporter the command line installed as an
//! [`Event::Note`]. Library use without a reporter drops them.

use std::sync::{Arc, RwLock};

use crate::engine::{Event, Reporter};

fn sink() -> &'static RwLock<Option<Arc<dyn Reporter>>> {
    static SINK: RwLock<Option<Arc<dyn Reporter>>> = RwLock::new(None);
    &SINK
}

/// Sends every later note to `reporter`.
pub fn install(reporter: Arc<dyn Reporter>) {
    *sink()
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(reporter);
}

/// Tells the user `message` about `step`, if a reporter is installed.
pub fn note(step: &str, message: &str) {
    let sink = sink()
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(reporter) = sink.as_ref() {
        reporter.event(&Event::Note {
            step: step.to_string(),
            message: message.to_string(),
        });
    }
}
