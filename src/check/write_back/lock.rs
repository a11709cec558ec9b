//! The lock a write-back holds on a memory file's directory from re-reading the file to renaming
//! its new text into place, so two `check --write` runs never lose each other's marks: the second
//! waits, then re-reads the file the first wrote and marks its own claims in that.
//!
//! Why the directory and not the file: a lock is held on an inode, and the rename that replaces
//! the file gives its path a new inode, so a writer waiting on the old file's lock would wake up
//! holding a lock on a file nobody reads any more, and read the old text. A lock file beside the
//! memory file would survive the rename but would show in `git status`. The directory keeps its
//! inode across the rename and is already there; holding it also proves that a write-back
//! temporary file found in it belongs to no running writer ([`DirectoryLock::remove_orphans`]).
//! It is an advisory `flock(2)`: only claimflow's own writers heed it, and the kernel drops it when
//! its process dies, however it dies.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::error::WriteError;
use super::staged::is_temporary_name;

/// An exclusive lock on a directory, released when dropped.
pub struct DirectoryLock {
    directory: PathBuf,
    handle: File,
}

impl DirectoryLock {
    /// Waits for the lock on `directory`.
    pub fn take(directory: &Path) -> Result<Self, WriteError> {
        let failed = |source| WriteError::Lock {
            directory: directory.to_path_buf(),
            source,
        };
        let handle = File::open(directory).map_err(failed)?;
        handle.lock().map_err(failed)?;
        Ok(DirectoryLock {
            directory: directory.to_path_buf(),
            handle,
        })
    }

    /// Removes the write-back temporary files a killed writer left here. Safe under the lock: a
    /// running writer holds it as long as its temporary file exists, so any found now is an
    /// orphan. Only regular files named as claimflow names them are touched.
    pub fn remove_orphans(&self) -> Vec<PathBuf> {
        let mut removed = Vec::new();
        for entry in std::fs::read_dir(&self.directory).into_iter().flatten() {
            let Ok(entry) = entry else { continue };
            let is_file = entry.file_type().is_ok_and(|kind| kind.is_file());
            if is_file
                && is_temporary_name(&entry.file_name())
                && std::fs::remove_file(entry.path()).is_ok()
            {
                removed.push(entry.path());
            }
        }
        removed
    }

    /// Makes the renames done under the lock durable.
    pub fn sync(&self) -> Result<(), WriteError> {
        self.handle.sync_all().map_err(|source| WriteError::Lock {
            directory: self.directory.clone(),
            source,
        })
    }
}
