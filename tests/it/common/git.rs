//! Fixture git repositories for tests: built in a tempdir with git2, with a fixed author and fixed,
//! increasing commit times, so commit ids are the same on every machine and every run.
//!
//! Nothing the machine's git configuration says reaches a commit id: the author, committer, times,
//! messages and the branch name are explicit, trees are written from memory (no work tree, so no
//! line-ending or filter settings apply), and `Repository::config` is never consulted. libgit2's
//! config search paths are deliberately left alone: changing them is process-global and would race
//! with other tests using libgit2 on other threads.
//!
//! ```text
//! let mut repo = FixtureRepo::new();
//! repo.commit("Add cache", &[("pkg/cache.py", Some("x = 1\n"))])
//!     .commit("Drop cache", &[("pkg/cache.py", None)]);
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use git2::{Oid, Repository, RepositoryInitOptions, Signature, Time};
use tempfile::TempDir;

/// The fixed author and committer of every fixture commit.
pub const AUTHOR_NAME: &str = "claimflow";
pub const AUTHOR_EMAIL: &str = "test@claimflow.invalid";
/// The time of the first fixture commit; each later commit is a minute later.
pub const EPOCH: i64 = 1_700_000_000;

/// A git repository in a tempdir, with commits built from in-memory file contents.
pub struct FixtureRepo {
    dir: TempDir,
    repository: Repository,
    branch: String,
    /// The current branch's files (path → content).
    files: BTreeMap<String, String>,
    /// Every commit made, in order.
    commits: Vec<Oid>,
}

impl Default for FixtureRepo {
    fn default() -> Self {
        Self::new()
    }
}

impl FixtureRepo {
    /// An empty repository whose branch is `main`.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("create a tempdir");
        let mut options = RepositoryInitOptions::new();
        options.initial_head("main");
        let repository = Repository::init_opts(dir.path(), &options).expect("init a repository");
        FixtureRepo {
            dir,
            repository,
            branch: "main".to_string(),
            files: BTreeMap::new(),
            commits: Vec::new(),
        }
    }

    /// The repository's work-tree directory (empty until [`checkout`](Self::checkout)).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The path as an owned `PathBuf` (for a `RepoSource::Path`).
    pub fn path_buf(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    pub fn repository(&self) -> &Repository {
        &self.repository
    }

    /// Every commit made so far, oldest first.
    pub fn commits(&self) -> &[Oid] {
        &self.commits
    }

    /// The tip of the current branch.
    pub fn head(&self) -> Oid {
        self.tip(&self.branch)
            .expect("the current branch has a commit")
    }

    /// The tip of `branch`, if it has one.
    pub fn tip(&self, branch: &str) -> Option<Oid> {
        self.repository
            .find_reference(&format!("refs/heads/{branch}"))
            .ok()
            .and_then(|reference| reference.target())
    }

    /// Commits `changes` on the current branch: `Some(content)` writes a file, `None` deletes it.
    pub fn commit(&mut self, subject: &str, changes: &[(&str, Option<&str>)]) -> &mut Self {
        let parents: Vec<Oid> = self.tip(&self.branch).into_iter().collect();
        self.commit_with_parents(subject, changes, &parents)
    }

    /// Creates `branch` at the current tip (if it does not exist) and makes it current.
    pub fn branch(&mut self, branch: &str) -> &mut Self {
        if self.tip(branch).is_none() {
            let commit = self.repository.find_commit(self.head()).expect("the tip");
            self.repository
                .branch(branch, &commit, false)
                .expect("create a branch");
        }
        self.switch(branch)
    }

    /// Makes `branch` current, loading its files.
    pub fn switch(&mut self, branch: &str) -> &mut Self {
        self.branch = branch.to_string();
        self.files = match self.tip(branch) {
            Some(tip) => self.read_files(tip),
            None => BTreeMap::new(),
        };
        self
    }

    /// Points HEAD at the current branch and writes its files into the work tree (for tests that run
    /// code from the repository; mining itself never needs a work tree).
    pub fn checkout(&self) -> &Self {
        self.repository
            .set_head(&format!("refs/heads/{}", self.branch))
            .expect("set HEAD");
        self.repository
            .checkout_head(Some(git2::build::CheckoutBuilder::new().force()))
            .expect("check out HEAD");
        self
    }

    /// A merge commit on the current branch with parents (current tip, tip of `other`); its tree is
    /// the current branch's files with `changes` applied (the caller writes the merge result).
    pub fn merge(
        &mut self,
        subject: &str,
        other: &str,
        changes: &[(&str, Option<&str>)],
    ) -> &mut Self {
        let parents = [
            self.head(),
            self.tip(other).expect("the merged branch exists"),
        ];
        self.commit_with_parents(subject, changes, &parents)
    }

    fn commit_with_parents(
        &mut self,
        subject: &str,
        changes: &[(&str, Option<&str>)],
        parents: &[Oid],
    ) -> &mut Self {
        for (path, content) in changes {
            match content {
                Some(content) => self.files.insert(path.to_string(), content.to_string()),
                None => self.files.remove(*path),
            };
        }
        let oid = {
            let repository = &self.repository;
            let tree = write_tree(repository, &self.files);
            let tree = repository.find_tree(tree).expect("the written tree");
            let when = Time::new(EPOCH + 60 * self.commits.len() as i64, 0);
            let signature = Signature::new(AUTHOR_NAME, AUTHOR_EMAIL, &when).expect("a signature");
            let parents: Vec<_> = parents
                .iter()
                .map(|oid| repository.find_commit(*oid).expect("a parent commit"))
                .collect();
            let parents: Vec<_> = parents.iter().collect();
            repository
                .commit(
                    Some(&format!("refs/heads/{}", self.branch)),
                    &signature,
                    &signature,
                    &format!("{subject}\n"),
                    &tree,
                    &parents,
                )
                .expect("commit")
        };
        self.commits.push(oid);
        self
    }

    fn read_files(&self, commit: Oid) -> BTreeMap<String, String> {
        let tree = self.repository.find_commit(commit).unwrap().tree().unwrap();
        let mut files = BTreeMap::new();
        tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
            if entry.kind() == Some(git2::ObjectType::Blob) {
                let blob = self.repository.find_blob(entry.id()).unwrap();
                let path = format!("{dir}{}", entry.name().unwrap());
                files.insert(path, String::from_utf8_lossy(blob.content()).into_owned());
            }
            git2::TreeWalkResult::Ok
        })
        .unwrap();
        files
    }
}

/// Writes `files` as nested trees and returns the root tree's id.
fn write_tree(repository: &Repository, files: &BTreeMap<String, String>) -> Oid {
    let mut here: BTreeMap<&str, &str> = BTreeMap::new();
    let mut below: BTreeMap<&str, BTreeMap<String, String>> = BTreeMap::new();
    for (path, content) in files {
        match path.split_once('/') {
            Some((dir, rest)) => {
                below
                    .entry(dir)
                    .or_default()
                    .insert(rest.to_string(), content.clone());
            }
            None => {
                here.insert(path, content);
            }
        }
    }
    let mut builder = repository.treebuilder(None).expect("a tree builder");
    for (name, content) in here {
        let blob = repository.blob(content.as_bytes()).expect("write a blob");
        builder.insert(name, blob, 0o100644).expect("insert a blob");
    }
    for (name, subtree) in below {
        let tree = write_tree(repository, &subtree);
        builder.insert(name, tree, 0o040000).expect("insert a tree");
    }
    builder.write().expect("write a tree")
}
