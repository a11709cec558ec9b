//! One concurrent slot's checkout: a plain directory holding a commit's tree, written with git2.
//!
//! Each slot owns `<workdir>/worktrees/oracle-<slot>`, so runs for different commits never share
//! files. Between checkouts everything the previous run left is removed: untracked files,
//! `__pycache__` directories, stale `.pyc` files that would otherwise shadow the new sources. Files
//! whose content did not change between commits are kept (a manifest remembers what was written,
//! with the size and modification time it had), so a checkout costs the diff, not the tree.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use git2::{ObjectType, Oid, Repository, Tree, TreeWalkMode, TreeWalkResult};

use crate::mining::TestFileRules;

/// Failures to check out or restore files, naming the commit or path.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    /// The repository refused a lookup.
    #[error("read {what} from the repository: {source}")]
    Git {
        what: String,
        #[source]
        source: git2::Error,
    },
    /// A file of the checkout could not be written or removed.
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

fn git_error(what: impl Into<String>) -> impl FnOnce(git2::Error) -> WorktreeError {
    let what = what.into();
    move |source| WorktreeError::Git { what, source }
}

fn io_error<'a>(
    action: &'static str,
    path: &'a Path,
) -> impl FnOnce(io::Error) -> WorktreeError + 'a {
    move |source| WorktreeError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// What the manifest remembers of a file it wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Written {
    blob: Oid,
    length: u64,
    modified: Option<SystemTime>,
}

/// One entry of a commit's tree.
#[derive(Debug, Clone, Copy)]
struct Entry {
    blob: Oid,
    mode: i32,
}

/// A slot's checkout directory.
#[derive(Debug)]
pub struct Worktree {
    dir: PathBuf,
    manifest: BTreeMap<String, Written>,
}

/// The directory of slot `slot` under the workdir.
pub fn slot_dir(workdir: &Path, slot: usize) -> PathBuf {
    workdir.join("worktrees").join(format!("oracle-{slot}"))
}

impl Worktree {
    /// A worktree at `dir`; whatever is there is treated as untracked until the first checkout.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Worktree {
            dir: dir.into(),
            manifest: BTreeMap::new(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Makes the directory hold exactly `commit`'s tree (files only; submodules are skipped).
    pub fn checkout(&mut self, repository: &Repository, commit: Oid) -> Result<(), WorktreeError> {
        let tree = commit_tree(repository, commit)?;
        let entries = tree_entries(&tree)?;
        fs::create_dir_all(&self.dir).map_err(io_error("create", &self.dir))?;
        for (path, entry) in &entries {
            if !self.is_current(path, entry.blob) {
                self.write(repository, path, *entry)?;
            }
        }
        self.manifest.retain(|path, _| entries.contains_key(path));
        let keep: BTreeSet<PathBuf> = entries.keys().map(PathBuf::from).collect();
        remove_untracked(&self.dir, &self.dir, &keep)?;
        Ok(())
    }

    /// Brings back `commit`'s version of each path, removing the paths `commit` does not have.
    pub fn restore(
        &mut self,
        repository: &Repository,
        commit: Oid,
        paths: &[String],
    ) -> Result<(), WorktreeError> {
        let tree = commit_tree(repository, commit)?;
        for path in paths {
            match tree.get_path(Path::new(path)) {
                Ok(entry) if entry.kind() == Some(ObjectType::Blob) => {
                    let entry = Entry {
                        blob: entry.id(),
                        mode: entry.filemode(),
                    };
                    if !self.is_current(path, entry.blob) {
                        self.write(repository, path, entry)?;
                    }
                }
                _ => {
                    let file = self.dir.join(path);
                    if file.symlink_metadata().is_ok() {
                        fs::remove_file(&file).map_err(io_error("remove", &file))?;
                    }
                    self.manifest.remove(path);
                }
            }
        }
        Ok(())
    }

    /// True when the file on disk is the blob the manifest says was written and is untouched.
    fn is_current(&self, path: &str, blob: Oid) -> bool {
        let Some(written) = self.manifest.get(path) else {
            return false;
        };
        let Ok(metadata) = self.dir.join(path).symlink_metadata() else {
            return false;
        };
        written.blob == blob
            && written.length == metadata.len()
            && written.modified == metadata.modified().ok()
    }

    fn write(
        &mut self,
        repository: &Repository,
        path: &str,
        entry: Entry,
    ) -> Result<(), WorktreeError> {
        let blob = repository
            .find_blob(entry.blob)
            .map_err(git_error(format!("blob of {path}")))?;
        let file = self.dir.join(path);
        if let Some(parent) = file.parent() {
            if parent.symlink_metadata().is_ok_and(|meta| !meta.is_dir()) {
                fs::remove_file(parent).map_err(io_error("remove", parent))?;
            }
            fs::create_dir_all(parent).map_err(io_error("create", parent))?;
        }
        if let Ok(metadata) = file.symlink_metadata() {
            if metadata.is_dir() {
                fs::remove_dir_all(&file).map_err(io_error("remove", &file))?;
            } else {
                fs::remove_file(&file).map_err(io_error("remove", &file))?;
            }
        }
        if entry.mode == 0o120000 {
            let target = String::from_utf8_lossy(blob.content()).into_owned();
            std::os::unix::fs::symlink(&target, &file).map_err(io_error("link", &file))?;
        } else {
            fs::write(&file, blob.content()).map_err(io_error("write", &file))?;
            if entry.mode == 0o100755 {
                use std::os::unix::fs::PermissionsExt;
                fs::set_permissions(&file, fs::Permissions::from_mode(0o755))
                    .map_err(io_error("chmod", &file))?;
            }
        }
        let metadata = file.symlink_metadata().map_err(io_error("stat", &file))?;
        self.manifest.insert(
            path.to_string(),
            Written {
                blob: entry.blob,
                length: metadata.len(),
                modified: metadata.modified().ok(),
            },
        );
        Ok(())
    }
}

fn commit_tree(repository: &Repository, commit: Oid) -> Result<Tree<'_>, WorktreeError> {
    repository
        .find_commit(commit)
        .and_then(|commit| commit.tree())
        .map_err(git_error(format!("the tree of commit {commit}")))
}

/// Every blob of a tree by its slash-separated path.
fn tree_entries(tree: &Tree) -> Result<BTreeMap<String, Entry>, WorktreeError> {
    let mut entries = BTreeMap::new();
    tree.walk(TreeWalkMode::PreOrder, |root, entry| {
        if entry.kind() == Some(ObjectType::Blob)
            && let Some(name) = entry.name()
        {
            entries.insert(
                format!("{root}{name}"),
                Entry {
                    blob: entry.id(),
                    mode: entry.filemode(),
                },
            );
        }
        TreeWalkResult::Ok
    })
    .map_err(git_error("a tree walk"))?;
    Ok(entries)
}

/// Removes every file under `dir` whose path (relative to `root`) is not kept, and every
/// directory left empty. Returns whether `dir` is now empty.
fn remove_untracked(
    root: &Path,
    dir: &Path,
    keep: &BTreeSet<PathBuf>,
) -> Result<bool, WorktreeError> {
    let mut empty = true;
    for entry in fs::read_dir(dir).map_err(io_error("list", dir))? {
        let entry = entry.map_err(io_error("list", dir))?;
        let path = entry.path();
        let relative = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
        let kind = entry.file_type().map_err(io_error("stat", &path))?;
        if kind.is_dir() {
            if remove_untracked(root, &path, keep)? {
                fs::remove_dir(&path).map_err(io_error("remove", &path))?;
            } else {
                empty = false;
            }
        } else if keep.contains(&relative) {
            empty = false;
        } else {
            fs::remove_file(&path).map_err(io_error("remove", &path))?;
        }
    }
    Ok(empty)
}

/// The test files a commit touched, by the diff from `parent` to `commit` (old and new paths).
/// The rules are mining's, so ranking, restoring and the source-only diff agree on what a test file
/// is (helpers, data and `conftest.py` under test directories included).
pub fn touched_test_files(
    repository: &Repository,
    parent: Oid,
    commit: Oid,
    rules: &TestFileRules,
) -> Result<Vec<String>, WorktreeError> {
    let old = commit_tree(repository, parent)?;
    let new = commit_tree(repository, commit)?;
    let diff = repository
        .diff_tree_to_tree(Some(&old), Some(&new), None)
        .map_err(git_error(format!("the diff {parent}..{commit}")))?;
    let mut paths = BTreeSet::new();
    for delta in diff.deltas() {
        for file in [delta.old_file(), delta.new_file()] {
            if let Some(path) = file.path().and_then(Path::to_str)
                && rules.is_test(path)
            {
                paths.insert(path.to_string());
            }
        }
    }
    Ok(paths.into_iter().collect())
}
