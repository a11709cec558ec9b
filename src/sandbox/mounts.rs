//! The mount side of confinement, run between fork and exec inside the new mount namespace: every
//! mount made private, the whole tree read-only but for the paths the process may write, a private
//! `/dev/shm`, the credential entries of the real home covered, and — once inside the new PID
//! namespace — a `/proc` of that namespace over the machine's. Then the process loses
//! `CAP_SYS_ADMIN` from its bounding set, so what runs after exec (as root of its user namespace
//! or not) can neither unmount that `/proc` to uncover the machine's nor remount a path writable.
//!
//! Everything is prepared in [`Plan::new`], before the fork: between fork and exec only system
//! calls are safe (no allocation, no locks).

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use super::Layers;

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttributes {
    set: u64,
    clear: u64,
    propagation: u64,
    user_namespace: u64,
}

/// `CAP_SYS_ADMIN`: mount, unmount, remount.
const CAP_SYS_ADMIN: libc::c_ulong = 21;

/// What one confined process gets mounted, prepared before the fork.
#[derive(Debug, Clone)]
pub struct Plan {
    layers: Layers,
    /// Credential entries of the real home to cover: a path, and whether it is a directory.
    hidden: Vec<(CString, bool)>,
    /// The paths the process may write, resolved (symbolic links followed), those that exist.
    writable: Vec<CString>,
    /// Whether `/dev/shm` exists, to get a private tmpfs (Python's multiprocessing needs it).
    shared_memory: bool,
}

impl Plan {
    /// The plan for `layers`, covering `hidden`, with `writable` left writable.
    pub fn new(layers: Layers, hidden: Vec<(CString, bool)>, writable: &[PathBuf]) -> Self {
        let mut resolved: Vec<PathBuf> = writable
            .iter()
            .filter_map(|path| path.canonicalize().ok())
            .collect();
        // Outer paths first: a path inside another is bound over the outer one's bind.
        resolved.sort();
        resolved.dedup();
        Plan {
            layers,
            hidden,
            writable: resolved
                .into_iter()
                .filter_map(|path| CString::new(path.into_os_string().into_vec()).ok())
                .collect(),
            shared_memory: Path::new("/dev/shm").is_dir(),
        }
    }

    /// Makes every mount private, then read-only but for the writable paths (when that layer is
    /// on), then covers each hidden entry: a directory with an empty read-only tmpfs, a file with
    /// `/dev/null`.
    ///
    /// # Safety
    /// Called between fork and exec, in a fresh mount namespace: no allocation, no locks.
    pub unsafe fn mount_filesystem(&self) -> io::Result<()> {
        // SAFETY: every pointer is a valid C string or null, as mount(2) allows.
        unsafe {
            check(libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ))?;
            if self.layers.read_only {
                set_attributes(
                    c"/",
                    libc::AT_RECURSIVE as libc::c_uint,
                    libc::MOUNT_ATTR_RDONLY,
                    0,
                )?;
                for path in &self.writable {
                    check(libc::mount(
                        path.as_ptr(),
                        path.as_ptr(),
                        std::ptr::null(),
                        libc::MS_BIND | libc::MS_REC,
                        std::ptr::null(),
                    ))?;
                    set_attributes(path, 0, 0, libc::MOUNT_ATTR_RDONLY)?;
                }
                // The working directory was entered before these mounts (std changes directory
                // before running pre-exec hooks), so it still points into the read-only mount
                // below a writable bind: enter it again by name, through the binds.
                reenter_working_directory()?;
                if self.shared_memory {
                    check(libc::mount(
                        c"none".as_ptr(),
                        c"/dev/shm".as_ptr(),
                        c"tmpfs".as_ptr(),
                        libc::MS_NOSUID | libc::MS_NODEV,
                        c"mode=1777".as_ptr().cast(),
                    ))?;
                }
            }
            for (path, directory) in &self.hidden {
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

    /// Mounts a `/proc` of the current PID namespace over the machine's (when that layer is on).
    ///
    /// # Safety
    /// Called between fork and exec by a process inside the new PID namespace.
    pub unsafe fn mount_proc(&self) -> io::Result<()> {
        if !self.layers.private_proc {
            return Ok(());
        }
        // SAFETY: valid C strings; mount(2) takes a null data pointer.
        unsafe {
            check(libc::mount(
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                std::ptr::null(),
            ))
        }
    }
}

/// `chdir(getcwd())`: resolves the working directory's path again, through the mounts made since.
///
/// # Safety
/// Called between fork and exec: plain system calls on a buffer of this frame.
unsafe fn reenter_working_directory() -> io::Result<()> {
    let mut buffer = [0 as libc::c_char; libc::PATH_MAX as usize];
    // SAFETY: the buffer is writable for its whole length; getcwd NUL-terminates what it writes.
    unsafe {
        if libc::getcwd(buffer.as_mut_ptr(), buffer.len()).is_null() {
            return Err(io::Error::last_os_error());
        }
        check(libc::chdir(buffer.as_ptr()))
    }
}

/// Takes `CAP_SYS_ADMIN` out of the bounding set, so the program exec'd next never has it, even as
/// root of its user namespace: it cannot undo a mount.
///
/// # Safety
/// Called between fork and exec: a plain system call.
pub unsafe fn drop_mount_capabilities() -> io::Result<()> {
    // SAFETY: prctl with integer arguments.
    unsafe { check(libc::prctl(libc::PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0)) }
}

/// `mount_setattr(2)` on `path`: sets and clears mount attributes (`flags`: `AT_RECURSIVE` for the
/// whole tree under it).
///
/// # Safety
/// Called between fork and exec: a plain system call on memory of this frame.
unsafe fn set_attributes(
    path: &std::ffi::CStr,
    flags: libc::c_uint,
    set: u64,
    clear: u64,
) -> io::Result<()> {
    let attributes = MountAttributes {
        set,
        clear,
        propagation: 0,
        user_namespace: 0,
    };
    // SAFETY: a valid C string and a valid `mount_attr` of the size passed.
    let result = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            flags,
            &attributes as *const MountAttributes,
            std::mem::size_of::<MountAttributes>(),
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A system call's result as an `io::Result`.
fn check(result: libc::c_int) -> io::Result<()> {
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
