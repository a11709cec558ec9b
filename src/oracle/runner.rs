//! Runs one pytest command under a timeout and reports how it ended.
//!
//! A run gets a fresh private directory (home, temp, the plugin, the selection and the record
//! file). The process is run by [`crate::process::Run`]: in its own process group, killed with
//! everything in it when the run ends or its timeout fires, so a test that forks or daemonizes
//! leaves nothing behind; its stdout and stderr are captured under a size cap.

use std::fs;
use std::path::Path;
use std::time::Duration;

use super::command::{PLUGIN_MODULE, PLUGIN_SOURCE, PytestInvocation, RunFiles, pytest_command};
use crate::process::cpu_use::Stall;
use crate::process::{Capture, Outcome, Run};
use crate::python::Environment;

/// Failures to run pytest at all (as opposed to tests failing, which is an outcome).
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// The run's directory or its files could not be prepared or read.
    #[error("prepare the pytest run directory {path}: {source}")]
    Prepare {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The interpreter could not be started or waited for, or its output not captured.
    #[error("run pytest with {python}: {source}")]
    Spawn {
        python: String,
        #[source]
        source: std::io::Error,
    },
    /// The filesystem of the run's directory was full (or read-only) when the run ended, so
    /// pytest may have failed to write its output or its record file: whatever the run did is
    /// no outcome of the tests.
    #[error(
        "run pytest in {path}: its filesystem is {state} ({available} bytes free), so the run's \
         outcome cannot be trusted; free some space there and run again"
    )]
    NoRoom {
        path: String,
        state: &'static str,
        available: u64,
    },
    /// Every attempt outlived its time limit starved of CPU: the machine was too busy to run
    /// the tests, which says nothing about them.
    #[error(
        "run pytest: the machine was too busy: {attempts} attempts timed out after {limit}s \
         starved of CPU (the last: {stall}); run again when the machine is less loaded"
    )]
    Starved {
        attempts: u32,
        /// Seconds of the last attempt's limit.
        limit: u64,
        stall: Box<Stall>,
    },
}

/// Below this many free bytes a filesystem counts as full: a run's captured output or record
/// file may have been cut short.
const FULL_BELOW: u64 = 1 << 20;

/// One finished run: how it ended, what the plugin recorded, and the end of its output.
#[derive(Debug, Clone)]
pub struct RunReport {
    pub outcome: Outcome,
    /// The plugin's record file, as written (possibly truncated by a crash).
    pub records: String,
    /// The last lines of stdout and stderr, for messages.
    pub output_tail: String,
    pub elapsed: Duration,
    /// For a run that timed out: whether it was starved of CPU or hung.
    pub stall: Option<Stall>,
}

/// What one run executes.
pub struct RunRequest<'a> {
    pub environment: &'a Environment,
    pub worktree: &'a Path,
    /// The run's directory; emptied first.
    pub files: &'a RunFiles,
    pub test_files: &'a [String],
    /// Node ids the plugin keeps.
    pub nodes: &'a [String],
    pub run: u32,
    pub timeout: Duration,
}

/// Runs pytest once.
pub fn run_pytest(request: &RunRequest) -> Result<RunReport, RunnerError> {
    prepare(request.files, request.nodes)?;
    let mut command = pytest_command(&PytestInvocation {
        environment: request.environment,
        worktree: request.worktree,
        files: request.files,
        test_files: request.test_files,
        run: request.run,
    })
    .map_err(|source| RunnerError::Prepare {
        path: request.files.dir.display().to_string(),
        source,
    })?;
    // Its own process group, killed when it ends or times out (and when claimflow is stopped),
    // so a test that forks or daemonizes leaves nothing behind.
    let (stdout, stderr) = (request.files.stdout(), request.files.stderr());
    let finished = Run::new(
        &mut command,
        Capture::Split {
            stdout: &stdout,
            stderr: &stderr,
        },
    )
    .timeout(request.timeout)
    .run();
    // A full disk is said as such, before the write to a capture it made fail.
    room_left(&request.files.dir)?;
    let finished = finished.map_err(|source| RunnerError::Spawn {
        python: request.environment.python.display().to_string(),
        source,
    })?;
    let (outcome, elapsed, stall) = (finished.outcome, finished.elapsed, finished.stall);

    let records = fs::read(request.files.records())
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .unwrap_or_default();
    let output_tail = format!(
        "{}\n{}",
        tail(&request.files.stdout(), 20),
        tail(&request.files.stderr(), 20)
    );
    Ok(RunReport {
        outcome,
        records,
        output_tail,
        elapsed,
        stall,
    })
}

/// Fails when the filesystem holding `dir` is read-only or has less than [`FULL_BELOW`] bytes
/// free: an outcome seen there may come from the disk, not from the tests.
fn room_left(dir: &Path) -> Result<(), RunnerError> {
    use std::os::unix::ffi::OsStrExt;
    let path =
        std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(|_| RunnerError::Prepare {
            path: dir.display().to_string(),
            source: std::io::Error::from(std::io::ErrorKind::InvalidInput),
        })?;
    // SAFETY: `statvfs` fills the zeroed struct it is given from a NUL-terminated path.
    let mut stats: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut stats) } != 0 {
        return Err(RunnerError::Prepare {
            path: dir.display().to_string(),
            source: std::io::Error::last_os_error(),
        });
    }
    let available = stats.f_bavail.saturating_mul(stats.f_frsize);
    let state = if stats.f_flag & libc::ST_RDONLY != 0 {
        "read-only"
    } else if available < FULL_BELOW {
        "full"
    } else {
        return Ok(());
    };
    Err(RunnerError::NoRoom {
        path: dir.display().to_string(),
        state,
        available,
    })
}

fn prepare(files: &RunFiles, nodes: &[String]) -> Result<(), RunnerError> {
    let failed = |path: &Path| {
        let path = path.display().to_string();
        move |source| RunnerError::Prepare { path, source }
    };
    if files.dir.exists() {
        fs::remove_dir_all(&files.dir).map_err(failed(&files.dir))?;
    }
    for dir in [files.home(), files.tmp(), files.plugin_dir()] {
        fs::create_dir_all(&dir).map_err(failed(&dir))?;
    }
    let plugin = files.plugin_dir().join(format!("{PLUGIN_MODULE}.py"));
    fs::write(&plugin, PLUGIN_SOURCE).map_err(failed(&plugin))?;
    let mut selection = nodes.join("\n");
    selection.push('\n');
    fs::write(files.selection(), selection).map_err(failed(&files.selection()))?;
    Ok(())
}

fn tail(path: &Path, lines: usize) -> String {
    let text = fs::read(path)
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
