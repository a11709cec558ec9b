//! The one way claimflow runs a child to its end: pytest (collection, the oracle's runs, testmon),
//! pip and uv, venv creation, a `command` step's shell, the local model's build.
//!
//! Every child leads a process group of its own ([`crate::process_groups`]), so a stopped run, a
//! timeout or the child's own end takes down everything it started. Its output goes through a
//! pipe that this thread drains into the capture file, at most [`Run::cap`] bytes of it: the
//! beginning is written as it comes, and beyond the cap only the last [`TAIL_KEPT`] bytes are kept
//! (and written at the end after a line saying how much was left out), since an error message
//! reads the end of a log. A chatty child can therefore neither fill the disk nor block on a full
//! pipe. One `poll` waits on the pipes and on a pidfd of the child together, so the wait ends the
//! moment the child exits (a fan-out of one-line commands runs as fast as the commands), and wakes
//! for the deadline and the cancellation token. The outcome is a closed enum. What a child may see
//! of claimflow's environment is built in one place too: [`ChildEnvironment`].

use std::fmt;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

pub mod cpu_use;
pub mod environment;

pub use environment::ChildEnvironment;

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It exited with this code.
    Exited(i32),
    /// A signal it did not get from us ended it (a crash, the OOM killer, its own `kill -9`).
    Signalled(i32),
    /// It outlived its timeout; it and its group were killed.
    TimedOut,
    /// The run was cancelled (Ctrl-C, SIGTERM); it and its group were killed.
    Cancelled,
}

impl Outcome {
    /// Whether it exited with code 0.
    pub fn success(self) -> bool {
        self == Outcome::Exited(0)
    }

    fn of(status: ExitStatus) -> Self {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(code), _) => Outcome::Exited(code),
            (None, Some(signal)) => Outcome::Signalled(signal),
            (None, None) => Outcome::Signalled(0),
        }
    }
}

impl fmt::Display for Outcome {
    /// Reads after "the command …".
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Exited(code) => write!(formatter, "exited with code {code}"),
            Outcome::Signalled(signal) => write!(formatter, "was killed by signal {signal}"),
            Outcome::TimedOut => write!(formatter, "timed out"),
            Outcome::Cancelled => write!(formatter, "was cancelled"),
        }
    }
}

/// A finished child: how it ended, how long it ran, and how much output the cap left out.
#[derive(Debug, Clone)]
pub struct Finished {
    pub outcome: Outcome,
    pub elapsed: Duration,
    /// Bytes of output not written to the capture (0 when all of it fit under the cap).
    pub left_out: u64,
    /// Its stdout and its stderr under [`Capture::Memory`] (empty otherwise).
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// For a run that timed out: whether it was starved of CPU or hung, measured as the deadline
    /// fired.
    pub stall: Option<cpu_use::Stall>,
}

/// Where a child's stdout and stderr go.
#[derive(Debug, Clone, Copy)]
pub enum Capture<'a> {
    /// Both into one file, interleaved as written.
    Log(&'a Path),
    /// Like [`Capture::Log`], but the file (and its directory) is made only when the child writes
    /// something; when it writes nothing, a file an earlier run left there is removed. A command
    /// that prints nothing costs no file: for a fan-out of thousands of quiet items, creating
    /// their empty logs was a good part of what each item cost beyond its own process.
    LogIfAny(&'a Path),
    /// Each into a file of its own, each under the cap.
    Split { stdout: &'a Path, stderr: &'a Path },
    /// Each kept in memory, under the cap, and returned in [`Finished`]: a short answer (a version,
    /// a probe's JSON).
    Memory,
}

/// What a capture keeps by default: 16 MiB, far above any log claimflow reads (pip's, pytest's).
pub const DEFAULT_CAP: u64 = 16 * 1024 * 1024;

/// The end of an output kept beyond the cap: what error messages read.
pub const TAIL_KEPT: usize = 256 * 1024;

/// How often a run without a pidfd looks at its child (a kernel older than 5.3).
const WITHOUT_PIDFD: Duration = Duration::from_millis(5);

/// How often a cancellable run looks at its token.
const CANCEL_CHECK: Duration = Duration::from_millis(50);

/// One child to run: the command, where its output goes, and its limits.
pub struct Run<'a> {
    command: &'a mut Command,
    capture: Capture<'a>,
    timeout: Option<Duration>,
    cancel: Option<&'a CancellationToken>,
    cap: u64,
}

impl<'a> Run<'a> {
    /// Runs `command` with its output captured to `capture`, no stdin, no timeout, [`DEFAULT_CAP`].
    pub fn new(command: &'a mut Command, capture: Capture<'a>) -> Self {
        Run {
            command,
            capture,
            timeout: None,
            cancel: None,
            cap: DEFAULT_CAP,
        }
    }

    /// Kills the child's group once it ran this long.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Kills the child's group once `token` fires.
    pub fn cancel(mut self, token: &'a CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Bytes of each output written as they come; beyond them only the last [`TAIL_KEPT`].
    pub fn cap(mut self, bytes: u64) -> Self {
        self.cap = bytes;
        self
    }

    /// Starts the child and waits for its end. Errors are claimflow's own (the capture file, the
    /// spawn, a wait that failed); whatever the child does is an [`Outcome`].
    pub fn run(self) -> io::Result<Finished> {
        let mut sinks = match self.capture {
            Capture::Log(path) => vec![Sink::create(path, self.cap)?],
            Capture::LogIfAny(path) => vec![Sink {
                path: Some(path.to_path_buf()),
                on_first_write: true,
                ..Sink::memory(self.cap)
            }],
            Capture::Split { stdout, stderr } => vec![
                Sink::create(stdout, self.cap)?,
                Sink::create(stderr, self.cap)?,
            ],
            Capture::Memory => vec![Sink::memory(self.cap), Sink::memory(self.cap)],
        };
        let (out_reader, out_writer) = io::pipe()?;
        let mut readers: Vec<Option<File>> = vec![Some(File::from(OwnedFd::from(out_reader)))];
        self.command.stdin(Stdio::null());
        match self.capture {
            Capture::Log(_) | Capture::LogIfAny(_) => {
                self.command
                    .stdout(out_writer.try_clone()?)
                    .stderr(out_writer);
            }
            Capture::Split { .. } | Capture::Memory => {
                let (err_reader, err_writer) = io::pipe()?;
                readers.push(Some(File::from(OwnedFd::from(err_reader))));
                self.command.stdout(out_writer).stderr(err_writer);
            }
        }
        let started = Instant::now();
        let spawned = crate::process_groups::spawn(self.command);
        // The command holds the pipes' write ends; without dropping them here the pipes would never
        // reach their end.
        self.command.stdout(Stdio::null()).stderr(Stdio::null());
        // Dropping the group at the end kills whatever the child left running in it.
        let (mut child, group) = spawned?;
        for reader in readers.iter().flatten() {
            set_nonblocking(reader)?;
        }
        let deadline = self.timeout.map(|timeout| started + timeout);
        let mut buffer = vec![0u8; 64 * 1024];
        let mut stall = None;
        let outcome = loop {
            if let Some(status) = child.try_wait()? {
                break Outcome::of(status);
            }
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                // Read while the group still lives: a starved run is told from a hung one.
                stall = Some(cpu_use::Stall::measure(child.id(), started.elapsed()));
                group.kill();
                child.wait()?;
                break Outcome::TimedOut;
            }
            if self.cancel.is_some_and(CancellationToken::is_cancelled) {
                group.kill();
                child.wait()?;
                break Outcome::Cancelled;
            }
            let mut limit = deadline.map_or(Duration::MAX, |deadline| {
                deadline.saturating_duration_since(Instant::now())
            });
            if self.cancel.is_some() {
                limit = limit.min(CANCEL_CHECK);
            }
            wait(group.exit_fd(), &readers, limit)?;
            drain(&mut readers, &mut sinks, &mut buffer)?;
        };
        // Whatever the child left running in its group dies first; then what is left in the pipes
        // is read (a daemon that left the group and still writes is not waited for: one more
        // drain, and its pipe is closed).
        drop(group);
        drain(&mut readers, &mut sinks, &mut buffer)?;
        // A capture that could not be written (a full disk) fails the run, naming its file, once
        // the child is reaped and its group gone.
        let mut left_out = 0;
        let mut kept = Vec::new();
        for sink in sinks {
            let (dropped, bytes) = sink.finish()?;
            left_out += dropped;
            kept.push(bytes);
        }
        let mut kept = kept.into_iter();
        Ok(Finished {
            outcome,
            elapsed: started.elapsed(),
            left_out,
            stdout: kept.next().unwrap_or_default(),
            stderr: kept.next().unwrap_or_default(),
            stall,
        })
    }
}

/// One capture: the first `cap` bytes as they come, then the last [`TAIL_KEPT`] in memory.
struct Sink {
    /// The capture file, or none for a capture kept in memory (`memory`).
    path: Option<PathBuf>,
    file: Option<File>,
    /// The file is created by the first write ([`Capture::LogIfAny`]).
    on_first_write: bool,
    memory: Vec<u8>,
    /// The first write that failed: later output is dropped, the run still waits for the child.
    failed: Option<io::Error>,
    cap: u64,
    written: u64,
    /// The end of the output beyond the cap (at most twice [`TAIL_KEPT`], trimmed as it grows).
    tail: Vec<u8>,
    left_out: u64,
}

impl Sink {
    fn create(path: &Path, cap: u64) -> io::Result<Self> {
        let file = File::create(path).map_err(|error| in_file("create", path, &error))?;
        Ok(Sink {
            path: Some(path.to_path_buf()),
            file: Some(file),
            ..Sink::memory(cap)
        })
    }

    fn memory(cap: u64) -> Self {
        Sink {
            path: None,
            file: None,
            on_first_write: false,
            memory: Vec::new(),
            failed: None,
            cap,
            written: 0,
            tail: Vec::new(),
            left_out: 0,
        }
    }

    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.on_first_write
            && self.file.is_none()
            && let Some(path) = &self.path
        {
            let create = || File::create(path);
            let file = match create() {
                Err(error) if error.kind() == io::ErrorKind::NotFound => {
                    if let Some(parent) = path.parent() {
                        std::fs::create_dir_all(parent)
                            .map_err(|error| in_file("create", parent, &error))?;
                    }
                    create()
                }
                other => other,
            };
            self.file = Some(file.map_err(|error| in_file("create", path, &error))?);
        }
        match (&mut self.file, &self.path) {
            (Some(file), Some(path)) => file
                .write_all(bytes)
                .map_err(|error| in_file("write", path, &error)),
            _ => {
                self.memory.extend_from_slice(bytes);
                Ok(())
            }
        }
    }

    fn push(&mut self, mut bytes: &[u8]) {
        if self.failed.is_some() {
            self.left_out += bytes.len() as u64;
            return;
        }
        let room = usize::try_from(self.cap.saturating_sub(self.written)).unwrap_or(usize::MAX);
        if room > 0 {
            let head = &bytes[..bytes.len().min(room)];
            if let Err(error) = self.write(head) {
                self.failed = Some(error);
                self.left_out += bytes.len() as u64;
                return;
            }
            self.written += head.len() as u64;
            bytes = &bytes[head.len()..];
        }
        if !bytes.is_empty() {
            self.tail.extend_from_slice(bytes);
            if self.tail.len() > 2 * TAIL_KEPT {
                let excess = self.tail.len() - TAIL_KEPT;
                self.tail.drain(..excess);
                self.left_out += excess as u64;
            }
        }
    }

    /// Writes the kept end after a line saying how much was left out; returns that many bytes,
    /// and what a memory capture kept.
    fn finish(mut self) -> io::Result<(u64, Vec<u8>)> {
        if let Some(error) = self.failed.take() {
            return Err(error);
        }
        if self.on_first_write
            && self.file.is_none()
            && let Some(path) = &self.path
        {
            // Nothing was written: no log, and none from an earlier run passing for this one's.
            match std::fs::remove_file(path) {
                Err(error) if error.kind() != io::ErrorKind::NotFound => {
                    return Err(in_file("remove", path, &error));
                }
                _ => return Ok((0, Vec::new())),
            }
        }
        if self.tail.len() > TAIL_KEPT {
            let excess = self.tail.len() - TAIL_KEPT;
            self.tail.drain(..excess);
            self.left_out += excess as u64;
        }
        if self.left_out > 0 {
            let note = format!(
                "\n[{} bytes of output left out here: the capture keeps {} bytes and the end]\n",
                self.left_out, self.cap
            );
            let tail = std::mem::take(&mut self.tail);
            self.write(note.as_bytes())?;
            self.write(&tail)?;
        }
        Ok((self.left_out, self.memory))
    }
}

/// `error`, its message naming the capture file it happened on.
fn in_file(action: &str, path: &Path, error: &io::Error) -> io::Error {
    io::Error::new(
        error.kind(),
        format!("{action} {}: {error}", path.display()),
    )
}

fn set_nonblocking(fd: &File) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor this function borrows; no memory is passed.
    unsafe {
        let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Waits at most `limit` until the child exits (its pidfd is readable) or output arrives. Without
/// a pidfd the wait is at most [`WITHOUT_PIDFD`].
fn wait(exit: Option<&OwnedFd>, readers: &[Option<File>], mut limit: Duration) -> io::Result<()> {
    let mut fds: Vec<libc::pollfd> = readers
        .iter()
        .flatten()
        .map(AsRawFd::as_raw_fd)
        .chain(exit.map(AsRawFd::as_raw_fd))
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    if exit.is_none() {
        limit = limit.min(WITHOUT_PIDFD);
    }
    let millis = limit.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
    // SAFETY: a valid array of pollfds, owned for the duration of the call.
    let polled = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, millis) };
    if polled < 0 {
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
    Ok(())
}

/// Reads of one pipe per [`drain`]: a child that writes faster than it is read still lets the wait
/// look at its deadline, its exit and the token between drains.
const READS_PER_DRAIN: usize = 16;

/// Moves what the pipes hold (up to [`READS_PER_DRAIN`] reads each) into the sinks; a pipe at its
/// end is closed.
fn drain(readers: &mut [Option<File>], sinks: &mut [Sink], buffer: &mut [u8]) -> io::Result<()> {
    for (reader, sink) in readers.iter_mut().zip(sinks.iter_mut()) {
        let Some(file) = reader else { continue };
        for _ in 0..READS_PER_DRAIN {
            match file.read(buffer) {
                Ok(0) => {
                    *reader = None;
                    break;
                }
                Ok(read) => sink.push(&buffer[..read]),
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => break,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
        }
    }
    Ok(())
}

/// Runs `command` to its end or its `timeout`, its stdout and stderr kept in memory: for a child
/// whose answer is short (a version, a probe's JSON).
pub fn output(command: &mut Command, timeout: Duration) -> io::Result<Finished> {
    Run::new(command, Capture::Memory).timeout(timeout).run()
}

/// Runs `command` to its end or its `timeout`, stdout and stderr both into `log`: the shorthand
/// for a child whose output is only read when it fails.
pub fn run_logged(command: &mut Command, log: &Path, timeout: Duration) -> io::Result<Outcome> {
    Ok(Run::new(command, Capture::Log(log))
        .timeout(timeout)
        .run()?
        .outcome)
}

/// The last `lines` lines of a log (lossily decoded), for error messages.
pub fn log_tail(log: &Path, lines: usize) -> String {
    let Ok(mut file) = File::open(log) else {
        return String::new();
    };
    // Reading at most the last 64 KiB keeps a huge log from costing anything.
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

    fn shell(script: &str) -> Command {
        let mut command = Command::new("sh");
        command.arg("-c").arg(script);
        command
    }

    #[test]
    fn captures_both_outputs_into_one_log_and_reports_the_exit_code() {
        let directory = tempfile::tempdir().unwrap();
        let log = directory.path().join("log");
        let finished = Run::new(
            &mut shell("echo one; echo two >&2; exit 3"),
            Capture::Log(&log),
        )
        .run()
        .unwrap();
        assert_eq!(finished.outcome, Outcome::Exited(3));
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "one\ntwo\n");
        assert_eq!(log_tail(&log, 1), "two");
        assert_eq!(finished.left_out, 0);
    }

    #[test]
    fn a_log_if_any_is_written_only_for_output_and_a_stale_one_goes() {
        let directory = tempfile::tempdir().unwrap();
        let log = directory.path().join("logs/step/item.log");
        let finished = Run::new(&mut shell("echo said >&2"), Capture::LogIfAny(&log))
            .run()
            .unwrap();
        assert_eq!(finished.outcome, Outcome::Exited(0));
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "said\n");
        // A quiet run of the same item leaves no log, not the earlier run's.
        let finished = Run::new(&mut shell("true"), Capture::LogIfAny(&log))
            .run()
            .unwrap();
        assert_eq!(finished.outcome, Outcome::Exited(0));
        assert!(!log.exists());
        let quiet = directory.path().join("logs/other/item.log");
        Run::new(&mut shell("exit 0"), Capture::LogIfAny(&quiet))
            .run()
            .unwrap();
        assert!(!quiet.parent().unwrap().exists(), "no directory for no log");
    }

    #[test]
    fn split_capture_keeps_stdout_and_stderr_apart() {
        let directory = tempfile::tempdir().unwrap();
        let (stdout, stderr) = (directory.path().join("out"), directory.path().join("err"));
        let finished = Run::new(
            &mut shell("echo out; echo err >&2"),
            Capture::Split {
                stdout: &stdout,
                stderr: &stderr,
            },
        )
        .run()
        .unwrap();
        assert!(finished.outcome.success());
        assert_eq!(std::fs::read_to_string(&stdout).unwrap(), "out\n");
        assert_eq!(std::fs::read_to_string(&stderr).unwrap(), "err\n");
    }

    #[test]
    fn a_memory_capture_returns_both_outputs() {
        let finished = output(
            &mut shell("echo out; echo err >&2"),
            Duration::from_secs(60),
        )
        .unwrap();
        assert!(finished.outcome.success());
        assert_eq!(finished.stdout, b"out\n");
        assert_eq!(finished.stderr, b"err\n");
        let finished = output(&mut shell("sleep 300"), Duration::from_millis(200)).unwrap();
        assert_eq!(finished.outcome, Outcome::TimedOut);
    }

    #[test]
    fn a_sleeping_child_that_times_out_is_measured_hung() {
        let finished = output(&mut shell("sleep 300"), Duration::from_secs(1)).unwrap();
        assert_eq!(finished.outcome, Outcome::TimedOut);
        let stall = finished.stall.expect("a timed-out run is measured");
        assert_eq!(stall.kind, cpu_use::StallKind::Hung, "{stall}");
        let finished = output(&mut shell("true"), Duration::from_secs(60)).unwrap();
        assert_eq!(finished.stall, None);
    }

    #[test]
    fn a_signal_is_told_apart_from_an_exit() {
        let directory = tempfile::tempdir().unwrap();
        let log = directory.path().join("log");
        let finished = Run::new(&mut shell("kill -9 $$"), Capture::Log(&log))
            .run()
            .unwrap();
        assert_eq!(finished.outcome, Outcome::Signalled(9));
    }

    #[test]
    fn the_timeout_kills_the_child_and_what_it_started() {
        let directory = tempfile::tempdir().unwrap();
        let log = directory.path().join("log");
        let pid_file = directory.path().join("pid");
        let finished = Run::new(
            &mut shell(&format!(
                "sleep 300 & echo $! > {}; wait",
                pid_file.display()
            )),
            Capture::Log(&log),
        )
        .timeout(Duration::from_millis(300))
        .run()
        .unwrap();
        assert_eq!(finished.outcome, Outcome::TimedOut);
        let straggler: libc::pid_t = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The straggler held the pipe; it dies with the group.
        let gone = (0..200).any(|_| {
            std::thread::sleep(Duration::from_millis(10));
            !alive(straggler)
        });
        assert!(gone, "pid {straggler} survived the timeout");
    }

    #[test]
    fn a_fired_token_cancels_the_child() {
        let directory = tempfile::tempdir().unwrap();
        let log = directory.path().join("log");
        let token = CancellationToken::new();
        token.cancel();
        let finished = Run::new(&mut shell("sleep 300"), Capture::Log(&log))
            .cancel(&token)
            .run()
            .unwrap();
        assert_eq!(finished.outcome, Outcome::Cancelled);
    }

    #[test]
    fn output_beyond_the_cap_keeps_its_beginning_and_its_end() {
        let directory = tempfile::tempdir().unwrap();
        let log = directory.path().join("log");
        // 2 MiB of numbered lines, then a last line an error message would read.
        let finished = Run::new(&mut shell("seq 1 300000; echo the-end"), Capture::Log(&log))
            .cap(1000)
            .run()
            .unwrap();
        assert!(finished.outcome.success());
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.starts_with("1\n2\n3\n"), "{}", &text[..40]);
        assert_eq!(log_tail(&log, 2), "300000\nthe-end");
        assert!(finished.left_out > 0);
        assert!(
            text.len() as u64 <= 1000 + TAIL_KEPT as u64 + 200,
            "{} bytes kept",
            text.len()
        );
        assert!(text.contains(&format!("[{} bytes of output left out", finished.left_out)));
    }

    #[test]
    fn the_wait_ends_at_the_exit_not_at_the_timeout() {
        let directory = tempfile::tempdir().unwrap();
        let log = directory.path().join("log");
        let limit = Duration::from_secs(120);
        let finished = Run::new(&mut shell("exit 0"), Capture::Log(&log))
            .timeout(limit)
            .run()
            .unwrap();
        assert!(finished.outcome.success());
        assert!(finished.elapsed < limit / 2, "the wait slept out its limit");
    }

    /// Whether `pid` runs (a zombie waiting for a reaper does not).
    fn alive(pid: libc::pid_t) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            let state = stat.rsplit_once(") ").map(|(_, rest)| rest.chars().next());
            state != Some(Some('Z'))
        })
    }
}
