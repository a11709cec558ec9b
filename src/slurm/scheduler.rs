//! Talking to Slurm: submit a batch script, read the states of jobs, cancel jobs.
//!
//! [`Scheduler`] is the whole surface the executor needs, so the dispatcher can be driven by a
//! simulated cluster in tests and benchmarks; [`SlurmCommands`] is the real one, which runs the
//! Slurm client commands:
//!
//! - `sbatch --parsable --export=ALL SCRIPT`, started with an empty environment plus the
//!   allow-list the job should see ([`crate::slurm::script::job_environment`]): `--export=ALL`
//!   hands the job exactly that, and avoids `--export=NONE`'s login-shell environment, which
//!   costs seconds per job and brings the user's whole environment back.
//! - `squeue --states=all --jobs=…` once per poll for every job in flight: it reports pending,
//!   running and recently ended jobs (for `MinJobAge`, 300 s by default) with their final state.
//! - `sacct`, then `sacct -c` (a cluster without an accounting database but with a job-completion
//!   log), for a job squeue has forgotten.
//! - `scancel` for the jobs of a stopped run.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A Slurm job id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct JobId(pub u64);

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Where a job is, as Slurm names its states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobState {
    /// Queued, configuring, suspended, requeued: not running yet or not now.
    Waiting(String),
    /// Running, or ending (`COMPLETING`).
    Running,
    /// Ended with exit code 0.
    Completed,
    /// Ended with a non-zero exit code or a signal.
    Failed,
    /// `scancel`led, by a user or an administrator.
    Cancelled,
    /// Killed at its time limit.
    Timeout,
    /// Taken off its node for a job of higher priority.
    Preempted,
    /// Its node failed, or it ran out of memory, or it could not boot or meet its deadline.
    Lost(String),
}

impl JobState {
    /// Reads a state as squeue (`%T`) or sacct (`State`, e.g. `CANCELLED by 0`) prints it.
    pub fn parse(text: &str) -> JobState {
        let word = text
            .split_whitespace()
            .next()
            .unwrap_or("")
            .trim_end_matches('+');
        match word {
            "RUNNING" | "COMPLETING" | "SIGNALING" | "STAGE_OUT" | "RESIZING" => JobState::Running,
            "COMPLETED" => JobState::Completed,
            "FAILED" => JobState::Failed,
            "CANCELLED" => JobState::Cancelled,
            "TIMEOUT" => JobState::Timeout,
            "PREEMPTED" => JobState::Preempted,
            "NODE_FAIL" | "OUT_OF_MEMORY" | "BOOT_FAIL" | "DEADLINE" | "REVOKED" => {
                JobState::Lost(word.to_string())
            }
            other => JobState::Waiting(other.to_string()),
        }
    }

    /// True once the job has ended and its state will not change.
    pub fn is_final(&self) -> bool {
        !matches!(self, JobState::Waiting(_) | JobState::Running)
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            JobState::Waiting(state) | JobState::Lost(state) => state.as_str(),
            JobState::Running => "RUNNING",
            JobState::Completed => "COMPLETED",
            JobState::Failed => "FAILED",
            JobState::Cancelled => "CANCELLED",
            JobState::Timeout => "TIMEOUT",
            JobState::Preempted => "PREEMPTED",
        };
        write!(f, "{text}")
    }
}

/// Why a Slurm command failed.
#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    /// The command could not be started (Slurm's client tools are not installed here).
    #[error("run `{command}`: {source} (are Slurm's client commands on the PATH?)")]
    Start {
        command: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// The command ran and refused.
    #[error("`{command}` failed ({status}): {stderr}")]
    Refused {
        command: &'static str,
        status: String,
        stderr: String,
    },
    /// The command's output was not what it prints.
    #[error("`{command}` printed `{output}`, which is not a job id")]
    Output {
        command: &'static str,
        output: String,
    },
}

/// What the executor needs from a cluster.
pub trait Scheduler: Send + Sync {
    /// Submits the batch script at `script`; returns the job's id.
    fn submit(&self, script: &Path) -> Result<JobId, SchedulerError>;

    /// The states of those of `jobs` the cluster still knows; a job it forgot is absent.
    fn states(&self, jobs: &[JobId]) -> Result<BTreeMap<JobId, JobState>, SchedulerError>;

    /// Cancels `jobs` (ended ones are ignored).
    fn cancel(&self, jobs: &[JobId]) -> Result<(), SchedulerError>;
}

/// The real cluster, through its client commands.
#[derive(Debug, Clone)]
pub struct SlurmCommands {
    /// The environment `sbatch` runs with, and so the job's (`--export=ALL`).
    environment: Vec<(String, OsString)>,
}

/// How long one client command (`sbatch`, `squeue`, `sacct`, `scancel`) may take.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(120);

/// Submissions the controller turns away for being busy are tried again this many times.
const SUBMIT_ATTEMPTS: u32 = 5;

impl SlurmCommands {
    /// Submits with `environment` as the job's whole environment.
    pub fn new(environment: Vec<(String, OsString)>) -> Self {
        SlurmCommands { environment }
    }

    /// True when Slurm's client commands are on the PATH.
    pub fn available() -> bool {
        crate::process::output(Command::new("sinfo").arg("--version"), CLIENT_TIMEOUT)
            .is_ok_and(|output| output.outcome.success())
    }

    /// Runs one client command (through the one process runner): a controller that never
    /// answers ends in a refusal that says it timed out, not in a run that waits forever.
    fn run(command: &'static str, mut process: Command) -> Result<String, SchedulerError> {
        let output = crate::process::output(&mut process, CLIENT_TIMEOUT)
            .map_err(|source| SchedulerError::Start { command, source })?;
        if output.outcome.success() {
            return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
        }
        Err(SchedulerError::Refused {
            command,
            status: output.outcome.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        })
    }

    fn job_list(jobs: &[JobId]) -> String {
        jobs.iter()
            .map(JobId::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// `sacct` (with an accounting database) or `sacct -c` (a job-completion log) for jobs
    /// squeue no longer lists.
    fn accounted(jobs: &[JobId]) -> BTreeMap<JobId, JobState> {
        for completion_log in [false, true] {
            let mut sacct = Command::new("sacct");
            if completion_log {
                sacct.arg("-c");
            }
            sacct.args([
                "--noheader",
                "--parsable2",
                "--allocations",
                "--format=JobID,State",
            ]);
            sacct.arg(format!("--jobs={}", Self::job_list(jobs)));
            if let Ok(output) = Self::run("sacct", sacct) {
                let states = parse_states(&output, '|');
                if !states.is_empty() {
                    return states;
                }
            }
        }
        BTreeMap::new()
    }
}

impl Scheduler for SlurmCommands {
    fn submit(&self, script: &Path) -> Result<JobId, SchedulerError> {
        let mut attempt = 0;
        loop {
            let mut sbatch = Command::new("sbatch");
            sbatch
                .env_clear()
                .envs(self.environment.iter().map(|(name, value)| (name, value)))
                .args(["--parsable", "--export=ALL"])
                .arg(script);
            match Self::run("sbatch", sbatch) {
                Ok(output) => return parse_job_id(&output),
                Err(SchedulerError::Refused { stderr, .. })
                    if attempt + 1 < SUBMIT_ATTEMPTS && busy(&stderr) =>
                {
                    attempt += 1;
                    std::thread::sleep(Duration::from_millis(500 << attempt));
                }
                Err(error) => return Err(error),
            }
        }
    }

    fn states(&self, jobs: &[JobId]) -> Result<BTreeMap<JobId, JobState>, SchedulerError> {
        if jobs.is_empty() {
            return Ok(BTreeMap::new());
        }
        let mut squeue = Command::new("squeue");
        squeue.args(["--noheader", "--states=all", "--format=%i|%T"]);
        squeue.arg(format!("--jobs={}", Self::job_list(jobs)));
        let mut states = match Self::run("squeue", squeue) {
            Ok(output) => parse_states(&output, '|'),
            // Every job named has been forgotten.
            Err(SchedulerError::Refused { stderr, .. }) if stderr.contains("Invalid job id") => {
                BTreeMap::new()
            }
            Err(error) => return Err(error),
        };
        let forgotten: Vec<JobId> = jobs
            .iter()
            .filter(|job| !states.contains_key(job))
            .copied()
            .collect();
        if !forgotten.is_empty() {
            states.extend(Self::accounted(&forgotten));
        }
        states.retain(|job, _| jobs.contains(job));
        Ok(states)
    }

    fn cancel(&self, jobs: &[JobId]) -> Result<(), SchedulerError> {
        if jobs.is_empty() {
            return Ok(());
        }
        let mut scancel = Command::new("scancel");
        scancel.args(jobs.iter().map(JobId::to_string));
        Self::run("scancel", scancel).map(drop)
    }
}

/// The controller is busy or restarting: worth trying again.
fn busy(stderr: &str) -> bool {
    [
        "Socket timed out",
        "temporarily unavailable",
        "Unable to contact slurm controller",
        "Zero Bytes were transmitted",
    ]
    .iter()
    .any(|sign| stderr.contains(sign))
}

/// `sbatch --parsable` prints `ID` or `ID;CLUSTER`.
fn parse_job_id(output: &str) -> Result<JobId, SchedulerError> {
    let text = output.trim();
    let id = text.split(';').next().unwrap_or("");
    id.parse().map(JobId).map_err(|_| SchedulerError::Output {
        command: "sbatch",
        output: text.to_string(),
    })
}

/// Lines of `ID<sep>STATE`; job steps (`12.batch`) and array tasks are not jobs of ours.
fn parse_states(output: &str, separator: char) -> BTreeMap<JobId, JobState> {
    output
        .lines()
        .filter_map(|line| {
            let (id, state) = line.trim().split_once(separator)?;
            let id = id.parse().ok().map(JobId)?;
            Some((id, JobState::parse(state)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_sbatch_job_ids() {
        assert_eq!(parse_job_id("123\n").unwrap(), JobId(123));
        assert_eq!(parse_job_id("77;cluster\n").unwrap(), JobId(77));
        assert!(parse_job_id("Submitted batch job 5").is_err());
    }

    #[test]
    fn reads_states_as_squeue_and_sacct_print_them() {
        let states = parse_states(
            "1|COMPLETED\n6|TIMEOUT\n7|CANCELLED by 0\n8|PENDING\n9.batch|FAILED\n10|COMPLETING\n",
            '|',
        );
        assert_eq!(states[&JobId(1)], JobState::Completed);
        assert_eq!(states[&JobId(6)], JobState::Timeout);
        assert_eq!(states[&JobId(7)], JobState::Cancelled);
        assert_eq!(states[&JobId(8)], JobState::Waiting("PENDING".into()));
        assert!(!states.contains_key(&JobId(9)));
        assert_eq!(states[&JobId(10)], JobState::Running);
    }

    #[test]
    fn only_ended_states_are_final() {
        for state in [
            "COMPLETED",
            "FAILED",
            "CANCELLED",
            "TIMEOUT",
            "PREEMPTED",
            "OUT_OF_MEMORY",
        ] {
            assert!(JobState::parse(state).is_final(), "{state}");
        }
        for state in [
            "PENDING",
            "RUNNING",
            "COMPLETING",
            "CONFIGURING",
            "SUSPENDED",
            "REQUEUED",
        ] {
            assert!(!JobState::parse(state).is_final(), "{state}");
        }
    }
}
