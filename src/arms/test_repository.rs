//! Fixture git repositories for the arms' unit tests: a parent commit and a child commit built from
//! file lists, with a fixed author and time so commit ids are stable.

use std::path::Path;

use git2::{Repository, Signature, Time};

/// A repository with two commits.
pub struct TwoCommits {
    #[expect(dead_code, reason = "held so the repository outlives the test")]
    pub directory: tempfile::TempDir,
    pub repository: Repository,
    pub parent: String,
    pub child: String,
}

/// Commits `files` as the parent, then applies `changes` (`None` deletes) as the child.
pub fn two_commits(files: &[(&str, &str)], changes: &[(&str, Option<&str>)]) -> TwoCommits {
    let directory = tempfile::tempdir().expect("temp dir");
    let repository = Repository::init(directory.path()).expect("init");
    for (path, text) in files {
        write(directory.path(), path, Some(text));
    }
    let parent = commit(&repository, "parent", 0);
    for (path, text) in changes {
        write(directory.path(), path, *text);
    }
    let child = commit(&repository, "child", 60);
    TwoCommits {
        directory,
        repository,
        parent,
        child,
    }
}

fn write(root: &Path, path: &str, text: Option<&str>) {
    let full = root.join(path);
    match text {
        Some(text) => {
            std::fs::create_dir_all(full.parent().expect("a parent directory")).expect("mkdir");
            std::fs::write(full, text).expect("write");
        }
        None => std::fs::remove_file(full).expect("remove"),
    }
}

fn commit(repository: &Repository, message: &str, offset: i64) -> String {
    let mut index = repository.index().expect("index");
    index
        .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
        .expect("add");
    index.update_all(["*"], None).expect("stage deletions");
    index.write().expect("write index");
    let tree = repository
        .find_tree(index.write_tree().expect("tree"))
        .expect("find tree");
    let signature = Signature::new(
        "claimflow",
        "claimflow@example.com",
        &Time::new(1_700_000_000 + offset, 0),
    )
    .expect("signature");
    let parents = match repository.head() {
        Ok(head) => vec![head.peel_to_commit().expect("head commit")],
        Err(_) => Vec::new(),
    };
    let parents: Vec<&git2::Commit> = parents.iter().collect();
    repository
        .commit(
            Some("HEAD"),
            &signature,
            &signature,
            message,
            &tree,
            &parents,
        )
        .expect("commit")
        .to_string()
}
