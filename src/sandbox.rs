//! Confining the processes that run mined code. A repository's tests are arbitrary code: they may
//! read the environment, the user's home, or talk to the network. Every pytest process (collection,
//! the oracle's runs, testmon) is built by [`crate::python::PytestLaunch`], which gives it an
//! allow-listed environment and a private `HOME` and `TMPDIR` inside the workdir, and calls
//! [`confine`] here: where the kernel lets an unprivileged process make a user namespace and a
//! network namespace, the process starts in fresh ones, so it has a loopback interface (brought up,
//! so tests that serve on `127.0.0.1` still work) and no route out, and in a mount namespace of its
//! own where the places of the real home that hold credentials ([`HIDDEN`]: `~/.ssh`, `~/.aws`,
//! `~/.netrc`, …) are covered by an empty read-only directory or `/dev/null`. The rest of the real
//! home stays visible: interpreters (pyenv) and environment caches usually live there.
//!
//! Whether namespaces work is probed once per process by starting `/bin/true` confined;
//! [`protections`] says what is active, for `claimflow doctor` and the run header. Only test
//! processes are confined: creating environments (venv, pip) needs PyPI.

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

/// What confines test processes on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protections {
    pub network: Network,
}

impl Protections {
    /// True when test processes get no network.
    pub fn network_isolated(&self) -> bool {
        self.network == Network::Isolated
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
            ),
            Network::Open(reason) => write!(
                formatter,
                "network OPEN (the kernel refused a user + network namespace: {reason})"
            ),
            Network::Disabled => write!(formatter, "network OPEN (CLAIMFLOW_SANDBOX=off)"),
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

/// What is active on this machine, probed once.
pub fn protections() -> &'static Protections {
    static PROTECTIONS: OnceLock<Protections> = OnceLock::new();
    PROTECTIONS.get_or_init(|| Protections {
        network: if std::env::var(SWITCH).is_ok_and(|value| value == "off") {
            Network::Disabled
        } else {
            match probe() {
                Ok(()) => Network::Isolated,
                Err(reason) => Network::Open(reason),
            }
        },
    })
}

/// Makes `command` start in fresh user, network and mount namespaces when this machine allows it;
/// does nothing otherwise ([`protections`] says which). A hidden entry that holds one of `keep`
/// (the worktree, the environment) stays visible.
pub fn confine(command: &mut Command, keep: &[&Path]) {
    if protections().network_isolated() {
        isolate(command, hidden_entries(keep));
    }
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

/// Starts `/bin/true` confined; an error says why that failed.
fn probe() -> Result<(), String> {
    let mut command = Command::new("true");
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    isolate(&mut command, hidden_entries(&[]));
    match command.status() {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!("a confined process ended with {status}")),
        Err(error) => Err(error.to_string()),
    }
}

/// Adds the namespace set-up to run in the child between fork and exec: user, network and mount
/// namespaces, loopback up, each of `hidden` (a path, and whether it is a directory) covered.
/// Everything it needs is prepared here: between fork and exec only system calls are safe (no
/// allocation).
fn isolate(command: &mut Command, hidden: Vec<(CString, bool)>) {
    // SAFETY: getuid and getgid cannot fail and touch no memory.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    // The process keeps its own ids inside the namespace, so files it writes keep their owner.
    let uid_map = format!("{uid} {uid} 1\n").into_bytes();
    let gid_map = format!("{gid} {gid} 1\n").into_bytes();
    // SAFETY: the closure makes only async-signal-safe system calls (unshare, open, write, close,
    // socket, ioctl) on memory allocated before the fork.
    unsafe {
        command.pre_exec(move || {
            if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET | libc::CLONE_NEWNS) != 0 {
                return Err(io::Error::last_os_error());
            }
            write_proc(c"/proc/self/setgroups", b"deny")?;
            write_proc(c"/proc/self/uid_map", &uid_map)?;
            write_proc(c"/proc/self/gid_map", &gid_map)?;
            loopback_up()?;
            hide(&hidden)
        });
    }
}

/// Makes every mount private to the new namespace, then covers each hidden entry: a directory with
/// an empty read-only tmpfs, a file with `/dev/null`.
///
/// # Safety
/// Called between fork and exec: no allocation, no locks.
unsafe fn hide(hidden: &[(CString, bool)]) -> io::Result<()> {
    let check = |result: libc::c_int| {
        if result == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    };
    // SAFETY: every pointer is a valid C string or null, as mount(2) allows.
    unsafe {
        check(libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ))?;
        for (path, directory) in hidden {
            if *directory {
                check(libc::mount(
                    c"none".as_ptr(),
                    path.as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    c"size=4k,mode=0700".as_ptr().cast(),
                ))?;
            } else {
                check(libc::mount(
                    c"/dev/null".as_ptr(),
                    path.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND,
                    std::ptr::null(),
                ))?;
            }
        }
    }
    Ok(())
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
        if !protections().network_isolated() {
            // The machine refuses namespaces; `doctor` says so, and nothing here can be checked.
            eprintln!("{}", protections());
            return;
        }
        let mut command = Command::new("sh");
        command.args(["-c", "cat /proc/net/route; echo --; cat /proc/net/dev"]);
        confine(&mut command, &[]);
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

    #[test]
    fn the_summary_names_every_protection() {
        let open = Protections {
            network: Network::Open("Operation not permitted".into()),
        };
        assert!(open.to_string().contains("private HOME and TMPDIR"));
        assert!(open.to_string().contains("network OPEN"));
        let isolated = Protections {
            network: Network::Isolated,
        };
        assert!(isolated.to_string().contains("no network"));
    }
}
