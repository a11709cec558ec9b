//! Fixture git repositories built with git2: a fixed author, fixed commit times and a named branch,
//! so commit ids are the same on every machine and every run.

use std::path::{Path, PathBuf};

use git2::{Repository, RepositoryInitOptions, Signature, Time};

/// A repository in a temporary directory, committed to one branch.
pub struct GitRepository {
    dir: tempfile::TempDir,
    repository: Repository,
    commits: u32,
}

impl GitRepository {
    /// An empty repository whose first commit will start `branch`.
    pub fn new(branch: &str) -> Self {
        let dir = tempfile::tempdir().expect("a temp dir");
        let mut options = RepositoryInitOptions::new();
        options.initial_head(branch);
        let repository = Repository::init_opts(dir.path(), &options).expect("git init");
        GitRepository {
            dir,
            repository,
            commits: 0,
        }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    /// Writes (`Some`) or deletes (`None`) files, then commits everything; returns the commit id.
    pub fn commit(&mut self, message: &str, files: &[(&str, Option<&str>)]) -> String {
        for (path, text) in files {
            write(self.dir.path(), path, *text);
        }
        let mut index = self.repository.index().expect("index");
        index
            .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
            .expect("stage files");
        index.update_all(["*"], None).expect("stage deletions");
        index.write().expect("write the index");
        let tree = self
            .repository
            .find_tree(index.write_tree().expect("write the tree"))
            .expect("find the tree");
        let time = Time::new(1_700_000_000 + 60 * i64::from(self.commits), 0);
        let signature =
            Signature::new("claimflow", "claimflow@example.com", &time).expect("signature");
        let parent = self
            .repository
            .head()
            .ok()
            .map(|head| head.peel_to_commit().expect("the head commit"));
        let parents: Vec<&git2::Commit> = parent.iter().collect();
        self.commits += 1;
        self.repository
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
}

fn write(root: &Path, path: &str, text: Option<&str>) {
    let full = root.join(path);
    match text {
        Some(text) => {
            std::fs::create_dir_all(full.parent().expect("a parent directory")).expect("mkdir");
            std::fs::write(full, text).expect("write a file");
        }
        None => std::fs::remove_file(full).expect("delete a file"),
    }
}
