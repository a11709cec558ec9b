//! `--write`: marking each flipped claim where it lives, never deleting it. A Markdown item gets a
//! note after it ([`note`]); a JSON record gets invalidation fields ([`fields`]). Writing twice for
//! the same range changes nothing, since a claim already marked is recognized.
//!
//! A file is rewritten only while its bytes are still those the claims were read from (their
//! digest is kept on each claim), every file's new text is computed before any is written, and each
//! is replaced through a temporary file in its directory and a rename, keeping its permissions.

mod edit;
mod fields;
mod note;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::check::claim::{CheckResult, MemoryClaim, SourceFormat, Verdict};
use crate::check::sources::SourceError;
use crate::check::sources::read::decode;

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

/// Why a write-back wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// A flipped claim was not read from a file, so there is nowhere to mark it.
    #[error("write back claim {id}: it was not read from a file")]
    NoFile { id: String },
    /// The file changed since its claims were read; marking it would overwrite that change.
    #[error("write back {path}: it changed since its claims were read (run the check again)")]
    Changed { path: PathBuf },
    /// The claim is not where it was read (the file was edited in between).
    #[error("write back {path}:{line}: claim {id} is no longer there (run the check again)")]
    NotFound {
        path: PathBuf,
        line: u32,
        id: String,
    },
    /// The file could not be read again.
    #[error("write back {path}: read it again: {source}")]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file no longer parses (it was read, so it changed in a way its digest missed).
    #[error("write back: {0}")]
    Source(#[source] SourceError),
    /// The temporary file could not be written or renamed into place.
    #[error("write back {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Marks every claim whose result is `flipped` in its file; `reason` says why in a Markdown note
/// (typically the result's evidence). Results are matched to claims by id and `file:line`.
pub fn write_back(
    claims: &[MemoryClaim],
    results: &[CheckResult],
    commit: &Invalidation,
    reason: impl Fn(&CheckResult) -> String,
) -> Result<WriteReport, WriteError> {
    let mut report = WriteReport::default();
    let mut rewrites = Vec::new();
    for (path, file) in flipped_by_file(claims, results)? {
        if let Some(rewritten) = marked_file(&path, &file, commit, &reason, &mut report)? {
            rewrites.push((path, file, rewritten));
        }
    }
    for (path, file, rewritten) in rewrites {
        current_bytes(&path, &file.digest, &file.label)?;
        replace(&path, &rewritten)?;
        report.files.push(path);
    }
    Ok(report)
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
fn marked_file(
    path: &Path,
    file: &FlippedInFile,
    commit: &Invalidation,
    reason: &impl Fn(&CheckResult) -> String,
    report: &mut WriteReport,
) -> Result<Option<Vec<u8>>, WriteError> {
    let bytes = current_bytes(path, &file.digest, &file.label)?;
    let text = decode(&bytes).map_err(|_| WriteError::Changed {
        path: file.label.clone(),
    })?;
    let mut edits = Vec::new();
    for (claim, result) in &file.flipped {
        let claim_edits = match claim.format {
            SourceFormat::Markdown | SourceFormat::Mdc => {
                note::note_edit(text, claim, commit.short(), &reason(result))?
                    .into_iter()
                    .collect()
            }
            _ => fields::field_edits(text, claim, commit)?,
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

/// The file's bytes, provided they still have `digest`.
fn current_bytes(path: &Path, digest: &str, label: &Path) -> Result<Vec<u8>, WriteError> {
    let bytes = std::fs::read(path).map_err(|source| WriteError::Unreadable {
        path: label.to_path_buf(),
        source,
    })?;
    match blake3::hash(&bytes).to_hex().as_str() == digest {
        true => Ok(bytes),
        false => Err(WriteError::Changed {
            path: label.to_path_buf(),
        }),
    }
}

/// Writes `bytes` to a temporary file beside `path`, with `path`'s permissions, and renames it over.
fn replace(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let failed = |source| WriteError::Write {
        path: path.to_path_buf(),
        source,
    };
    let directory = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let permissions = std::fs::metadata(path).map_err(failed)?.permissions();
    let mut temporary = tempfile::NamedTempFile::new_in(directory).map_err(failed)?;
    temporary.write_all(bytes).map_err(failed)?;
    temporary.as_file().sync_all().map_err(failed)?;
    temporary
        .as_file()
        .set_permissions(permissions)
        .map_err(failed)?;
    temporary
        .persist(path)
        .map_err(|error| failed(error.error))?;
    Ok(())
}

#[cfg(test)]
mod tests;
