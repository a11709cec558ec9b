//! Every path a job reads or writes must be one the cluster's nodes share: the workdir (cache,
//! per-job worktrees, logs), the Python environment cache, the project root and the claimflow
//! binary itself. A node-local temporary directory (`/tmp`, `/var/tmp`, `/dev/shm`, `$TMPDIR`,
//! a tmpfs) looks fine on the machine that submits and is empty on the node that runs the job,
//! so it is refused before anything is submitted, with what to do instead.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Why a path cannot be shared with the cluster's jobs.
#[derive(Debug, thiserror::Error)]
pub enum SharedPathError {
    /// The path does not exist or cannot be resolved.
    #[error("the {what} {} cannot be used by cluster jobs: {source}", path.display())]
    Missing {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The path is on a node's own disk or memory.
    #[error(
        "the {what} {} is {why}, local to each node: jobs running on other nodes would not \
         see it. {hint}",
        path.display()
    )]
    NodeLocal {
        what: &'static str,
        path: PathBuf,
        why: String,
        hint: &'static str,
    },
}

/// Directories that are node-local on every cluster.
const LOCAL_DIRECTORIES: &[&str] = &["/tmp", "/var/tmp", "/dev/shm", "/run"];

/// Variables that name a node's own scratch space.
const LOCAL_VARIABLES: &[&str] = &["TMPDIR", "TMP", "TEMP", "SLURM_TMPDIR"];

/// Filesystems held in a node's memory.
const TMPFS_MAGIC: i64 = 0x0102_1994;
const RAMFS_MAGIC: i64 = 0x8584_58f6;

/// Checks that `path` (which must exist) is not node-local. `what` names it in the message
/// ("workdir") and `hint` says how to move it.
pub fn check_shared(
    what: &'static str,
    path: &Path,
    hint: &'static str,
) -> Result<(), SharedPathError> {
    let resolved = path
        .canonicalize()
        .map_err(|source| SharedPathError::Missing {
            what,
            path: path.to_path_buf(),
            source,
        })?;
    let local = |why: String| SharedPathError::NodeLocal {
        what,
        path: resolved.clone(),
        why,
        hint,
    };
    for directory in LOCAL_DIRECTORIES {
        if resolved.starts_with(directory) {
            return Err(local(format!("under {directory}")));
        }
    }
    for variable in LOCAL_VARIABLES {
        let Some(value) = std::env::var_os(variable).filter(|value| !value.is_empty()) else {
            continue;
        };
        let scratch = Path::new(&value)
            .canonicalize()
            .unwrap_or_else(|_| PathBuf::from(&value));
        if scratch != Path::new("/") && resolved.starts_with(&scratch) {
            return Err(local(format!("under ${variable} ({})", scratch.display())));
        }
    }
    if let Some(kind) = memory_filesystem(&resolved) {
        return Err(local(format!("on a {kind}")));
    }
    Ok(())
}

/// `tmpfs` or `ramfs` when `path` is on one.
fn memory_filesystem(path: &Path) -> Option<&'static str> {
    let name = CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statfs(2) fills the zeroed struct it is given; the path is NUL-terminated.
    let mut info: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(name.as_ptr(), &raw mut info) } != 0 {
        return None;
    }
    // `allow`, not `expect`: the cast is needed on the libc targets where f_type is not an i64.
    #[allow(
        clippy::unnecessary_cast,
        reason = "f_type's integer type differs between libc targets"
    )]
    match info.f_type as i64 {
        TMPFS_MAGIC => Some("tmpfs (memory)"),
        RAMFS_MAGIC => Some("ramfs (memory)"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HINT: &str = "move it";

    #[test]
    fn a_directory_under_tmp_is_refused_with_what_to_do() {
        let directory = tempfile::Builder::new().tempdir_in("/tmp").unwrap();
        let error = check_shared("workdir", directory.path(), HINT).unwrap_err();
        let message = error.to_string();
        assert!(message.contains("workdir"), "{message}");
        assert!(message.contains("under /tmp"), "{message}");
        assert!(message.ends_with("move it"), "{message}");
    }

    #[test]
    fn dev_shm_is_refused() {
        let error = check_shared("workdir", Path::new("/dev/shm"), HINT).unwrap_err();
        assert!(
            matches!(error, SharedPathError::NodeLocal { .. }),
            "{error}"
        );
    }

    #[test]
    fn a_missing_path_is_named() {
        let error = check_shared("workdir", Path::new("/no/such/place"), HINT).unwrap_err();
        assert!(matches!(error, SharedPathError::Missing { .. }), "{error}");
        assert!(error.to_string().contains("/no/such/place"));
    }

    #[test]
    fn a_system_directory_is_shared() {
        check_shared("binary", Path::new("/usr"), HINT).unwrap();
    }
}
