//! Running a Python-side subprocess (pip, venv creation, pytest collection) with a deadline, its
//! output captured to a file rather than a pipe so that a chatty process can never block on a full
//! pipe buffer, and a closed set of outcomes. Each process leads a process group of its own
//! ([`crate::process_groups`]), killed when it ends or times out, and when claimflow is stopped.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessOutcome {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it.
    Signalled,
    /// It outlived its deadline and was killed.
    TimedOut,
}

impl ProcessOutcome {
    pub fn success(self) -> bool {
        self == ProcessOutcome::Exited(0)
    }
}

/// Runs `command` to completion or until `timeout`, stdout and stderr both going to `log`.
pub fn run_logged(
    command: &mut Command,
    log: &Path,
    timeout: Duration,
) -> io::Result<ProcessOutcome> {
    let file = File::create(log)?;
    command
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file);
    // Dropping the group at the end kills whatever the process left running in it.
    let (mut child, group) = crate::process_groups::spawn(command)?;
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if let Some(status) = group.wait_exit(&mut child, left.min(Duration::from_millis(250)))? {
            return Ok(match status.code() {
                Some(code) => ProcessOutcome::Exited(code),
                None => ProcessOutcome::Signalled,
            });
        }
        if Instant::now() >= deadline {
            // The process may have exited in between; either way it is reaped.
            group.kill();
            child.wait()?;
            return Ok(ProcessOutcome::TimedOut);
        }
    }
}

/// The last `lines` lines of a log (lossily decoded), for error messages.
pub fn log_tail(log: &Path, lines: usize) -> String {
    let Ok(mut file) = File::open(log) else {
        return String::new();
    };
    // Reading at most the last 64 KiB keeps a huge pip log from costing anything.
    let length = file.metadata().map(|metadata| metadata.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(length.saturating_sub(64 * 1024)));
    let mut bytes = Vec::new();
    let _ = file.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_output_and_enforces_the_deadline() {
        let directory = tempfile::tempdir().unwrap();
        let log = directory.path().join("log");
        let outcome = run_logged(
            Command::new("sh").args(["-c", "echo one; echo two >&2; exit 3"]),
            &log,
            Duration::from_secs(10),
        )
        .unwrap();
        assert_eq!(outcome, ProcessOutcome::Exited(3));
        assert_eq!(log_tail(&log, 1), "two");
        let outcome = run_logged(
            Command::new("sleep").arg("5"),
            &log,
            Duration::from_millis(100),
        )
        .unwrap();
        assert_eq!(outcome, ProcessOutcome::TimedOut);
    }
}
