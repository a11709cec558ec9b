//! Confining the processes that run mined code. A repository's tests are arbitrary code: they may
//! read the environment, the user's home, other processes' memory, or talk to the network; so may
//! the build scripts of the packages an environment installs, and a memory file's `check` command.
//! Each such process is given an allow-listed environment and a private `HOME` and `TMPDIR` by its
//! builder, and a [`Confinement`] here. Where the kernel lets an unprivileged process make user
//! namespaces, the process starts in fresh user, mount and PID namespaces (and, for mined tests and
//! checks, a network namespace with only a loopback interface, brought up so tests that serve on
//! `127.0.0.1` still work):
//! - its `/proc` is that of its own PID namespace ([`mounts`]): claimflow, whose environment may hold
//!   an API key, is not there to read, and the namespace's init is not dumpable, so its memory (a
//!   copy of claimflow's) cannot be read either;
//! - the whole filesystem is read-only to it but for the paths its builder names (the checkout, the
//!   private `HOME` and `TMPDIR`, the caches it fills) and a private `/dev/shm`;
//! - the places of the real home that hold credentials ([`HIDDEN`]: `~/.ssh`, `~/.aws`, `~/.netrc`,
//!   …) are covered by an empty read-only directory or `/dev/null`; the rest of the real home stays
//!   readable: interpreters (pyenv) and environment caches usually live there;
//! - it may not mount or unmount (its bounding set lacks `CAP_SYS_ADMIN`), so none of this can be
//!   undone from inside.
//!
//! Whether each layer works is probed once per process by starting `/bin/true` confined;
//! [`protections`] says what is active, for `claimflow doctor` and the run summary.

mod mounts;

use std::ffi::CString;
use std::fmt;
use std::io;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// Whether test processes run without a network, and why not when they do not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Network {
    /// A fresh user, network and mount namespace: loopback only, credentials in the real home
    /// hidden.
    Isolated,
    /// The kernel refused the namespaces (the reason, as the probe saw it); the network is open.
    Open(String),
    /// Confinement was turned off with `CLAIMFLOW_SANDBOX=off`.
    Disabled,
}

/// A layer of confinement beyond the namespaces themselves: active, or missing and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layer {
    Active,
    /// The kernel refused it (what the probe saw), or the namespaces it needs are missing.
    Missing(String),
}

impl Layer {
    /// True when the layer is active.
    pub fn is_active(&self) -> bool {
        *self == Layer::Active
    }
}

/// What confines the processes that run mined code on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protections {
    pub network: Network,
    /// A `/proc` of the process's own PID namespace, its init not dumpable: no other process of
    /// the machine (claimflow's own environment among them) can be read through it.
    pub private_proc: Layer,
    /// Everything read-only but the paths the process is given (and a private `/dev/shm`).
    pub read_only: Layer,
}

impl Protections {
    /// True when test processes get no network.
    pub fn network_isolated(&self) -> bool {
        self.network == Network::Isolated
    }

    /// What of the mount and PID layers is active, as one [`Layers`] the confinement applies.
    fn layers(&self) -> Layers {
        Layers {
            private_proc: self.private_proc.is_active(),
            read_only: self.read_only.is_active(),
        }
    }
}

impl fmt::Display for Protections {
    /// One line: what every test process gets.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "test processes: allow-listed environment (no secrets), private HOME and TMPDIR in the workdir, "
        )?;
        match &self.network {
            Network::Isolated => write!(
                formatter,
                "no network and credentials of the real home hidden (user + network + mount namespace)"
            )?,
            Network::Open(reason) => write!(
                formatter,
                "network OPEN (the kernel refused a user + network namespace: {reason})"
            )?,
            Network::Disabled => write!(formatter, "network OPEN (CLAIMFLOW_SANDBOX=off)")?,
        }
        match &self.private_proc {
            Layer::Active => write!(formatter, ", a /proc of their own")?,
            Layer::Missing(reason) => write!(
                formatter,
                ", the machine's /proc VISIBLE (other processes' environments readable: {reason})"
            )?,
        }
        match &self.read_only {
            Layer::Active => write!(formatter, ", writes only to their checkout and caches"),
            Layer::Missing(reason) => {
                write!(
                    formatter,
                    ", the filesystem WRITABLE outside the checkout ({reason})"
                )
            }
        }
    }
}

/// Entries of the real home that hold credentials; each that exists is hidden from test processes.
pub const HIDDEN: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config",
    ".docker",
    ".kube",
    ".netrc",
    ".git-credentials",
    ".pypirc",
    ".npmrc",
];

/// The variable that turns confinement off (`off`), for a machine where namespaces misbehave.
pub const SWITCH: &str = "CLAIMFLOW_SANDBOX";

/// What [`protections`] found, once it has looked.
static PROTECTIONS: OnceLock<Protections> = OnceLock::new();

/// What is active on this machine, probed once: the namespaces with every layer, and where that
/// fails, fewer layers, so a kernel that refuses one layer still gets the others.
pub fn protections() -> &'static Protections {
    PROTECTIONS.get_or_init(|| {
        let missing = |why: &str| Layer::Missing(why.to_string());
        if std::env::var(SWITCH).is_ok_and(|value| value == "off") {
            let why = format!("turned off by {SWITCH}=off");
            return Protections {
                network: Network::Disabled,
                private_proc: missing(&why),
                read_only: missing(&why),
            };
        }
        let full = Layers {
            private_proc: true,
            read_only: true,
        };
        let Err(refused) = probe(full) else {
            return Protections {
                network: Network::Isolated,
                private_proc: Layer::Active,
                read_only: Layer::Active,
            };
        };
        for (private_proc, read_only) in [(true, false), (false, true), (false, false)] {
            let layers = Layers {
                private_proc,
                read_only,
            };
            if probe(layers).is_ok() {
                let layer = |active: bool| {
                    if active {
                        Layer::Active
                    } else {
                        missing(&format!("the kernel refused it: {refused}"))
                    }
                };
                return Protections {
                    network: Network::Isolated,
                    private_proc: layer(layers.private_proc),
                    read_only: layer(layers.read_only),
                };
            }
        }
        let why = format!("no namespaces: {refused}");
        Protections {
            network: Network::Open(refused),
            private_proc: missing(&why),
            read_only: missing(&why),
        }
    })
}

/// What [`protections`] found, if this process has started a test process (or asked) already;
/// None without probing. A run says what its test processes got only when it started some: the
/// probe starts a confined process of its own, which a run that starts none need not pay for.
pub fn probed() -> Option<&'static Protections> {
    PROTECTIONS.get()
}

/// The mount and PID layers applied to one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layers {
    private_proc: bool,
    read_only: bool,
}

/// How one process that runs mined code is confined: whether it keeps the network, and the paths
/// it may write. Built by the one builder of each kind of process (pytest's launch, an environment
/// build, a check command) and applied to its command.
///
/// Whatever the machine allows, the process gets limits ([`limit`]) and dies with claimflow (the
/// parent-death signal); with namespaces, it also runs in a PID namespace of its own whose init is
/// a small reaper, so when the process ends, is killed with its group at a timeout, or loses
/// claimflow to a SIGKILL, every process it left behind dies with the namespace — also one that
/// left the process group with `setsid`.
#[derive(Debug, Clone)]
pub struct Confinement {
    /// False for mined tests and checks (loopback only); true for environment builds, which need
    /// the package index.
    network: bool,
    /// What the process may write; everything else is read-only to it.
    writable: Vec<PathBuf>,
    /// What stays visible although a [`HIDDEN`] entry holds it (an environment under `~/.config`).
    visible: Vec<PathBuf>,
}

impl Confinement {
    /// Mined tests and memory checks: loopback only.
    pub fn offline() -> Self {
        Confinement {
            network: false,
            writable: Vec::new(),
            visible: Vec::new(),
        }
    }

    /// Environment builds: the network stays (the package index), the rest as for tests.
    pub fn online() -> Self {
        Confinement {
            network: true,
            ..Confinement::offline()
        }
    }

    /// Lets the process write under `path` (which should exist: a missing path stays unwritable).
    pub fn writable(mut self, path: impl Into<PathBuf>) -> Self {
        self.writable.push(path.into());
        self
    }

    /// Keeps `path` visible although a hidden credential entry of the real home holds it.
    pub fn visible(mut self, path: impl Into<PathBuf>) -> Self {
        self.visible.push(path.into());
        self
    }

    /// Confines `command` as far as this machine allows ([`protections`] says how far).
    pub fn apply(&self, command: &mut Command) {
        limit(command);
        let protections = protections();
        if protections.network_isolated() {
            let keep: Vec<&Path> = self
                .writable
                .iter()
                .chain(&self.visible)
                .map(PathBuf::as_path)
                .collect();
            let plan =
                mounts::Plan::new(protections.layers(), hidden_entries(&keep), &self.writable);
            isolate(command, !self.network, plan);
        }
    }
}

/// The largest file a test process may write, 256 MiB: a test that writes more (say 1 GB to a
/// captured stdout, which pytest keeps in a temporary file and reads back into memory) is killed
/// by SIGXFSZ and gets no verdict, instead of filling the disk and the memory.
pub const FILE_SIZE_LIMIT: u64 = 256 * 1024 * 1024;

/// Limits (file size, no core dumps) and the parent-death signal, set between fork and exec.
fn limit(command: &mut Command) {
    // SAFETY: getpid cannot fail.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure makes only async-signal-safe system calls (setrlimit, prctl, getppid).
    unsafe {
        command.pre_exec(move || {
            set_limit(libc::RLIMIT_FSIZE, FILE_SIZE_LIMIT)?;
            set_limit(libc::RLIMIT_CORE, 0)?;
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            // claimflow died between the fork and the prctl: nothing would kill this process.
            if libc::getppid() != parent {
                libc::_exit(125);
            }
            Ok(())
        });
    }
}

/// Lowers one resource limit (soft and hard) to `value`, or leaves a lower one alone.
///
/// # Safety
/// Called between fork and exec: no allocation, no locks.
unsafe fn set_limit(resource: libc::__rlimit_resource_t, value: u64) -> io::Result<()> {
    // SAFETY: a valid rlimit struct is passed to getrlimit and setrlimit.
    unsafe {
        let mut current: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(resource, &mut current) != 0 {
            return Err(io::Error::last_os_error());
        }
        let value = value as libc::rlim_t;
        let wanted = libc::rlimit {
            rlim_cur: current.rlim_cur.min(value),
            rlim_max: current.rlim_max.min(value),
        };
        if libc::setrlimit(resource, &wanted) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The [`HIDDEN`] entries of the real home that exist and hold none of `keep`.
fn hidden_entries(keep: &[&Path]) -> Vec<(CString, bool)> {
    let Some(home) = std::env::var_os("HOME").map(PathBuf::from) else {
        return Vec::new();
    };
    if !home.is_absolute() || home == Path::new("/") {
        return Vec::new();
    }
    HIDDEN
        .iter()
        .map(|name| home.join(name))
        .filter(|entry| !keep.iter().any(|kept| kept.starts_with(entry)))
        .filter_map(|entry| {
            let metadata = std::fs::symlink_metadata(&entry).ok()?;
            // A symbolic link would be followed by mount: hide only what is really there.
            if metadata.file_type().is_symlink() {
                return None;
            }
            let path = CString::new(entry.into_os_string().into_vec()).ok()?;
            Some((path, metadata.is_dir()))
        })
        .collect()
}

/// Starts `/bin/true` confined with `layers`; an error says why that failed.
fn probe(layers: Layers) -> Result<(), String> {
    let mut command = Command::new("true");
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    isolate(
        &mut command,
        true,
        mounts::Plan::new(layers, hidden_entries(&[]), &[]),
    );
    match command.status() {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!("a confined process ended with {status}")),
        Err(error) => Err(error.to_string()),
    }
}

/// Adds the namespace set-up to run in the child between fork and exec: user, mount and PID
/// namespaces (and a network namespace with loopback up when `offline`), then the mounts of
/// `plan`. Everything it needs is prepared here: between fork and exec only system calls are safe
/// (no allocation).
fn isolate(command: &mut Command, offline: bool, plan: mounts::Plan) {
    // SAFETY: getuid and getgid cannot fail and touch no memory.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    // The process keeps its own ids inside the namespace, so files it writes keep their owner.
    let uid_map = format!("{uid} {uid} 1\n").into_bytes();
    let gid_map = format!("{gid} {gid} 1\n").into_bytes();
    // SAFETY: the closure makes only async-signal-safe system calls (unshare, open, write, close,
    // socket, ioctl, mount, prctl) on memory allocated before the fork.
    unsafe {
        command.pre_exec(move || {
            let mut namespaces = libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID;
            if offline {
                namespaces |= libc::CLONE_NEWNET;
            }
            if libc::unshare(namespaces) != 0 {
                return Err(io::Error::last_os_error());
            }
            write_proc(c"/proc/self/setgroups", b"deny")?;
            write_proc(c"/proc/self/uid_map", &uid_map)?;
            write_proc(c"/proc/self/gid_map", &gid_map)?;
            if offline {
                loopback_up()?;
            }
            plan.mount_filesystem()?;
            enter_pid_namespace()?;
            // The process to exec, now inside the PID namespace: its own /proc, then no way to
            // mount or unmount anything once it runs mined code.
            plan.mount_proc()?;
            mounts::drop_mount_capabilities()
        });
    }
}

/// Splits the process in three so the test process runs in the new PID namespace with a reaper as
/// its init: this process (claimflow's child, the leader of the process group) forks the init,
/// which forks the test process and returns to exec it. The init reaps every orphan in the
/// namespace and, when the test process ends, sends its wait status through a pipe and exits, which
/// kills whatever is left in the namespace; this process then ends the same way the test process
/// did (its exit code, or its signal), so the caller sees the test process's outcome. Each level
/// dies with the one above it (parent-death signal).
///
/// # Safety
/// Called between fork and exec: only system calls, no allocation, no locks.
unsafe fn enter_pid_namespace() -> io::Result<()> {
    // SAFETY: plain system calls on memory of this stack frame.
    unsafe {
        let mut pipe = [0 as libc::c_int; 2];
        if libc::pipe(pipe.as_mut_ptr()) != 0 {
            return Err(io::Error::last_os_error());
        }
        let [read_end, write_end] = pipe;
        let init = libc::fork();
        if init < 0 {
            return Err(io::Error::last_os_error());
        }
        if init > 0 {
            // The outer process: no descriptor but stdio and the pipe's read end, so the caller's
            // exec-error pipe closes when the test process execs.
            close_all_but(read_end);
            let mut status: libc::c_int = 0;
            let mut buffer = [0u8; 4];
            let mut got = 0;
            while got < 4 {
                let read = libc::read(read_end, buffer.as_mut_ptr().add(got).cast(), 4 - got);
                if read > 0 {
                    got += read as usize;
                } else if read == 0 || *libc::__errno_location() != libc::EINTR {
                    break;
                }
            }
            while libc::waitpid(init, &mut status, 0) < 0
                && *libc::__errno_location() == libc::EINTR
            {}
            if got < 4 {
                // The init died without a word: it was killed, as the test process was.
                libc::_exit(125);
            }
            end_like(i32::from_ne_bytes(buffer));
        }
        // The init of the namespace (pid 1 there). Its parent is outside the namespace, so
        // getppid() says 0 here and cannot tell whether the outer process already died; the outer
        // process dies only with its group or with claimflow, both of which take this one too.
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        // Its memory is a copy of claimflow's (the environment block, a key read from it): not
        // dumpable, so no process of the namespace may read it through /proc/1/environ or
        // /proc/1/mem. The test process execs, which makes it dumpable again.
        libc::prctl(libc::PR_SET_DUMPABLE, 0);
        libc::close(read_end);
        let test = libc::fork();
        if test < 0 {
            libc::_exit(125);
        }
        if test == 0 {
            // The test process: it execs when this function returns.
            libc::close(write_end);
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if libc::getppid() != init_pid_in_namespace() {
                libc::_exit(125);
            }
            return Ok(());
        }
        close_all_but(write_end);
        loop {
            let mut status: libc::c_int = 0;
            let reaped = libc::waitpid(-1, &mut status, 0);
            if reaped == test {
                let bytes = status.to_ne_bytes();
                libc::write(write_end, bytes.as_ptr().cast(), bytes.len());
                libc::_exit(0);
            }
            if reaped < 0 && *libc::__errno_location() != libc::EINTR {
                libc::_exit(125);
            }
        }
    }
}

/// The init's pid as its child sees it: 1, inside the new namespace.
fn init_pid_in_namespace() -> libc::pid_t {
    1
}

/// Closes every descriptor above stderr except `keep`.
///
/// # Safety
/// Called between fork and exec.
unsafe fn close_all_but(keep: libc::c_int) {
    // SAFETY: closing descriptors this process owns; close_range is a plain system call.
    unsafe {
        let all = libc::c_uint::MAX;
        let keep = keep as libc::c_uint;
        for (first, last) in [(3, keep.saturating_sub(1)), (keep + 1, all)] {
            if first <= last && libc::syscall(libc::SYS_close_range, first, last, 0) != 0 {
                for descriptor in first..last.min(4096) {
                    libc::close(descriptor as libc::c_int);
                }
            }
        }
    }
}

/// Ends this process as a process with wait status `status` ended: the same exit code, or the same
/// signal.
///
/// # Safety
/// Called between fork and exec.
unsafe fn end_like(status: libc::c_int) -> ! {
    // SAFETY: resetting a signal's disposition and signalling this process are plain system calls.
    unsafe {
        if libc::WIFEXITED(status) {
            libc::_exit(libc::WEXITSTATUS(status));
        }
        if libc::WIFSIGNALED(status) {
            let signal = libc::WTERMSIG(status);
            libc::signal(signal, libc::SIG_DFL);
            let mut unblock: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut unblock);
            libc::sigaddset(&mut unblock, signal);
            libc::sigprocmask(libc::SIG_UNBLOCK, &unblock, std::ptr::null_mut());
            libc::kill(libc::getpid(), signal);
            libc::_exit(128 + signal);
        }
        libc::_exit(125)
    }
}

/// Writes `bytes` to a file of `/proc` in one write, with system calls only.
///
/// # Safety
/// Called between fork and exec: no allocation, no locks.
unsafe fn write_proc(path: &std::ffi::CStr, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is a valid C string, `bytes` a valid buffer; the descriptor is closed.
    unsafe {
        let descriptor = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if descriptor < 0 {
            return Err(io::Error::last_os_error());
        }
        let written = libc::write(descriptor, bytes.as_ptr().cast(), bytes.len());
        let error = io::Error::last_os_error();
        libc::close(descriptor);
        if written < 0 || written as usize != bytes.len() {
            return Err(error);
        }
    }
    Ok(())
}

/// Brings the new namespace's loopback interface up (it starts down).
///
/// # Safety
/// Called between fork and exec: no allocation, no locks.
unsafe fn loopback_up() -> io::Result<()> {
    // SAFETY: a zeroed `ifreq` is valid; the socket is closed on every path.
    unsafe {
        let socket = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if socket < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut request: libc::ifreq = std::mem::zeroed();
        request.ifr_name[0] = b'l' as libc::c_char;
        request.ifr_name[1] = b'o' as libc::c_char;
        let mut result = libc::ioctl(socket, libc::SIOCGIFFLAGS as _, &mut request);
        if result == 0 {
            request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            result = libc::ioctl(socket, libc::SIOCSIFFLAGS as _, &request);
        }
        let error = io::Error::last_os_error();
        libc::close(socket);
        if result != 0 {
            return Err(error);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_confined_process_has_loopback_and_no_route_out() {
        if !isolation_expected() {
            return;
        }
        let mut command = Command::new("sh");
        command.args(["-c", "cat /proc/net/route; echo --; cat /proc/net/dev"]);
        Confinement::offline().apply(&mut command);
        let output = command.output().expect("a confined shell runs");
        assert!(output.status.success());
        let text = String::from_utf8_lossy(&output.stdout);
        let (routes, devices) = text.split_once("--\n").expect("both tables");
        // The route table has its header line and no route.
        assert_eq!(routes.lines().count(), 1, "{text}");
        // The only interface is loopback (after the two header lines).
        let interfaces: Vec<&str> = devices
            .lines()
            .skip(2)
            .filter_map(|line| line.split(':').next())
            .map(str::trim)
            .collect();
        assert_eq!(interfaces, ["lo"], "{text}");
    }

    /// Whether this machine should confine: when util-linux's `unshare` can make the namespaces,
    /// the probe must have succeeded too (a probe that fails where the kernel allows it is a bug,
    /// not a skip).
    fn isolation_expected() -> bool {
        let kernel_allows = Command::new("unshare")
            .args([
                "--user",
                "--map-current-user",
                "--net",
                "--mount",
                "--pid",
                "--fork",
                "true",
            ])
            .status()
            .is_ok_and(|status| status.success());
        if kernel_allows {
            assert!(protections().network_isolated(), "{}", protections());
        } else {
            eprintln!("this machine refuses namespaces: {}", protections());
        }
        kernel_allows
    }

    fn confined_shell(script: &str) -> std::process::Output {
        let mut command = Command::new("sh");
        command.args(["-c", script]);
        Confinement::offline().apply(&mut command);
        command.output().expect("a confined shell runs")
    }

    #[test]
    fn the_caller_sees_how_the_test_process_ended() {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(confined_shell("exit 7").status.code(), Some(7));
        assert_eq!(confined_shell("kill -9 $$").status.signal(), Some(9));
        assert_eq!(confined_shell("echo out").stdout, b"out\n");
    }

    #[test]
    fn a_process_that_left_the_group_dies_with_the_test_process() {
        if !isolation_expected() {
            return;
        }
        // `setsid` takes the sleeper out of the process group, where a group kill would not find
        // it; the PID namespace still does.
        let marker = format!("600.{}", std::process::id());
        let output = confined_shell(&format!("setsid sleep {marker} & sleep 0.2; exit 0"));
        assert!(output.status.success());
        std::thread::sleep(std::time::Duration::from_millis(300));
        let survivors: Vec<String> = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
            .map(|bytes| String::from_utf8_lossy(&bytes).replace('\0', " "))
            .filter(|line| line.starts_with("sleep ") && line.contains(&marker))
            .collect();
        assert!(survivors.is_empty(), "{survivors:?}");
    }

    #[test]
    fn a_test_process_cannot_write_a_file_past_the_limit() {
        use std::os::unix::process::ExitStatusExt;
        let directory = tempfile::tempdir().unwrap();
        let file = directory.path().join("big");
        let mut command = Command::new("sh");
        command.args([
            "-c",
            &format!(
                "exec head -c {} /dev/zero > {}",
                FILE_SIZE_LIMIT + 1024,
                file.display()
            ),
        ]);
        Confinement::offline()
            .writable(directory.path())
            .apply(&mut command);
        let output = command.output().expect("a confined shell runs");
        assert_eq!(output.status.signal(), Some(libc::SIGXFSZ), "{output:?}");
        assert!(std::fs::metadata(&file).unwrap().len() <= FILE_SIZE_LIMIT);
    }

    #[test]
    fn the_summary_names_every_protection() {
        let open = Protections {
            network: Network::Open("Operation not permitted".into()),
            private_proc: Layer::Missing("no namespaces".into()),
            read_only: Layer::Missing("no namespaces".into()),
        };
        let said = open.to_string();
        assert!(said.contains("private HOME and TMPDIR"), "{said}");
        assert!(said.contains("network OPEN"), "{said}");
        assert!(said.contains("/proc VISIBLE"), "{said}");
        assert!(said.contains("WRITABLE outside the checkout"), "{said}");
        let isolated = Protections {
            network: Network::Isolated,
            private_proc: Layer::Active,
            read_only: Layer::Active,
        };
        let said = isolated.to_string();
        assert!(said.contains("no network"), "{said}");
        assert!(said.contains("a /proc of their own"), "{said}");
        assert!(said.contains("writes only to their checkout"), "{said}");
    }

    /// A canary in this process's environment, as claimflow holds an API key in its own.
    const CANARY: &str = "CLAIMFLOW_SANDBOX_CANARY";

    #[test]
    fn a_confined_process_cannot_read_the_environment_of_claimflow_through_proc() {
        if !isolation_expected() {
            return;
        }
        // SAFETY: set once, before any confined process of this test; no other test reads it.
        unsafe { std::env::set_var(CANARY, "canary-5e1f") };
        let parent = std::process::id();
        // Every environ the process can open, its init's and claimflow's by pid included; the
        // process itself starts scrubbed, as every builder of a confined process makes it.
        let mut command = Command::new("/bin/sh");
        command.env_clear().env("PATH", "/usr/bin:/bin").args([
            "-c",
            &format!(
                "for f in /proc/[0-9]*/environ /proc/{parent}/environ /proc/1/mem; do \
                   cat \"$f\" 2>/dev/null | tr '\\0' '\\n'; done; ls /proc"
            ),
        ]);
        Confinement::offline().apply(&mut command);
        let output = command.output().expect("a confined shell runs");
        let seen = String::from_utf8_lossy(&output.stdout);
        assert!(!seen.contains("canary-5e1f"), "{seen}");
        // The namespace's own processes only: the init, the shell and what it started.
        let pids: Vec<u32> = seen.lines().filter_map(|line| line.parse().ok()).collect();
        assert!(!pids.contains(&parent), "{pids:?}");
        assert!(pids.iter().all(|pid| *pid < 100), "{pids:?}");
    }

    #[test]
    fn a_confined_process_cannot_unmount_its_proc_or_remount_a_path_writable() {
        if !isolation_expected() {
            return;
        }
        let output = confined_shell(
            "umount -l /proc 2>&1 || echo refused-umount; \
             mount -o remount,rw,bind / 2>&1 || echo refused-remount; \
             mount -t tmpfs none /mnt 2>&1 || echo refused-mount",
        );
        let said = String::from_utf8_lossy(&output.stdout);
        for refused in ["refused-umount", "refused-remount", "refused-mount"] {
            assert!(said.contains(refused), "{said}");
        }
    }

    #[test]
    fn a_confined_process_writes_only_where_it_was_given() {
        if !isolation_expected() {
            return;
        }
        let given = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let script = format!(
            "echo in > {given}/in.txt; echo out > {outside}/out.txt; echo shm > /dev/shm/claimflow-canary; \
             cat /dev/shm/claimflow-canary",
            given = given.path().display(),
            outside = outside.path().display()
        );
        let mut command = Command::new("sh");
        command.args(["-c", &script]);
        Confinement::offline()
            .writable(given.path())
            .apply(&mut command);
        let output = command.output().unwrap();
        assert!(given.path().join("in.txt").is_file(), "{output:?}");
        assert!(!outside.path().join("out.txt").exists(), "{output:?}");
        assert!(
            String::from_utf8_lossy(&output.stderr).contains("Read-only file system"),
            "{output:?}"
        );
        // A private /dev/shm: writable inside, nothing left on the machine's.
        assert_eq!(output.stdout, b"shm\n", "{output:?}");
        assert!(!Path::new("/dev/shm/claimflow-canary").exists());
    }

    /// std enters the working directory before pre-exec hooks run, so without entering it again
    /// a relative write went to the read-only mount under the writable bind.
    #[test]
    fn a_confined_process_writes_relative_paths_in_its_writable_working_directory() {
        if !isolation_expected() {
            return;
        }
        let given = tempfile::tempdir().unwrap();
        let mut command = Command::new("sh");
        command
            .args(["-c", "echo here > relative.txt"])
            .current_dir(given.path());
        Confinement::offline()
            .writable(given.path())
            .apply(&mut command);
        let output = command.output().unwrap();
        assert!(output.status.success(), "{output:?}");
        assert!(given.path().join("relative.txt").is_file(), "{output:?}");
    }

    #[test]
    fn an_environment_build_keeps_the_network_and_is_confined_alike() {
        if !isolation_expected() {
            return;
        }
        let outside = tempfile::tempdir().unwrap();
        let mut command = Command::new("sh");
        command.args([
            "-c",
            &format!(
                "cat /proc/net/route | wc -l; ls /proc | grep -c '^[0-9]'; echo x > {}/x",
                outside.path().display()
            ),
        ]);
        Confinement::online().apply(&mut command);
        let output = command.output().unwrap();
        let said = String::from_utf8_lossy(&output.stdout);
        let counts: Vec<usize> = said
            .lines()
            .filter_map(|line| line.trim().parse().ok())
            .collect();
        // The machine's routes are there (more than the header line) where it has any; few
        // processes are: the init, the shell, its pipeline.
        let machine_routes = std::fs::read_to_string("/proc/net/route")
            .unwrap()
            .lines()
            .count();
        assert_eq!(counts.first(), Some(&machine_routes), "{said}");
        assert!(counts.get(1).is_some_and(|count| *count < 10), "{said}");
        assert!(!outside.path().join("x").exists());
    }
}
