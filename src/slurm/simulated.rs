//! A cluster in memory, for the dispatcher's tests and the benchmark of a thousand-item plan
//! (`examples/slurm_cap.rs`): jobs run for a fixed time after they are submitted and end in
//! the state their script's name asks for.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::scheduler::{JobId, JobState, Scheduler, SchedulerError};

/// A cluster in memory: each job runs for `runtime` after it is submitted, and ends in the
/// state its script's name asks for (`fail`, `timeout`, else completed).
pub struct Simulated {
    next: AtomicU64,
    runtime: Duration,
    jobs: Mutex<BTreeMap<JobId, (Instant, JobState)>>,
    /// Every job cancelled, in order.
    pub cancelled: Mutex<Vec<JobId>>,
}

impl Simulated {
    /// A cluster whose jobs each run for `runtime`.
    pub fn new(runtime: Duration) -> Self {
        Simulated {
            next: AtomicU64::new(1),
            runtime,
            jobs: Mutex::new(BTreeMap::new()),
            cancelled: Mutex::new(Vec::new()),
        }
    }
}

impl Scheduler for Simulated {
    fn submit(&self, script: &Path) -> Result<JobId, SchedulerError> {
        let job = JobId(self.next.fetch_add(1, Ordering::SeqCst));
        let name = script.to_string_lossy();
        let end = if name.contains("fail") {
            JobState::Failed
        } else if name.contains("timeout") {
            JobState::Timeout
        } else {
            JobState::Completed
        };
        self.jobs.lock().unwrap().insert(job, (Instant::now(), end));
        Ok(job)
    }

    fn states(&self, jobs: &[JobId]) -> Result<BTreeMap<JobId, JobState>, SchedulerError> {
        let known = self.jobs.lock().unwrap();
        Ok(jobs
            .iter()
            .filter_map(|job| {
                let (since, end) = known.get(job)?;
                let state = if since.elapsed() >= self.runtime || end == &JobState::Cancelled {
                    end.clone()
                } else {
                    JobState::Running
                };
                Some((*job, state))
            })
            .collect())
    }

    fn cancel(&self, jobs: &[JobId]) -> Result<(), SchedulerError> {
        let mut known = self.jobs.lock().unwrap();
        for job in jobs {
            if let Some(entry) = known.get_mut(job) {
                entry.1 = JobState::Cancelled;
            }
        }
        self.cancelled.lock().unwrap().extend_from_slice(jobs);
        Ok(())
    }
}
