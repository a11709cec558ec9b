//! The range a check judges: the repository around a directory and two revisions of it, resolved
//! once to commit ids so every stage reads the same trees (`HEAD^..HEAD` by default; a range of
//! several commits is judged as one change, as the arms see it: tree to tree).

use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

use super::error::CheckError;

/// The revisions checked when none are named.
pub const DEFAULT_FROM: &str = "HEAD^";
pub const DEFAULT_TO: &str = "HEAD";

/// A repository and the two commits a check compares.
pub struct Range {
    pub repository: Repository,
    /// The working tree's root (the git directory for a bare repository): claim files' paths are
    /// relative to it.
    pub root: PathBuf,
    pub from: Oid,
    pub to: Oid,
    /// The revisions as the user wrote them, for messages.
    pub from_rev: String,
    pub to_rev: String,
}

impl Range {
    /// The repository around `directory` and the commits `from` and `to` name.
    pub fn open(directory: &Path, from: &str, to: &str) -> Result<Range, CheckError> {
        let metadata = std::fs::metadata(directory).map_err(|error| {
            CheckError::Input(format!(
                "cannot read the directory {}: {error}; pass the repository with --repo DIR",
                directory.display()
            ))
        })?;
        if !metadata.is_dir() {
            return Err(CheckError::Input(format!(
                "{} is not a directory; pass the repository with --repo DIR",
                directory.display()
            )));
        }
        // Readable as a directory, not only statable: a directory without read permission is
        // found by `discover` and then fails half-way through a stage.
        std::fs::read_dir(directory).map_err(|error| {
            CheckError::Input(format!(
                "cannot read the directory {}: {error}",
                directory.display()
            ))
        })?;
        let repository = Repository::discover(directory).map_err(|error| {
            CheckError::Input(format!(
                "{} is not inside a git repository ({}); run check in a repository or pass --repo DIR",
                directory.display(),
                error.message()
            ))
        })?;
        let root = repository
            .workdir()
            .unwrap_or_else(|| repository.path())
            .to_path_buf();
        let from_id = resolve(&repository, from, "--from")?;
        let to_id = resolve(&repository, to, "--to")?;
        ordered(&repository, from, from_id, to, to_id)?;
        Ok(Range {
            repository,
            root,
            from: from_id,
            to: to_id,
            from_rev: from.to_string(),
            to_rev: to.to_string(),
        })
    }

    /// `from..to` with short ids, for messages and annotations.
    pub fn describe(&self) -> String {
        format!("{}..{}", short(self.from), short(self.to))
    }

    /// The commit time of `to`, seconds since the epoch (environments are chosen by era).
    pub fn to_time(&self) -> Option<i64> {
        self.repository
            .find_commit(self.to)
            .ok()
            .map(|commit| commit.time().seconds())
    }
}

/// The first 12 hex digits of a commit id.
pub fn short(id: Oid) -> String {
    id.to_string()[..12].to_string()
}

/// What to do when a shallow clone lacks the history a range needs.
const FETCH_HISTORY: &str = "the repository is a shallow clone: fetch more history (e.g. \
    `fetch-depth: 0` in actions/checkout, or `git fetch --unshallow`)";

fn resolve(repository: &Repository, revision: &str, flag: &str) -> Result<Oid, CheckError> {
    repository
        .revparse_single(revision)
        .and_then(|object| object.peel_to_commit())
        .map(|commit| commit.id())
        .map_err(|error| {
            // A shallow clone (the default checkout in CI) cuts history at its last commit: the
            // parent or the base branch is missing there, not in the repository.
            let hint = if repository.is_shallow() {
                format!(" ({FETCH_HISTORY})")
            } else if revision.ends_with('^') {
                " (the first commit has no parent: name the range with --from and --to)".to_string()
            } else {
                String::new()
            };
            CheckError::Input(format!(
                "{flag} {revision}: not a commit of {}: {}{hint}",
                repository
                    .workdir()
                    .unwrap_or_else(|| repository.path())
                    .display(),
                error.message()
            ))
        })
}

/// A range is judged as the change from `from` to `to`: `to` must descend from `from` (or be it).
/// A reversed range would report every claim the change made true as flipped, and an unrelated
/// one compares trees that share no history.
fn ordered(
    repository: &Repository,
    from: &str,
    from_id: Oid,
    to: &str,
    to_id: Oid,
) -> Result<(), CheckError> {
    let descends = |descendant: Oid, ancestor: Oid| {
        descendant == ancestor
            || repository
                .graph_descendant_of(descendant, ancestor)
                .unwrap_or(false)
    };
    if descends(to_id, from_id) {
        return Ok(());
    }
    let range = format!("--from {from} --to {to}");
    let what = if descends(from_id, to_id) {
        format!("{range} is reversed: --to is an ancestor of --from; swap them")
    } else {
        match repository.merge_base(from_id, to_id) {
            Ok(base) => format!(
                "{range}: --to does not descend from --from (they diverged at {}); to check the \
                 change of --to's branch, pass --from {}",
                short(base),
                short(base)
            ),
            Err(_) if repository.is_shallow() => {
                format!("{range}: no common history is present; {FETCH_HISTORY}")
            }
            Err(_) => format!(
                "{range}: the two commits share no history; name two commits of one line of history"
            ),
        }
    };
    Err(CheckError::Input(what))
}
