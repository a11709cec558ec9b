//! The repositories a pipeline mines, made available as git repositories with their branch resolved.
//!
//! A `url:` entry is fetched into a bare repository at `<workdir>/repos/<name>` (only the named branch,
//! into `refs/remotes/origin/<branch>`), and fetched again on every later run so a moved branch is seen.
//! A `path:` entry is read in place and never written to. A `corpus:` entry is a scripted history that
//! the corpus builder materializes under the workdir. The branch is always the one the entry names:
//! `HEAD` is never used, so what is mined does not depend on what someone has checked out. Its tip is
//! the commit id that enters every key built from the repository.

use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

use super::MiningError;
use crate::pipeline::{RepoSource, RepoSpec};

/// A repository ready to be read: where its git directory is, and the commit its branch points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedRepository {
    /// The `repos:` entry's name.
    pub name: String,
    /// A path `git2::Repository::open` accepts (a bare git directory or a work tree).
    pub path: PathBuf,
    pub branch: String,
    /// The commit the branch points at.
    pub tip: Oid,
}

impl PreparedRepository {
    /// Opens the repository (one handle per thread: `git2::Repository` is not `Sync`).
    pub fn open(&self) -> Result<Repository, MiningError> {
        open_at(&self.name, &self.path)
    }

    /// The key name under which the tip enters an item's `tools` (`repo:<name>`).
    pub fn tool_name(&self) -> String {
        tool_name(&self.name)
    }
}

/// The key name under which a repository's tip enters an item's `tools`.
pub fn tool_name(repo: &str) -> String {
    format!("repo:{repo}")
}

/// Where a `url:` repository is cloned.
pub fn clone_dir(workdir: &Path, repo: &str) -> PathBuf {
    workdir.join("repos").join(repo)
}

/// Makes `spec` available (cloning or fetching a `url:` entry, materializing a `corpus:` entry) and
/// resolves its branch. Network and disk writes happen here, never in [`locate`]. `offline`
/// (`run --offline`): a `url:` entry uses its existing clone as it is.
pub fn prepare(
    spec: &RepoSpec,
    workdir: &Path,
    offline: bool,
) -> Result<PreparedRepository, MiningError> {
    let path = match &spec.source {
        RepoSource::Url(url) => {
            let dir = clone_dir(workdir, &spec.name);
            let fresh = !dir.join("HEAD").exists();
            if !offline && fresh {
                // A first clone that fails (the URL does not answer, the branch is not there)
                // leaves nothing behind in the workdir.
                let prepared = fetch(spec, url, &dir).and_then(|()| resolve(spec, dir.clone()));
                if prepared.is_err() {
                    let _ = std::fs::remove_dir_all(&dir);
                    let _ = std::fs::remove_file(lock_path(&dir));
                    if let Some(parent) = dir.parent() {
                        // Only when empty: another repository's clone may be there.
                        let _ = std::fs::remove_dir(parent);
                    }
                }
                return prepared;
            }
            if offline {
                if !dir.join("HEAD").exists() {
                    return Err(MiningError::Source {
                        repo: spec.name.clone(),
                        message: format!(
                            "offline, and {url} was never fetched into {}",
                            dir.display()
                        ),
                    });
                }
            } else {
                fetch(spec, url, &dir)?;
            }
            dir
        }
        RepoSource::Path(path) => path.clone(),
        RepoSource::Corpus(script) => materialize_corpus(spec, script, workdir)?,
    };
    resolve(spec, path)
}

/// Finds an already prepared repository without touching the network: for computing items whose
/// key (and so whose tip) was fixed by [`prepare`] during planning.
pub fn locate(spec: &RepoSpec, workdir: &Path) -> Result<PreparedRepository, MiningError> {
    let path = match &spec.source {
        RepoSource::Url(_) => clone_dir(workdir, &spec.name),
        RepoSource::Path(path) => path.clone(),
        RepoSource::Corpus(script) => corpus_location(&spec.name, script, workdir),
    };
    resolve(spec, path)
}

fn resolve(spec: &RepoSpec, path: PathBuf) -> Result<PreparedRepository, MiningError> {
    let repository = open_at(&spec.name, &path)?;
    let tip = branch_tip(&repository, &spec.name, &spec.branch)?;
    Ok(PreparedRepository {
        name: spec.name.clone(),
        path,
        branch: spec.branch.clone(),
        tip,
    })
}

fn open_at(name: &str, path: &Path) -> Result<Repository, MiningError> {
    Repository::open(path).map_err(MiningError::git(format!("open {}", path.display()), name))
}

/// The commit `branch` points at: the local branch, else the remote-tracking one from `origin`.
pub fn branch_tip(repository: &Repository, name: &str, branch: &str) -> Result<Oid, MiningError> {
    for reference in [
        format!("refs/heads/{branch}"),
        format!("refs/remotes/origin/{branch}"),
    ] {
        if let Ok(found) = repository.find_reference(&reference) {
            let commit = found.peel_to_commit().map_err(MiningError::git(
                format!("resolve {reference} to a commit"),
                name,
            ))?;
            return Ok(commit.id());
        }
    }
    Err(MiningError::BranchNotFound {
        repo: name.to_string(),
        branch: branch.to_string(),
        hint: branch_hint(repository, branch),
    })
}

/// The branch names among a remote's advertised refs.
trait HeadNames {
    fn to_vec_names(&self) -> Vec<String>;
}

impl HeadNames for [git2::RemoteHead<'_>] {
    fn to_vec_names(&self) -> Vec<String> {
        self.iter()
            .filter_map(|head| head.name().strip_prefix("refs/heads/"))
            .map(str::to_string)
            .collect()
    }
}

/// What to do about a missing branch, from the local branches and the fetched remote-tracking ones.
fn branch_hint(repository: &Repository, branch: &str) -> String {
    let names: Vec<String> = repository
        .branches(None)
        .map(|branches| {
            branches
                .filter_map(Result::ok)
                .filter_map(|(found, _)| found.name().ok().flatten().map(str::to_string))
                .map(|name| name.strip_prefix("origin/").unwrap_or(&name).to_string())
                .collect()
        })
        .unwrap_or_default();
    hint_from(names, branch)
}

/// `; set `branch:` to one it has: `a`, `b` (did you mean `x`?)` for a missing `branch`, given
/// the branch names there are.
fn hint_from(mut names: Vec<String>, branch: &str) -> String {
    names.sort();
    names.dedup();
    if names.is_empty() {
        return "; the repository has no such branch (name the branch to mine with `branch:`)"
            .to_string();
    }
    let near = crate::pipeline::suggest::nearest(branch, names.iter().map(String::as_str))
        .map(|near| format!(" (did you mean `{near}`?)"))
        .unwrap_or_default();
    let shown: Vec<String> = names
        .iter()
        .take(10)
        .map(|name| format!("`{name}`"))
        .collect();
    let more = if names.len() > shown.len() {
        format!(" and {} more", names.len() - shown.len())
    } else {
        String::new()
    };
    format!(
        "; set `branch:` to one it has: {}{more}{near}",
        shown.join(", ")
    )
}

/// Initializes the bare clone if needed and fetches the branch into `refs/remotes/origin/<branch>`.
/// Two steps (two rankings of one repository) or two runs may prepare the same clone at once: an
/// exclusive lock beside it makes the second wait and then fetch what little is new, instead of
/// initializing or writing packs into a directory the first is still filling.
fn fetch(spec: &RepoSpec, url: &str, dir: &Path) -> Result<(), MiningError> {
    let _lock = lock_clone(dir)?;
    let repository = if dir.join("HEAD").exists() {
        open_at(&spec.name, dir)?
    } else {
        std::fs::create_dir_all(dir).map_err(|source| MiningError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        Repository::init_bare(dir).map_err(MiningError::git(
            format!("create a bare repository at {}", dir.display()),
            &spec.name,
        ))?
    };
    // An anonymous remote: the URL in the pipeline is the truth, even if it changed since the clone.
    let mut remote = repository
        .remote_anonymous(url)
        .map_err(MiningError::git(format!("use remote {url}"), &spec.name))?;
    let refspec = format!(
        "+refs/heads/{branch}:refs/remotes/origin/{branch}",
        branch = spec.branch
    );
    let fetched = remote.fetch(&[refspec.as_str()], None, None);
    let tracking = format!("refs/remotes/origin/{}", spec.branch);
    let missing_ref = match &fetched {
        Ok(()) => repository.find_reference(&tracking).is_err(),
        Err(error) => {
            error.message().contains("couldn't find remote ref")
                || error.message().contains("could not find remote ref")
        }
    };
    if missing_ref {
        // The URL answers but has no such branch: a missing branch, not an unreachable URL.
        let names = remote
            .connect(git2::Direction::Fetch)
            .and_then(|()| remote.list().map(|heads| heads.to_vec_names()))
            .unwrap_or_default();
        return Err(MiningError::BranchNotFound {
            repo: spec.name.clone(),
            branch: spec.branch.clone(),
            hint: hint_from(names, &spec.branch),
        });
    }
    if let Err(error) = fetched {
        return Err(MiningError::Unreachable {
            repo: spec.name.clone(),
            url: url.to_string(),
            branch: spec.branch.clone(),
            message: error.message().to_string(),
        });
    }
    Ok(())
}

/// An exclusive lock on `.<name>.lock` beside the clone `dir`, held until the file is dropped.
fn lock_clone(dir: &Path) -> Result<std::fs::File, MiningError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| MiningError::Io { path, source }
    };
    let parent = dir.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(io(parent))?;
    let path = lock_path(dir);
    let file = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io(&path))?;
    file.lock().map_err(io(&path))?;
    Ok(file)
}

/// The lock file beside the clone `dir`: `.<name>.lock`.
fn lock_path(dir: &Path) -> PathBuf {
    let parent = dir.parent().unwrap_or(Path::new("."));
    let name = dir.file_name().map_or_else(
        || "clone".to_string(),
        |name| name.to_string_lossy().into_owned(),
    );
    parent.join(format!(".{name}.lock"))
}

/// Where a corpus entry is materialized.
pub fn corpus_dir(workdir: &Path, repo: &str) -> PathBuf {
    workdir.join("corpus").join(repo)
}

/// Where a corpus entry's repository is: the path itself when it already is a git repository (a
/// history given directly), else the materialized copy under the workdir.
fn corpus_location(repo: &str, script: &Path, workdir: &Path) -> PathBuf {
    if Repository::open(script).is_ok() {
        script.to_path_buf()
    } else {
        corpus_dir(workdir, repo)
    }
}

/// Materializes a corpus script (idempotent: an up-to-date copy is left alone).
fn materialize_corpus(
    spec: &RepoSpec,
    script: &Path,
    workdir: &Path,
) -> Result<PathBuf, MiningError> {
    let location = corpus_location(&spec.name, script, workdir);
    if location == script {
        return Ok(location);
    }
    crate::corpus::materialize(script, &location).map_err(|error| {
        let mut message = format!("materialize corpus {}: {error}", script.display());
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            message.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        MiningError::Source {
            repo: spec.name.clone(),
            message,
        }
    })?;
    Ok(location)
}
