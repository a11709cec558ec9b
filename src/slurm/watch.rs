//! The jobs a run has in flight: at most `max_jobs` queued or running at once, watched by one
//! polling thread, cancelled together when the run is stopped.
//!
//! Watching is one `squeue` call per poll for every job in flight (however many there are), not
//! one `sbatch --wait` per job: `sbatch --wait` polls at 2, 8 and then 32 seconds, which would add
//! up to half a minute to every item, and a thousand of them would each hold a connection to the
//! controller. The poll interval starts at 0.2 s and grows to at most 0.5 s while nothing ends,
//! so a job's end is seen within half a second, at two `squeue` calls a second however many jobs
//! are in flight.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use super::scheduler::{JobId, JobState, Scheduler, SchedulerError};

/// The first and the longest pause between two polls.
const POLL_FIRST: Duration = Duration::from_millis(200);
const POLL_LONGEST: Duration = Duration::from_millis(500);
/// A job neither squeue nor sacct knows, this long after it was submitted, is taken as lost.
const FORGOTTEN_AFTER: Duration = Duration::from_secs(30);
/// Polls that fail in a row before the jobs are given up as unknown (about ten minutes).
const FAILED_POLLS: u32 = 600;

/// Why the dispatcher could not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The cluster refused or could not be reached.
    #[error(transparent)]
    Scheduler(#[from] SchedulerError),
    /// The run is stopping: no job is submitted any more.
    #[error("the run is stopping; no more jobs are submitted")]
    Stopping,
}

/// How many jobs a dispatcher handled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DispatchStats {
    /// Jobs submitted (adopted ones not counted).
    pub submitted: usize,
    /// The most jobs in flight at one time.
    pub peak_in_flight: usize,
}

struct Tracked {
    since: Instant,
    ended: Option<JobState>,
}

#[derive(Default)]
struct Inner {
    jobs: BTreeMap<JobId, Tracked>,
    /// Places taken by submissions under way.
    reserved: usize,
    stats: DispatchStats,
    stopping: bool,
    closed: bool,
}

impl Inner {
    fn in_flight(&self) -> usize {
        self.jobs.len() + self.reserved
    }
}

struct Shared {
    scheduler: Arc<dyn Scheduler>,
    cap: usize,
    inner: Mutex<Inner>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Waits for a free place and takes it.
    fn reserve(&self) -> Result<(), WatchError> {
        let mut inner = self.lock();
        while !inner.stopping && inner.in_flight() >= self.cap {
            inner = self.changed.wait(inner).unwrap_or_else(|p| p.into_inner());
        }
        if inner.stopping {
            return Err(WatchError::Stopping);
        }
        inner.reserved += 1;
        Ok(())
    }

    /// Turns a reserved place into a tracked job (or frees it).
    fn track(&self, job: Option<JobId>, submitted: bool) {
        let mut inner = self.lock();
        inner.reserved -= 1;
        if let Some(job) = job {
            inner.jobs.insert(
                job,
                Tracked {
                    since: Instant::now(),
                    ended: None,
                },
            );
            if submitted {
                inner.stats.submitted += 1;
            }
            inner.stats.peak_in_flight = inner.stats.peak_in_flight.max(inner.in_flight());
        }
        drop(inner);
        self.changed.notify_all();
    }

    /// Cancels every job in flight and refuses new ones.
    fn stop(&self) -> Vec<JobId> {
        let jobs: Vec<JobId> = {
            let mut inner = self.lock();
            inner.stopping = true;
            inner
                .jobs
                .iter()
                .filter(|(_, tracked)| tracked.ended.is_none())
                .map(|(job, _)| *job)
                .collect()
        };
        self.changed.notify_all();
        if !jobs.is_empty() {
            // Nothing more can be done about a cancellation the controller refuses.
            let _ = self.scheduler.cancel(&jobs);
        }
        jobs
    }
}

/// The jobs of one run.
pub struct Dispatcher {
    shared: Arc<Shared>,
}

/// Every dispatcher alive in the process, so a signal can cancel their jobs.
static LIVE: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());

/// Cancels the jobs of every dispatcher in the process; what a stopped run (Ctrl-C, SIGTERM)
/// calls before it exits. Returns the jobs cancelled.
pub fn stop_every_dispatcher() -> Vec<JobId> {
    let live: Vec<Arc<Shared>> = LIVE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .iter()
        .filter_map(Weak::upgrade)
        .collect();
    live.iter().flat_map(|shared| shared.stop()).collect()
}

impl Dispatcher {
    /// A dispatcher keeping at most `cap` jobs in flight on `scheduler`.
    pub fn new(scheduler: Arc<dyn Scheduler>, cap: usize) -> Self {
        let shared = Arc::new(Shared {
            scheduler,
            cap: cap.max(1),
            inner: Mutex::new(Inner::default()),
            changed: Condvar::new(),
        });
        {
            let mut live = LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            live.retain(|weak| weak.strong_count() > 0);
            live.push(Arc::downgrade(&shared));
        }
        crate::process_groups::on_stop("slurm jobs", stop_every_dispatcher_on_signal);
        let poller = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("slurm-watch".into())
            .spawn(move || poll(&poller))
            .expect("a thread starts");
        Dispatcher { shared }
    }

    /// Submits `script` once fewer than the cap are in flight; blocks until then.
    pub fn submit(&self, script: &Path) -> Result<JobId, WatchError> {
        self.shared.reserve()?;
        match self.shared.scheduler.submit(script) {
            Ok(job) => {
                self.shared.track(Some(job), true);
                // Stopped while the job was submitted: it must not outlive the run.
                if self.shared.lock().stopping {
                    self.shared.stop();
                }
                Ok(job)
            }
            Err(error) => {
                self.shared.track(None, false);
                Err(error.into())
            }
        }
    }

    /// Watches a job submitted earlier (by a run that was stopped), within the cap.
    pub fn adopt(&self, job: JobId) -> Result<(), WatchError> {
        self.shared.reserve()?;
        self.shared.track(Some(job), false);
        Ok(())
    }

    /// The states of `jobs` now, for deciding whether a job found in the journal still runs.
    pub fn states(&self, jobs: &[JobId]) -> Result<BTreeMap<JobId, JobState>, WatchError> {
        Ok(self.shared.scheduler.states(jobs)?)
    }

    /// Blocks until `job` has ended; returns its final state and frees its place.
    pub fn wait(&self, job: JobId) -> JobState {
        let mut inner = self.shared.lock();
        let state = loop {
            match inner.jobs.get(&job) {
                None => break JobState::Lost("UNTRACKED".to_string()),
                Some(Tracked {
                    ended: Some(state), ..
                }) => break state.clone(),
                Some(_) => {}
            }
            inner = self
                .shared
                .changed
                .wait(inner)
                .unwrap_or_else(|p| p.into_inner());
        };
        inner.jobs.remove(&job);
        drop(inner);
        self.shared.changed.notify_all();
        state
    }

    /// Cancels every job in flight and refuses new ones.
    pub fn stop(&self) -> Vec<JobId> {
        self.shared.stop()
    }

    /// Jobs queued or running now (places being submitted included).
    pub fn in_flight(&self) -> usize {
        self.shared.lock().in_flight()
    }

    /// What the dispatcher has done so far.
    pub fn stats(&self) -> DispatchStats {
        self.shared.lock().stats
    }
}

impl Drop for Dispatcher {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.changed.notify_all();
    }
}

fn stop_every_dispatcher_on_signal() {
    stop_every_dispatcher();
}

/// The polling thread: asks the scheduler about every job that has not ended, records the
/// ones that have, and wakes their waiters.
fn poll(shared: &Shared) {
    let mut pause = POLL_FIRST;
    let mut failures = 0u32;
    loop {
        let watched: Vec<(JobId, Instant)> = {
            let mut inner = shared.lock();
            loop {
                if inner.closed {
                    return;
                }
                let watched: Vec<_> = inner
                    .jobs
                    .iter()
                    .filter(|(_, tracked)| tracked.ended.is_none())
                    .map(|(job, tracked)| (*job, tracked.since))
                    .collect();
                if !watched.is_empty() {
                    break watched;
                }
                pause = POLL_FIRST;
                inner = shared
                    .changed
                    .wait(inner)
                    .unwrap_or_else(|p| p.into_inner());
            }
        };
        let jobs: Vec<JobId> = watched.iter().map(|(job, _)| *job).collect();
        let mut ended = BTreeMap::new();
        match shared.scheduler.states(&jobs) {
            Ok(states) => {
                failures = 0;
                for (job, since) in &watched {
                    match states.get(job) {
                        Some(state) if state.is_final() => {
                            ended.insert(*job, state.clone());
                        }
                        Some(_) => {}
                        None if since.elapsed() > FORGOTTEN_AFTER => {
                            ended.insert(*job, JobState::Lost("UNKNOWN".to_string()));
                        }
                        None => {}
                    }
                }
            }
            Err(error) => {
                failures += 1;
                if failures >= FAILED_POLLS {
                    for (job, _) in &watched {
                        ended.insert(*job, JobState::Lost(format!("UNKNOWN ({error})")));
                    }
                }
            }
        }
        if ended.is_empty() {
            pause = (pause * 3 / 2).min(POLL_LONGEST);
        } else {
            pause = POLL_FIRST;
            let mut inner = shared.lock();
            for (job, state) in ended {
                if let Some(tracked) = inner.jobs.get_mut(&job) {
                    tracked.ended = Some(state);
                }
            }
            drop(inner);
            shared.changed.notify_all();
        }
        std::thread::sleep(pause);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slurm::simulated::Simulated;

    #[test]
    fn jobs_in_flight_never_exceed_the_cap() {
        let cluster = Arc::new(Simulated::new(Duration::from_millis(30)));
        let dispatcher = Dispatcher::new(cluster, 3);
        let states: Vec<JobState> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..12)
                .map(|_| {
                    scope.spawn(|| {
                        let job = dispatcher.submit(Path::new("job.sh")).unwrap();
                        assert!(dispatcher.in_flight() <= 3);
                        dispatcher.wait(job)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(states.iter().all(|state| state == &JobState::Completed));
        let stats = dispatcher.stats();
        assert_eq!(stats.submitted, 12);
        assert_eq!(stats.peak_in_flight, 3);
        assert_eq!(dispatcher.in_flight(), 0);
    }

    #[test]
    fn a_job_ends_in_the_state_the_cluster_reports() {
        let dispatcher = Dispatcher::new(Arc::new(Simulated::new(Duration::ZERO)), 2);
        let failed = dispatcher.submit(Path::new("fail.sh")).unwrap();
        let timed_out = dispatcher.submit(Path::new("timeout.sh")).unwrap();
        assert_eq!(dispatcher.wait(failed), JobState::Failed);
        assert_eq!(dispatcher.wait(timed_out), JobState::Timeout);
    }

    #[test]
    fn stopping_cancels_the_jobs_in_flight_and_refuses_new_ones() {
        let cluster = Arc::new(Simulated::new(Duration::from_secs(60)));
        let dispatcher = Dispatcher::new(cluster.clone(), 4);
        let first = dispatcher.submit(Path::new("a.sh")).unwrap();
        let second = dispatcher.submit(Path::new("b.sh")).unwrap();
        let mut cancelled = dispatcher.stop();
        cancelled.sort();
        assert_eq!(cancelled, vec![first, second]);
        assert_eq!(dispatcher.wait(first), JobState::Cancelled);
        assert!(matches!(
            dispatcher.submit(Path::new("c.sh")),
            Err(WatchError::Stopping)
        ));
        assert_eq!(*cluster.cancelled.lock().unwrap(), cancelled);
    }
}
