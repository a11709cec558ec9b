//! A memory file's new text, written to a temporary file beside it and renamed over it only once
//! every file of the write-back is staged. The temporary file
//!
//! - has the memory file's owner, group and mode before the rename, so writing as root does not
//!   hand the file to root;
//! - is named `.<file name>.claimflow-write-<random>`, so one left by a killed run is recognized
//!   and removed by the next ([`super::lock::DirectoryLock::remove_orphans`]);
//! - is recorded as scratch while it exists, so SIGINT or SIGTERM removes it
//!   ([`crate::process_groups::scratch`]); dropping it unrenamed removes it too.

use std::ffi::OsStr;
use std::fs::Metadata;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::process_groups::{self, Scratch};

use super::error::WriteError;

/// What marks a write-back's temporary file, after `.` and the memory file's name.
const TEMPORARY_MARK: &str = ".claimflow-write-";

/// Whether a directory entry is named as a write-back's temporary file.
pub fn is_temporary_name(name: &OsStr) -> bool {
    let name = name.to_string_lossy();
    name.starts_with('.') && name.contains(TEMPORARY_MARK)
}

/// A new text written beside its file, not yet renamed into place.
pub struct Staged {
    path: PathBuf,
    temporary: tempfile::NamedTempFile,
    _scratch: Scratch,
}

impl Staged {
    /// Writes `bytes` beside `path` with the owner, group and mode of `original` (the file as
    /// re-read under the lock).
    pub fn write(path: &Path, original: &Metadata, bytes: &[u8]) -> Result<Self, WriteError> {
        let failed = |source| WriteError::Write {
            path: path.to_path_buf(),
            source,
        };
        let directory = path
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let mut temporary = tempfile::Builder::new()
            .prefix(&format!(".{name}{TEMPORARY_MARK}"))
            .tempfile_in(directory)
            .map_err(failed)?;
        let scratch = process_groups::scratch(temporary.path());
        keep_owner(temporary.as_file(), original).map_err(|source| WriteError::Owner {
            path: path.to_path_buf(),
            uid: original.uid(),
            gid: original.gid(),
            source,
        })?;
        // After the owner: chown(2) clears the set-user-id and set-group-id bits.
        temporary
            .as_file()
            .set_permissions(std::fs::Permissions::from_mode(original.mode() & 0o7777))
            .map_err(failed)?;
        temporary.write_all(bytes).map_err(failed)?;
        temporary.as_file().sync_all().map_err(failed)?;
        Ok(Staged {
            path: path.to_path_buf(),
            temporary,
            _scratch: scratch,
        })
    }

    /// The temporary file's path (what the tests look for).
    #[cfg(test)]
    pub fn temporary_path(&self) -> &Path {
        self.temporary.path()
    }

    /// Renames the new text over its file; the file's path.
    pub fn commit(self) -> Result<PathBuf, WriteError> {
        let Staged {
            path,
            temporary,
            _scratch,
        } = self;
        temporary
            .persist(&path)
            .map_err(|error| WriteError::Write {
                path: path.clone(),
                source: error.error,
            })?;
        Ok(path)
    }
}

/// Gives `file` the owner and group of `original`, when they differ: a writer that is not root
/// can give a file only a group of its own, and is refused rather than changing the owner.
fn keep_owner(file: &std::fs::File, original: &Metadata) -> std::io::Result<()> {
    let current = file.metadata()?;
    if (current.uid(), current.gid()) == (original.uid(), original.gid()) {
        return Ok(());
    }
    std::os::unix::fs::fchown(file, Some(original.uid()), Some(original.gid()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporary_files_are_named_so_the_next_run_recognizes_them() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("CLAUDE.md");
        std::fs::write(&path, "old").unwrap();
        let metadata = std::fs::metadata(&path).unwrap();
        let staged = Staged::write(&path, &metadata, b"new").unwrap();
        let name = staged.temporary_path().file_name().unwrap().to_owned();
        assert!(
            name.to_string_lossy()
                .starts_with(".CLAUDE.md.claimflow-write-"),
            "{name:?}"
        );
        assert!(is_temporary_name(&name));
        assert!(!is_temporary_name(OsStr::new("CLAUDE.md")));
        assert!(!is_temporary_name(OsStr::new(".CLAUDE.md.swp")));
        assert_eq!(staged.commit().unwrap(), path);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(std::fs::read_dir(directory.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_staged_text_dropped_unrenamed_leaves_nothing() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("CLAUDE.md");
        std::fs::write(&path, "old").unwrap();
        let metadata = std::fs::metadata(&path).unwrap();
        drop(Staged::write(&path, &metadata, b"new").unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(std::fs::read_dir(directory.path()).unwrap().count(), 1);
    }
}
