//! Opening a memory file, for reading its claims or for writing them back, without trusting what
//! sits at its path. A committed `CLAUDE.md` can be a symlink to anywhere, and a path on the
//! command line can name a FIFO, a device or a kernel file: reading one of those hangs, grows
//! without bound, or hands a secret (`/proc/self/environ`) to a model. So, before a byte is read:
//!
//! - a path inside the repository must resolve inside it ([`MemoryFileError::LeavesRepository`]);
//! - the file must be a regular file on a real filesystem, opened without following a final
//!   symlink and without blocking, so a FIFO is refused instead of waited on;
//! - it is read through a bounded reader, at most `limit` bytes ([`DEFAULT_MAX_SIZE`] unless
//!   `--max-memory-file-size` raises it).

use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

/// The largest memory file read unless the user raises the limit: memory files are notes for a
/// model's context, and the largest seen in practice are well under a megabyte.
pub const DEFAULT_MAX_SIZE: u64 = 8 * 1024 * 1024;

/// A memory file that was refused before it was read.
#[derive(Debug, thiserror::Error)]
pub enum MemoryFileError {
    /// The path is inside the repository but resolves (through a symlink) outside it.
    #[error(
        "read claim source {path}: it is a symlink to {target}, outside the repository (copy the file into the repository or name the target itself)"
    )]
    LeavesRepository { path: PathBuf, target: PathBuf },
    /// A FIFO, a socket, a device or a directory: nothing a memory file can be.
    #[error("read claim source {path}: it is a {kind}, not a regular file (name a regular file)")]
    NotRegular { path: PathBuf, kind: &'static str },
    /// A file of the kernel's (`/proc`, `/sys`): regular by its mode, but no memory file.
    #[error(
        "read claim source {path}: it is a kernel file under /proc or /sys, not a memory file (name a regular file)"
    )]
    KernelFile { path: PathBuf },
    /// Over the size limit.
    #[error(
        "read claim source {path}: it is larger than the limit of {limit} bytes (raise it with --max-memory-file-size)"
    )]
    TooLarge { path: PathBuf, limit: u64 },
    /// The file could not be resolved, opened or read.
    #[error("read claim source {path}: {source} (check the path and its permissions)")]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Where `path` really is: its canonical path, refused when `path` lies inside `repository`
/// (canonical) and what it resolves to does not. A path outside the repository (the user's
/// Claude Code project memory, a file named on the command line) is taken where it resolves.
/// `label` names the file in errors.
pub fn resolve(
    path: &Path,
    repository: Option<&Path>,
    label: &Path,
) -> Result<PathBuf, MemoryFileError> {
    let resolved = path
        .canonicalize()
        .map_err(|source| MemoryFileError::Unreadable {
            path: label.to_path_buf(),
            source,
        })?;
    let Some(repository) = repository else {
        return Ok(resolved);
    };
    let lexical = normalized(path);
    let inside = lexical.starts_with(repository)
        || path
            .parent()
            .and_then(|parent| parent.canonicalize().ok())
            .is_some_and(|parent| parent.starts_with(repository));
    match inside && !resolved.starts_with(repository) {
        // Named as the repository names it, not as the target it leads to.
        true => Err(MemoryFileError::LeavesRepository {
            path: lexical
                .strip_prefix(repository)
                .map_or_else(|_| label.to_path_buf(), Path::to_path_buf),
            target: resolved,
        }),
        false => Ok(resolved),
    }
}

/// `path` absolute with `.` and `..` taken away by their names alone (no symlink followed), so
/// `repo/../elsewhere` is not mistaken for a path inside `repo`.
fn normalized(path: &Path) -> PathBuf {
    let absolute = match path.is_absolute() {
        true => path.to_path_buf(),
        false => std::env::current_dir().unwrap_or_default().join(path),
    };
    let mut out = PathBuf::new();
    for component in absolute.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Opens `path` (already resolved) for reading: not through a symlink, not blocking on a FIFO,
/// and only if it is a regular file on a real filesystem.
pub fn open(path: &Path, label: &Path) -> Result<File, MemoryFileError> {
    let unreadable = |source| MemoryFileError::Unreadable {
        path: label.to_path_buf(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(unreadable)?;
    let kind = file.metadata().map_err(unreadable)?.file_type();
    if !kind.is_file() {
        return Err(MemoryFileError::NotRegular {
            path: label.to_path_buf(),
            kind: kind_name(&kind),
        });
    }
    if is_kernel_filesystem(&file).map_err(unreadable)? {
        return Err(MemoryFileError::KernelFile {
            path: label.to_path_buf(),
        });
    }
    Ok(file)
}

/// The bytes of `file`, refused past `limit`: the size it states is checked first, and the read
/// itself stops one byte past the limit, since a file may grow while it is read.
pub fn read_bounded(file: &File, limit: u64, label: &Path) -> Result<Vec<u8>, MemoryFileError> {
    let unreadable = |source| MemoryFileError::Unreadable {
        path: label.to_path_buf(),
        source,
    };
    let too_large = || MemoryFileError::TooLarge {
        path: label.to_path_buf(),
        limit,
    };
    let stated = file.metadata().map_err(unreadable)?.len();
    if stated > limit {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(stated).unwrap_or(0));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    match bytes.len() as u64 > limit {
        true => Err(too_large()),
        false => Ok(bytes),
    }
}

/// [`resolve`], [`open`] and [`read_bounded`]: the bytes of a memory file, and where it is.
pub fn read(
    path: &Path,
    repository: Option<&Path>,
    limit: u64,
    label: &Path,
) -> Result<(PathBuf, Vec<u8>), MemoryFileError> {
    let resolved = resolve(path, repository, label)?;
    let file = open(&resolved, label)?;
    let bytes = read_bounded(&file, limit, label)?;
    Ok((resolved, bytes))
}

fn kind_name(kind: &std::fs::FileType) -> &'static str {
    if kind.is_dir() {
        "directory"
    } else if kind.is_fifo() {
        "FIFO"
    } else if kind.is_socket() {
        "socket"
    } else if kind.is_char_device() {
        "character device"
    } else if kind.is_block_device() {
        "block device"
    } else {
        "special file"
    }
}

/// Whether `file` lives on procfs or sysfs, whose files claim to be regular.
fn is_kernel_filesystem(file: &File) -> std::io::Result<bool> {
    // SAFETY: fstatfs(2) fills the zeroed struct it is given for an open descriptor.
    let mut stat: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstatfs(file.as_raw_fd(), &raw mut stat) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(matches!(
        stat.f_type,
        libc::PROC_SUPER_MAGIC | libc::SYSFS_MAGIC
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label() -> &'static Path {
        Path::new("CLAUDE.md")
    }

    #[test]
    fn a_symlink_out_of_the_repository_is_refused_one_inside_it_is_followed() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.md"), "- `a` b\n").unwrap();
        let repository = tempfile::tempdir().unwrap();
        let root = repository.path().canonicalize().unwrap();
        std::fs::write(root.join("AGENTS.md"), "- `a` b\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.md"), root.join("CLAUDE.md"))
            .unwrap();
        std::os::unix::fs::symlink("AGENTS.md", root.join("LINK.md")).unwrap();
        let error = resolve(&root.join("CLAUDE.md"), Some(&root), label()).unwrap_err();
        assert!(
            matches!(error, MemoryFileError::LeavesRepository { .. }),
            "{error}"
        );
        assert!(error.to_string().contains("outside the repository"));
        assert_eq!(
            resolve(&root.join("LINK.md"), Some(&root), label()).unwrap(),
            root.join("AGENTS.md")
        );
        let dotted = root
            .join("sub/../../")
            .join(outside.path().file_name().unwrap());
        std::fs::create_dir(root.join("sub")).unwrap();
        assert!(
            resolve(&dotted.join("secret.md"), Some(&root), label()).is_ok(),
            "a path that only names the repository on its way out is outside it"
        );
    }

    #[test]
    fn fifos_devices_and_proc_files_are_refused_without_blocking() {
        let directory = tempfile::tempdir().unwrap();
        let fifo = directory.path().join("memory.md");
        let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo(3) takes a NUL-terminated path and a mode.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0);
        let error = open(&fifo, label()).unwrap_err();
        assert!(error.to_string().contains("is a FIFO"), "{error}");
        let error = open(Path::new("/dev/zero"), label()).unwrap_err();
        assert!(error.to_string().contains("character device"), "{error}");
        let error = open(Path::new("/proc/self/environ"), label()).unwrap_err();
        assert!(
            matches!(error, MemoryFileError::KernelFile { .. }),
            "{error}"
        );
    }

    #[test]
    fn a_file_over_the_limit_is_refused_and_one_at_it_is_read() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("CLAUDE.md");
        std::fs::write(&path, "0123456789").unwrap();
        let file = open(&path, label()).unwrap();
        let error = read_bounded(&file, 9, label()).unwrap_err();
        assert!(
            error.to_string().contains("--max-memory-file-size"),
            "{error}"
        );
        let file = open(&path, label()).unwrap();
        assert_eq!(read_bounded(&file, 10, label()).unwrap(), b"0123456789");
    }
}
