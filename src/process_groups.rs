//! Every child claimflow starts (through [`crate::process::Run`]: venv creation, pip, pytest
//! collection and runs, a `command` step's shell; and the local model's server) gets a process
//! group of its own, recorded here while it lives. A group is what a stopped run
//! must take down: pip's build subprocesses and pytest's children live in it too, and since the
//! group is not the terminal's foreground group, Ctrl-C no longer reaches them directly.
//!
//! [`stop_on_signals`] (called once by `main`) turns SIGINT and SIGTERM into: kill every recorded
//! group, remove every recorded scratch directory (an environment half-built) or file (a
//! write-back's temporary file), and exit with 128 + the signal (130 for Ctrl-C). The handler
//! itself only writes the signal's number to a pipe; a thread reads it and does the work, since
//! almost nothing is safe inside a signal handler.

use std::collections::BTreeMap;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

/// The live groups and scratch directories, by a handle id.
struct Live {
    next: u64,
    groups: BTreeMap<u64, libc::pid_t>,
    scratch: BTreeMap<u64, PathBuf>,
    /// Set once a signal arrived: no new child may start.
    stopping: bool,
    /// Children being started, not yet recorded: the cleanup waits for them.
    spawning: usize,
}

static LIVE: Mutex<Live> = Mutex::new(Live {
    next: 0,
    groups: BTreeMap::new(),
    scratch: BTreeMap::new(),
    stopping: false,
    spawning: 0,
});

/// Signalled when a child started is recorded (or failed to start).
static SPAWNED: Condvar = Condvar::new();

fn live() -> MutexGuard<'static, Live> {
    LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A child's process group, recorded until dropped. Dropping it kills whatever is left in the
/// group (a process the child started and did not wait for), so nothing outlives its step.
#[derive(Debug)]
pub struct Group {
    id: u64,
    leader: libc::pid_t,
    /// A pidfd of the leader (Linux 5.3 and later): readable once it exits, so a wait wakes on the
    /// exit itself instead of polling.
    exit: Option<OwnedFd>,
}

impl Group {
    /// Kills every process in the group. The group id stays reserved while any member lives, so
    /// this cannot reach an unrelated process.
    pub fn kill(&self) {
        kill_group(self.leader);
    }

    /// A pidfd of the leader, readable once it exits (None where the kernel has none): what
    /// [`crate::process::Run`] polls beside the child's output.
    pub fn exit_fd(&self) -> Option<&OwnedFd> {
        self.exit.as_ref()
    }
}

/// A pidfd of a child not yet reaped (so its pid cannot have been reused); None where the kernel
/// has no `pidfd_open`.
fn pidfd_of(pid: libc::pid_t) -> Option<OwnedFd> {
    // SAFETY: pidfd_open(2) takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: the descriptor was just opened by this process and is owned by nobody else.
    Some(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
        live().groups.remove(&self.id);
    }
}

/// Starts `command` as the leader of a new process group and records the group. Fails with
/// `Interrupted` once the process is stopping, so no child starts after the cleanup.
pub fn spawn(command: &mut Command) -> io::Result<(Child, Group)> {
    command.process_group(0);
    {
        let mut live = live();
        if live.stopping {
            return Err(io::Error::new(
                io::ErrorKind::Interrupted,
                "claimflow is stopping",
            ));
        }
        live.spawning += 1;
    }
    // Not under the lock: a spawn lasts until the child has exec'd, and holding the lock across
    // it made every worker of a step wait for the others' spawns. A signal's cleanup waits for
    // the spawns in flight instead, so a child still cannot start unrecorded.
    let spawned = command.spawn();
    let mut live = live();
    live.spawning -= 1;
    SPAWNED.notify_all();
    let child = spawned?;
    let leader = libc::pid_t::try_from(child.id()).expect("process ids fit pid_t");
    let id = live.next;
    live.next += 1;
    live.groups.insert(id, leader);
    drop(live);
    let exit = pidfd_of(leader);
    Ok((child, Group { id, leader, exit }))
}

/// A scratch directory or file recorded until dropped: removed if the process is stopped by a
/// signal before its owner renames or removes it.
#[derive(Debug)]
pub struct Scratch {
    id: u64,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        live().scratch.remove(&self.id);
    }
}

/// Records `path` as a scratch directory (or file: a write-back's temporary file) to remove if the
/// process is stopped.
pub fn scratch(path: &Path) -> Scratch {
    let mut live = live();
    let id = live.next;
    live.next += 1;
    live.scratch.insert(id, path.to_path_buf());
    Scratch { id }
}

/// Removes a scratch directory with everything in it, or a scratch file; one already gone (renamed
/// into place, or removed by its owner) is no error.
fn remove_scratch(path: &Path) {
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.is_dir() => {
            let _ = std::fs::remove_dir_all(path);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(path);
        }
        Err(_) => {}
    }
}

fn kill_group(leader: libc::pid_t) {
    // SAFETY: kill(2) with a negative pid signals a process group; it has no memory effects.
    unsafe {
        libc::kill(-leader, libc::SIGKILL);
    }
}

/// Kills every recorded group and removes every recorded scratch directory; no child starts
/// afterwards. Returns how many groups were killed.
pub fn stop_all() -> usize {
    let mut live = live();
    live.stopping = true;
    while live.spawning > 0 {
        live = SPAWNED
            .wait(live)
            .unwrap_or_else(|poisoned| poisoned.into_inner());
    }
    for leader in live.groups.values() {
        kill_group(*leader);
    }
    for path in live.scratch.values() {
        remove_scratch(path);
    }
    live.groups.len()
}

/// Actions run, by name, when a signal stops the process, before its children are killed:
/// cancelling a run's cluster jobs, which no process group holds.
static ON_STOP: Mutex<BTreeMap<&'static str, fn()>> = Mutex::new(BTreeMap::new());

/// Runs `action` when SIGINT or SIGTERM stops the process (once per `name`, however often it
/// is registered).
pub fn on_stop(name: &'static str, action: fn()) {
    ON_STOP
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .insert(name, action);
}

/// The cancellation tokens of the runs in this process, fired when a signal stops it.
static TOKENS: Mutex<Vec<tokio_util::sync::CancellationToken>> = Mutex::new(Vec::new());

/// Fires `token` when SIGINT or SIGTERM stops the process: in-flight async items stop where they
/// wait, before the groups are killed, so none of them is cached half-done.
pub fn cancel_on_stop(token: tokio_util::sync::CancellationToken) {
    TOKENS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .push(token);
}

/// The write end of the signal pipe (-1 until [`stop_on_signals`] ran).
static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);

/// The signal that is stopping the process (0 while none arrived).
static STOPPING_SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Whether a signal is stopping the process. The cleanup kills the children a step waits for, so
/// the step fails and `main` may reach its end first: it must then leave the exit to the signals
/// thread (128 + the signal, after the cleanup), not report the failure the cleanup caused.
pub fn stopping() -> bool {
    STOPPING_SIGNAL.load(Ordering::SeqCst) != 0
}

/// Waits for the signals thread to finish its cleanup and exit the process.
pub fn await_stop() -> ! {
    loop {
        std::thread::park();
    }
}

extern "C" fn on_signal(signal: libc::c_int) {
    STOPPING_SIGNAL.store(signal, Ordering::SeqCst);
    let byte = u8::try_from(signal).unwrap_or(0);
    // SAFETY: write(2) is async-signal-safe; the buffer is a local byte.
    unsafe {
        libc::write(
            SIGNAL_PIPE.load(Ordering::Relaxed),
            (&raw const byte).cast(),
            1,
        );
    }
}

/// On SIGINT or SIGTERM: [`stop_all`], then exit with 128 + the signal.
pub fn stop_on_signals() -> io::Result<()> {
    let mut ends = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let [read_end, write_end] = ends;
    SIGNAL_PIPE.store(write_end, Ordering::Relaxed);
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut byte = 0u8;
            loop {
                // SAFETY: reads one byte into a local buffer.
                let read = unsafe { libc::read(read_end, (&raw mut byte).cast(), 1) };
                if read == 1 {
                    break;
                }
                if read == 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                    return;
                }
            }
            let actions: Vec<fn()> = ON_STOP
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .values()
                .copied()
                .collect();
            for action in actions {
                action();
            }
            for token in TOKENS
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .iter()
            {
                token.cancel();
            }
            stop_all();
            std::process::exit(128 + i32::from(byte));
        })?;
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: installs a handler that only writes to a pipe; the sigaction is zeroed first.
        let installed = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&raw mut action.sa_mask);
            libc::sigaction(signal, &raw const action, std::ptr::null_mut())
        };
        if installed != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_group_takes_its_stragglers_with_it() {
        let directory = tempfile::tempdir().unwrap();
        let pid_file = directory.path().join("pid");
        // The leader exits at once and leaves a sleeper behind in its group.
        let (mut child, group) = spawn(
            Command::new("sh")
                .arg("-c")
                .arg(format!("sleep 300 & echo $! > {}", pid_file.display())),
        )
        .unwrap();
        assert!(child.wait().unwrap().success());
        let straggler: libc::pid_t = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(live().groups.values().any(|leader| *leader == group.leader));
        drop(group);
        let gone = (0..200).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            !alive(straggler)
        });
        assert!(gone, "pid {straggler} survived its group");
    }

    /// Whether `pid` runs (a zombie waiting for a reaper does not).
    fn alive(pid: libc::pid_t) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            let state = stat.rsplit_once(") ").map(|(_, rest)| rest.chars().next());
            state != Some(Some('Z'))
        })
    }
}
