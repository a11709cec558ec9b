//! Repository file access for the static arms: the Python files of a tree at one commit, read
//! straight from git objects (no checkout, so arms never disturb a worktree the oracle uses), and the
//! Python files a commit touched, split into test and source files.
//!
//! Test files are classified by mining's [`TestFileRules`], the same rules the oracle uses to decide
//! which files it restores at the child, so the arms agree with it on which files cannot carry a
//! change to a claim.

use std::collections::BTreeSet;
use std::path::Path;

use git2::{Delta, Oid, Repository, Tree};

use crate::mining::test_files::TestFileRules;

/// Failures reading a repository, each naming the repository path and commit.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The repository could not be opened.
    #[error("open repository {path}: {source}")]
    Open {
        path: String,
        #[source]
        source: git2::Error,
    },
    /// A commit id is not in the repository.
    #[error("find commit {commit} in {path}: {source}")]
    Commit {
        path: String,
        commit: String,
        #[source]
        source: git2::Error,
    },
    /// Git failed while walking a tree, diffing or reading a blob.
    #[error("{action} at {commit} in {path}: {source}")]
    Git {
        action: String,
        path: String,
        commit: String,
        #[source]
        source: git2::Error,
    },
}

/// Opens the repository at `path` (a working tree or a bare repository).
pub fn open(path: &Path) -> Result<Repository, SourceError> {
    Repository::open(path).map_err(|source| SourceError::Open {
        path: path.display().to_string(),
        source,
    })
}

/// The files of one commit of a repository, read by path.
pub struct RepoFiles<'r> {
    repository: &'r Repository,
    commit: String,
    tree: Tree<'r>,
}

impl<'r> RepoFiles<'r> {
    /// The tree of `commit` (a full or abbreviated commit id, or any revision git understands).
    pub fn at(repository: &'r Repository, commit: &str) -> Result<Self, SourceError> {
        let error = |source| SourceError::Commit {
            path: repository.path().display().to_string(),
            commit: commit.to_string(),
            source,
        };
        let object = repository.revparse_single(commit).map_err(error)?;
        let found = object.peel_to_commit().map_err(error)?;
        let tree = found.tree().map_err(error)?;
        Ok(RepoFiles {
            repository,
            commit: found.id().to_string(),
            tree,
        })
    }

    /// The full commit id.
    pub fn commit(&self) -> &str {
        &self.commit
    }

    /// The text of the file at `path`, or `None` when the commit has no such file (or it is not a
    /// blob). Bytes that are not UTF-8 are replaced, as Python source is UTF-8 by default.
    pub fn read(&self, path: &str) -> Result<Option<String>, SourceError> {
        let Ok(entry) = self.tree.get_path(Path::new(path)) else {
            return Ok(None);
        };
        if entry.kind() != Some(git2::ObjectType::Blob) {
            return Ok(None);
        }
        let blob = self
            .repository
            .find_blob(entry.id())
            .map_err(|source| self.git_error(format!("read {path}"), source))?;
        Ok(Some(String::from_utf8_lossy(blob.content()).into_owned()))
    }

    /// The blob id of the file at `path`, if the commit has one.
    pub fn blob_id(&self, path: &str) -> Option<Oid> {
        let entry = self.tree.get_path(Path::new(path)).ok()?;
        (entry.kind() == Some(git2::ObjectType::Blob)).then(|| entry.id())
    }

    /// Whether the commit has a file at `path`.
    pub fn exists(&self, path: &str) -> bool {
        self.tree.get_path(Path::new(path)).is_ok()
    }

    /// Every `.py` file in the tree, sorted.
    pub fn python_files(&self) -> Result<BTreeSet<String>, SourceError> {
        let mut files = BTreeSet::new();
        self.tree
            .walk(git2::TreeWalkMode::PreOrder, |directory, entry| {
                if let Some(name) = entry.name()
                    && entry.kind() == Some(git2::ObjectType::Blob)
                    && name.ends_with(".py")
                {
                    files.insert(format!("{directory}{name}"));
                }
                git2::TreeWalkResult::Ok
            })
            .map_err(|source| self.git_error("walk the tree".to_string(), source))?;
        Ok(files)
    }

    fn git_error(&self, action: String, source: git2::Error) -> SourceError {
        SourceError::Git {
            action,
            path: self.repository.path().display().to_string(),
            commit: self.commit.clone(),
            source,
        }
    }
}

/// The Python files a commit touched, by role.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TouchedFiles {
    /// Non-test `.py` files, with both paths of a rename (parent path and child path).
    pub source: BTreeSet<String>,
    /// Test files (restored at the child by the oracle, so they carry no change to a claim).
    pub test: BTreeSet<String>,
}

/// The `.py` files that differ between `parent` and `child`, classified by `rules`.
pub fn touched_python_files(
    parent: &RepoFiles,
    child: &RepoFiles,
    rules: &TestFileRules,
) -> Result<TouchedFiles, SourceError> {
    let repository = parent.repository;
    let mut options = git2::DiffOptions::new();
    let mut diff = repository
        .diff_tree_to_tree(Some(&parent.tree), Some(&child.tree), Some(&mut options))
        .map_err(|source| parent.git_error(format!("diff against {}", child.commit), source))?;
    diff.find_similar(None)
        .map_err(|source| parent.git_error("detect renames".to_string(), source))?;
    let mut touched = TouchedFiles::default();
    for delta in diff.deltas() {
        if delta.status() == Delta::Unmodified {
            continue;
        }
        let paths = [delta.old_file(), delta.new_file()];
        for file in paths {
            // An added file has a zero id on its old side, a deleted file on its new side.
            if file.id() == Oid::zero() {
                continue;
            }
            let Some(path) = file.path().and_then(Path::to_str) else {
                continue;
            };
            if !path.ends_with(".py") {
                continue;
            }
            if rules.is_test(path) {
                touched.test.insert(path.to_string());
            } else {
                touched.source.insert(path.to_string());
            }
        }
    }
    Ok(touched)
}
