//! The jobs a coordinator has submitted and not yet seen end, one file per item key under
//! `<workdir>/slurm/jobs/`, and a log of every submission (`<workdir>/slurm/submitted.jsonl`).
//!
//! A coordinator killed mid-run leaves its jobs running. The next run, finding an item missing
//! from the cache, looks here first: a job for the same key still queued or running is adopted
//! and waited for instead of submitted again; one that ended has either stored its result (the
//! item is a cache hit and never gets here) or failed, and the item is submitted afresh.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::scheduler::JobId;
use crate::cache::{Digest, StoreError, write_atomic_in};

/// One job submitted for one item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Submission {
    pub job: JobId,
    /// The item's content key.
    pub key: Digest,
    pub step: String,
    pub item: String,
    /// The job's log file.
    pub log: PathBuf,
    /// Seconds since the Unix epoch when it was submitted.
    pub submitted: u64,
}

/// The journal of one workdir.
#[derive(Debug, Clone)]
pub struct Journal {
    dir: PathBuf,
}

impl Journal {
    /// The journal under `workdir`.
    pub fn new(workdir: &Path) -> Self {
        Journal {
            dir: workdir.join("slurm"),
        }
    }

    fn entry(&self, key: &Digest) -> PathBuf {
        self.dir.join("jobs").join(format!("{}.json", key.hex()))
    }

    /// Records a submission: the item's entry, and a line in the log of all submissions.
    pub fn record(&self, submission: &Submission) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec(submission).expect("a submission serializes");
        write_atomic_in(&self.dir.join("tmp"), &self.entry(&submission.key), &bytes)?;
        let log = self.dir.join("submitted.jsonl");
        let mut line = bytes;
        line.push(b'\n');
        // One write of a short line with O_APPEND: lines of concurrent writers do not mix.
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .and_then(|mut file| file.write_all(&line))
            .map_err(|source| StoreError::Io {
                action: "append to",
                path: log,
                source,
            })
    }

    /// The job last submitted for `key` and not yet seen end, if any.
    pub fn find(&self, key: &Digest) -> Option<Submission> {
        let bytes = std::fs::read(self.entry(key)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Forgets the job of `key` once it has ended.
    pub fn forget(&self, key: &Digest) {
        let _ = std::fs::remove_file(self.entry(key));
    }

    /// Every submission ever recorded in this workdir, oldest first.
    pub fn submissions(&self) -> Vec<Submission> {
        std::fs::read_to_string(self.dir.join("submitted.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_submission_is_found_until_forgotten_and_logged_for_good() {
        let directory = tempfile::tempdir().unwrap();
        let journal = Journal::new(directory.path());
        let key = Digest::of(b"item");
        let submission = Submission {
            job: JobId(42),
            key,
            step: "truth".into(),
            item: "demo@abc".into(),
            log: directory.path().join("x.42.log"),
            submitted: 1,
        };
        assert_eq!(journal.find(&key), None);
        journal.record(&submission).unwrap();
        assert_eq!(journal.find(&key), Some(submission.clone()));
        journal.forget(&key);
        assert_eq!(journal.find(&key), None);
        assert_eq!(journal.submissions(), vec![submission]);
    }
}
