//! Fixture repositories for the oracle: commits built with git2 from file maps, with a fixed author
//! and fixed times so commit ids are the same on every machine.

use std::path::Path;

use git2::{Oid, Repository, Signature, Time};

/// A repository whose commits are written directly from file contents.
pub struct FixtureRepo {
    pub repository: Repository,
    clock: i64,
}

/// A change to one file: new content, or removal.
#[derive(Clone, Copy)]
pub enum Change<'a> {
    Write(&'a str, &'a str),
    Remove(&'a str),
}

impl FixtureRepo {
    /// An empty repository at `dir`, with its configuration isolated from the machine's.
    pub fn init(dir: &Path) -> Self {
        let repository = Repository::init(dir).expect("init a fixture repository");
        FixtureRepo {
            repository,
            clock: 1_700_000_000,
        }
    }

    /// Commits `changes` on top of `parent` (or as a root commit) and returns the new commit.
    pub fn commit(&mut self, parent: Option<Oid>, message: &str, changes: &[Change]) -> Oid {
        let parents: Vec<Oid> = parent.into_iter().collect();
        self.merge(&parents, message, changes)
    }

    /// Commits `changes` on top of the first of `parents`' trees with every one of them as a
    /// parent (a merge commit when there are two): the merge's tree is the first parent's with
    /// `changes` applied, so a test writes the merged result it wants.
    pub fn merge(&mut self, parents: &[Oid], message: &str, changes: &[Change]) -> Oid {
        let repository = &self.repository;
        let mut index = git2::Index::new().expect("an in-memory index");
        let parent_commits: Vec<git2::Commit> = parents
            .iter()
            .map(|id| repository.find_commit(*id).expect("parent commit"))
            .collect();
        if let Some(parent) = parent_commits.first() {
            index
                .read_tree(&parent.tree().expect("parent tree"))
                .expect("read the parent tree");
        }
        for change in changes {
            match change {
                Change::Write(path, content) => {
                    let blob = repository.blob(content.as_bytes()).expect("write a blob");
                    let entry = git2::IndexEntry {
                        ctime: git2::IndexTime::new(0, 0),
                        mtime: git2::IndexTime::new(0, 0),
                        dev: 0,
                        ino: 0,
                        mode: 0o100644,
                        uid: 0,
                        gid: 0,
                        file_size: content.len() as u32,
                        id: blob,
                        flags: 0,
                        flags_extended: 0,
                        path: path.as_bytes().to_vec(),
                    };
                    index.add(&entry).expect("stage a file");
                }
                Change::Remove(path) => index.remove_path(Path::new(path)).expect("unstage"),
            }
        }
        let tree_id = index.write_tree_to(repository).expect("write the tree");
        let tree = repository.find_tree(tree_id).expect("the tree");
        self.clock += 60;
        let signature = Signature::new(
            "Fixture Author",
            "fixture@example.com",
            &Time::new(self.clock, 0),
        )
        .expect("a signature");
        let parents: Vec<&git2::Commit> = parent_commits.iter().collect();
        repository
            .commit(None, &signature, &signature, message, &tree, &parents)
            .expect("commit")
    }
}
