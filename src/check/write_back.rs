//! `--write`: marking each flipped claim where it lives, never deleting it. A Markdown item gets a
//! note after it ([`note`]); a JSON record gets invalidation fields ([`fields`]). Writing twice for
//! the same range changes nothing, since a claim already marked is recognized.
//!
//! Each file is re-read under a lock on its directory ([`lock`]), held until its new text is in
//! place, so two writers take turns instead of one overwriting the other's marks. A file that
//! changed since its claims were read (the other writer's marks, an edit) has its claims found
//! again by their ids, and only a claim no longer there refuses the write. Every file's new text is
//! staged beside it ([`staged`]: its owner, group and mode kept) before any is renamed into place,
//! so a refusal writes nothing.

mod edit;
mod error;
mod fields;
mod lock;
mod note;
mod staged;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::check::claim::{CheckResult, MemoryClaim, SourceFormat, Verdict};
use crate::check::memory_file::{self, MemoryFileError};
use crate::check::sources::read::decode;

pub use error::WriteError;
use lock::DirectoryLock;
use staged::Staged;

/// The commit a write-back records as having falsified the claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalidation {
    /// The full commit id.
    pub commit: String,
    /// The commit's time, RFC 3339 in UTC (`2024-03-04T08:12:00Z`).
    pub time: String,
}

impl Invalidation {
    /// The id and committer time of `commit` in `repository`.
    pub fn of_commit(
        repository: &git2::Repository,
        commit: git2::Oid,
    ) -> Result<Self, git2::Error> {
        let found = repository.find_commit(commit)?;
        Ok(Invalidation {
            commit: commit.to_string(),
            time: crate::corpus::format_utc(found.time().seconds()),
        })
    }

    fn short(&self) -> &str {
        &self.commit[..self.commit.len().min(7)]
    }
}

/// What a write-back did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteReport {
    /// Files rewritten.
    pub files: Vec<PathBuf>,
    /// Claims marked by this write.
    pub marked: Vec<String>,
    /// Flipped claims found already marked (by an earlier write).
    pub already_marked: Vec<String>,
}

/// Marks every claim whose result is `flipped` in its file; `reason` says why in a Markdown note
/// (typically the result's evidence). Results are matched to claims by id and `file:line`; a file
/// re-read larger than `max_file_size` bytes is refused.
pub fn write_back(
    claims: &[MemoryClaim],
    results: &[CheckResult],
    commit: &Invalidation,
    reason: impl Fn(&CheckResult) -> String,
    max_file_size: u64,
) -> Result<WriteReport, WriteError> {
    let mut by_directory: BTreeMap<PathBuf, Vec<(PathBuf, FlippedInFile)>> = BTreeMap::new();
    for (path, file) in flipped_by_file(claims, results)? {
        by_directory
            .entry(directory_of(&path).to_path_buf())
            .or_default()
            .push((path, file));
    }
    let mut report = WriteReport::default();
    let mut locks = Vec::new();
    let mut staged = Vec::new();
    // Directories are locked in one order (sorted) by every writer, so two never deadlock.
    for (directory, files) in by_directory {
        let lock = DirectoryLock::take(&directory)?;
        lock.remove_orphans();
        for (path, file) in files {
            let (bytes, metadata) = current_bytes(&path, &file.label, max_file_size)?;
            if let Some(rewritten) = marked_file(&bytes, &file, commit, &reason, &mut report)? {
                staged.push(Staged::write(&path, &metadata, &rewritten)?);
            }
        }
        locks.push(lock);
    }
    for file in staged {
        report.files.push(file.commit()?);
    }
    for lock in &locks {
        lock.sync()?;
    }
    Ok(report)
}

fn directory_of(path: &Path) -> &Path {
    path.parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// The flipped claims of one file, with the digest they were read at.
struct FlippedInFile<'a> {
    digest: String,
    /// The file's name as its claims report it.
    label: PathBuf,
    flipped: Vec<(&'a MemoryClaim, &'a CheckResult)>,
}

fn flipped_by_file<'a>(
    claims: &'a [MemoryClaim],
    results: &'a [CheckResult],
) -> Result<BTreeMap<PathBuf, FlippedInFile<'a>>, WriteError> {
    let mut by_file: BTreeMap<PathBuf, FlippedInFile> = BTreeMap::new();
    for result in results
        .iter()
        .filter(|result| result.verdict == Verdict::Flipped)
    {
        let Some(claim) = claims
            .iter()
            .find(|claim| claim.id == result.id && claim.source.to_string() == result.source)
        else {
            continue;
        };
        let origin = claim.origin.as_ref().ok_or_else(|| WriteError::NoFile {
            id: claim.id.clone(),
        })?;
        let file = by_file
            .entry(origin.path.clone())
            .or_insert_with(|| FlippedInFile {
                digest: origin.digest.clone(),
                label: claim.source.file.clone(),
                flipped: Vec::new(),
            });
        if file.digest != origin.digest {
            return Err(WriteError::Changed {
                path: claim.source.file.clone(),
            });
        }
        file.flipped.push((claim, result));
    }
    Ok(by_file)
}

/// The file's new bytes with every flipped claim marked, or None when all were already marked.
/// `bytes` are the file as re-read under the lock; when they are not those the claims were read
/// from, the claims are found by their ids.
fn marked_file(
    bytes: &[u8],
    file: &FlippedInFile,
    commit: &Invalidation,
    reason: &impl Fn(&CheckResult) -> String,
    report: &mut WriteReport,
) -> Result<Option<Vec<u8>>, WriteError> {
    let moved = blake3::hash(bytes).to_hex().as_str() != file.digest;
    let text = decode(bytes).map_err(|_| WriteError::NotText {
        path: file.label.clone(),
    })?;
    let mut edits = Vec::new();
    for (claim, result) in &file.flipped {
        let claim_edits = match claim.format {
            SourceFormat::Markdown | SourceFormat::Mdc => {
                note::note_edit(text, claim, commit.short(), &reason(result), moved)?
                    .into_iter()
                    .collect()
            }
            _ => fields::field_edits(text, claim, commit, moved)?,
        };
        match claim_edits.is_empty() {
            true => report.already_marked.push(claim.id.clone()),
            false => report.marked.push(claim.id.clone()),
        }
        edits.extend(claim_edits);
    }
    if edits.is_empty() {
        return Ok(None);
    }
    // A byte-order mark the reader skipped is kept.
    let mut rewritten = bytes[..bytes.len() - text.len()].to_vec();
    rewritten.extend_from_slice(edit::apply(text, edits).as_bytes());
    Ok(Some(rewritten))
}

/// The file's bytes now and its owner and mode, read as a claim source is (a regular file, not
/// through a symlink, within the size limit).
fn current_bytes(
    path: &Path,
    label: &Path,
    max_file_size: u64,
) -> Result<(Vec<u8>, std::fs::Metadata), WriteError> {
    let file = memory_file::open(path, label).map_err(WriteError::Unreadable)?;
    let bytes =
        memory_file::read_bounded(&file, max_file_size, label).map_err(WriteError::Unreadable)?;
    let metadata = file.metadata().map_err(|source| {
        WriteError::Unreadable(MemoryFileError::Unreadable {
            path: label.to_path_buf(),
            source,
        })
    })?;
    Ok((bytes, metadata))
}

#[cfg(test)]
mod tests;
