//! How long the oracle waits for one pytest run, and what a run that outlives it means.
//!
//! The user's `timeout:` is the ceiling. The first run of a suite (one [`Patience`] per stage:
//! one set of tests at one commit) gets all of it; once a run of it finished, later runs get
//! `max(30 s, 5 × that run's duration)` under the ceiling, so a test that hangs in run 7 costs
//! seconds rather than the whole ceiling.
//!
//! A run that outlives its limit is measured as its deadline fires
//! ([`crate::process::cpu_use`]). A hung run is a timeout: its tests get no verdict ("timeout"),
//! and that is a result. A run starved of CPU on a busy machine is no result at all: it is tried
//! again under the ceiling ([`retry_starved`]), and when every attempt starves the run fails
//! with [`RunnerError::Starved`], which fails the commit's item without caching anything.

use std::cell::Cell;
use std::time::Duration;

use super::runner::{RunReport, RunRequest, RunnerError, run_pytest};
use crate::process::Outcome;
use crate::process::cpu_use::{STARVED_ATTEMPTS, retry_starved};

/// No run is limited below this, however fast the suite's first run was.
pub const MIN_LIMIT: Duration = Duration::from_secs(30);
/// A later run may take this many times the first run before it counts as hung.
pub const SLOWER_THAN_FIRST: u32 = 5;

/// The time limits of one suite's runs at one commit.
#[derive(Debug, Default)]
pub struct Patience {
    /// How long the suite's first finished run took.
    first: Cell<Option<Duration>>,
}

impl Patience {
    /// The limit of the next run under `ceiling` (the user's `timeout:`).
    pub fn limit(&self, ceiling: Duration) -> Duration {
        scaled_limit(self.first.get(), ceiling)
    }

    /// Runs pytest for `request` (whose `timeout` is the ceiling) under this suite's limit. A
    /// run starved of CPU is tried again under the ceiling; one starved every time fails.
    pub fn run(&self, request: &RunRequest) -> Result<RunReport, RunnerError> {
        let ceiling = request.timeout;
        let mut limit = self.limit(ceiling);
        let report = retry_starved(
            |attempt| {
                if attempt > 1 {
                    limit = ceiling;
                }
                run_pytest(&RunRequest {
                    timeout: limit,
                    ..*request
                })
            },
            starved,
        )?;
        if starved(&report)
            && let Some(stall) = report.stall
        {
            return Err(RunnerError::Starved {
                attempts: STARVED_ATTEMPTS,
                limit: limit.as_secs(),
                stall: Box::new(stall),
            });
        }
        // Only a run that ran its tests measures the suite: one aborted by a collection error
        // ended early.
        if self.first.get().is_none() && matches!(report.outcome, Outcome::Exited(0 | 1)) {
            self.first.set(Some(report.elapsed));
        }
        Ok(report)
    }
}

fn starved(report: &RunReport) -> bool {
    report.stall.is_some_and(|stall| stall.starved())
}

/// `max(MIN_LIMIT, 5 × first)` under `ceiling`; the ceiling itself before any run finished.
pub fn scaled_limit(first: Option<Duration>, ceiling: Duration) -> Duration {
    match first {
        None => ceiling,
        Some(first) => first
            .saturating_mul(SLOWER_THAN_FIRST)
            .max(MIN_LIMIT)
            .min(ceiling),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn the_first_run_gets_the_ceiling() {
        assert_eq!(scaled_limit(None, 300 * SECOND), 300 * SECOND);
    }

    #[test]
    fn later_runs_get_five_times_the_first_and_at_least_thirty_seconds() {
        assert_eq!(scaled_limit(Some(2 * SECOND), 300 * SECOND), 30 * SECOND);
        assert_eq!(scaled_limit(Some(20 * SECOND), 300 * SECOND), 100 * SECOND);
    }

    #[test]
    fn the_users_timeout_stays_the_ceiling() {
        assert_eq!(scaled_limit(Some(100 * SECOND), 300 * SECOND), 300 * SECOND);
        assert_eq!(scaled_limit(Some(SECOND), 10 * SECOND), 10 * SECOND);
    }
}
