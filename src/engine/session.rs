//! A run's session: what lives exactly as long as one run of the engine and is shared by its
//! steps — the model clients, the local model's server, what failed to build — instead of living
//! in statics for the life of the process. Two runs in one process (tests, a tool) each have their
//! own, and what a run started ends with it.
//!
//! The engine knows none of the things a session holds: a step kind keeps its own type in it
//! ([`Session::get`]), made on first use and dropped when the run ends.

use std::any::{Any, TypeId};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What one run holds while it lasts.
#[derive(Default)]
pub struct Session {
    /// One value per type, made on first use, dropped (in the order they were made, last first)
    /// when the session ends.
    held: Mutex<Vec<(TypeId, Arc<dyn Any + Send + Sync>)>>,
    /// The job this process computes an item for, in a worker.
    job: Option<String>,
}

impl Session {
    /// A session for a run.
    pub fn new() -> Arc<Self> {
        Arc::new(Session::default())
    }

    /// A session for computing one item in the worker of job `job` (the Slurm job id, or a
    /// process id): its private directories live under the job's own.
    pub fn for_job(job: &str) -> Arc<Self> {
        Arc::new(Session {
            held: Mutex::default(),
            job: Some(job.to_string()),
        })
    }

    /// The session's one value of type `T`, made with `T::default()` the first time it is asked
    /// for.
    pub fn get<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let mut held = self
            .held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((_, value)) = held.iter().find(|(id, _)| *id == TypeId::of::<T>()) {
            return Arc::clone(value)
                .downcast::<T>()
                .expect("a held value has its type");
        }
        let value = Arc::new(T::default());
        held.push((TypeId::of::<T>(), value.clone()));
        value
    }

    /// The directory under which items of this run keep their private directories (checkouts,
    /// pytest run files, scratch): the workdir, or in a worker its job's own directory, so two jobs
    /// on two nodes never check out into the same slot of a shared filesystem.
    pub fn private_root(&self, workdir: &Path) -> PathBuf {
        match &self.job {
            Some(job) => super::jobs::job_dir(workdir, job),
            None => workdir.to_path_buf(),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Last made, first dropped: a value made while using another may depend on it.
        let held = self
            .held
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        while let Some(value) = held.pop() {
            drop(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static DROPPED: AtomicUsize = AtomicUsize::new(0);

    #[derive(Default)]
    struct Counter(AtomicUsize);

    impl Drop for Counter {
        fn drop(&mut self) {
            DROPPED.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn each_session_has_its_own_values_and_drops_them_when_it_ends() {
        let (first, second) = (Session::new(), Session::new());
        first.get::<Counter>().0.fetch_add(2, Ordering::SeqCst);
        first.get::<Counter>().0.fetch_add(1, Ordering::SeqCst);
        assert_eq!(first.get::<Counter>().0.load(Ordering::SeqCst), 3);
        assert_eq!(second.get::<Counter>().0.load(Ordering::SeqCst), 0);
        let before = DROPPED.load(Ordering::SeqCst);
        drop(first);
        assert_eq!(DROPPED.load(Ordering::SeqCst), before + 1);
        drop(second);
        assert_eq!(DROPPED.load(Ordering::SeqCst), before + 2);
    }

    #[test]
    fn a_workers_private_directories_are_its_jobs() {
        let workdir = Path::new("/work");
        assert_eq!(Session::new().private_root(workdir), workdir);
        assert_eq!(
            Session::for_job("17").private_root(workdir),
            Path::new("/work/jobs/17")
        );
    }
}
