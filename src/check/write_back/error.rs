//! Why a write-back wrote nothing: one error type for the write-back and the pieces it stages and
//! locks with, in a file of its own so they need not import their parent.

use std::path::PathBuf;

use crate::check::memory_file::MemoryFileError;
use crate::check::sources::SourceError;

/// Why a write-back wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The commit to record could not be read.
    #[error("write back: read the range's last commit: {0}")]
    Commit(#[source] git2::Error),
    /// A flipped claim was not read from a file, so there is nowhere to mark it.
    #[error("write back claim {id}: it was not read from a file")]
    NoFile { id: String },
    /// Claims of one file were read at two different contents.
    #[error("write back {path}: it changed since its claims were read (run the check again)")]
    Changed { path: PathBuf },
    /// The claim is not where it was read, nor anywhere else under its id (the file was edited in
    /// between).
    #[error("write back {path}:{line}: claim {id} is no longer there (run the check again)")]
    NotFound {
        path: PathBuf,
        line: u32,
        id: String,
    },
    /// The file could not be read again, or is no longer a regular file within the size limit.
    #[error("write back: {0}")]
    Unreadable(#[source] MemoryFileError),
    /// The file is no longer UTF-8 text.
    #[error("write back {path}: it is no longer UTF-8 text (run the check again)")]
    NotText { path: PathBuf },
    /// The file no longer parses (it was read, so it changed in a way its digest missed).
    #[error("write back: {0}")]
    Source(#[source] SourceError),
    /// The directory of a file could not be locked.
    #[error("write back: lock {directory}: {source}")]
    Lock {
        directory: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The new text would not get the file's owner (only root can give a file another user).
    #[error(
        "write back {path}: cannot keep its owner {uid}:{gid}: {source} (run the check as the file's owner)"
    )]
    Owner {
        path: PathBuf,
        uid: u32,
        gid: u32,
        #[source]
        source: std::io::Error,
    },
    /// The temporary file could not be written or renamed into place.
    #[error("write back {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
