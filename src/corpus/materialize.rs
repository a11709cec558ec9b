//! Turning a corpus script into a git repository whose commit ids are the same on every
//! machine.
//!
//! Ids are stable because everything that enters them comes from the script: file contents,
//! messages, author and committer, times and offsets. No git configuration of the machine is
//! read for them (signatures are built explicitly, the branch is named explicitly), and the
//! repository's own config pins line endings so a checkout writes the bytes of the script.
//!
//! Materializing is idempotent: the expected tip is first computed in memory (an object
//! database with only a memory backend), and a destination that already holds it is left
//! alone. Otherwise the repository is built in a scratch directory beside the destination
//! and renamed into place, so a reader never sees a half-written history.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use git2::{Oid, Repository, RepositoryInitOptions, Signature, Time, build::CheckoutBuilder};

use super::CorpusError;
use super::script::{Script, ScriptCommit, load};

/// The branch a materialized corpus is on.
pub const BRANCH: &str = "main";

/// A file inside `.git` that marks a repository as built by [`materialize`], so a later
/// materialization may replace it when the script changed; any other directory is left alone.
const MARKER: &str = "claimflow-corpus";

/// A corpus materialized into git.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaterializedRepo {
    /// The repository's directory (non-bare).
    pub path: PathBuf,
    /// The branch holding the history: always [`BRANCH`].
    pub branch: String,
    /// The tip commit id (hex).
    pub tip: String,
    /// Every commit, oldest first.
    pub commits: Vec<MaterializedCommit>,
}

/// One commit of a materialized corpus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaterializedCommit {
    /// The script's name for it (its directory, e.g. `02-count-words-ignoring-case`).
    pub name: String,
    pub subject: String,
    /// The commit id (hex).
    pub id: String,
}

/// Build the git repository that the script in `script_dir` describes at `dest`, on branch
/// `main`, or leave `dest` as it is when it already holds exactly that history.
///
/// A `dest` holding a different history is replaced only when an earlier materialization
/// made it; any other non-empty directory is an error.
pub fn materialize(script_dir: &Path, dest: &Path) -> Result<MaterializedRepo, CorpusError> {
    let script = load(script_dir)?;
    let commits = preview_script(script_dir, &script)?;
    let tip: Oid = commits
        .last()
        .expect("a loaded script has at least one commit")
        .id
        .parse()
        .expect("git writes hex ids");
    let result = MaterializedRepo {
        path: dest.to_path_buf(),
        branch: BRANCH.to_string(),
        tip: tip.to_string(),
        commits,
    };

    let io_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| CorpusError::Write { path, source }
    };
    let parent = dest
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(parent).map_err(io_error(parent))?;
    // Two steps of one run (two rankings of the same corpus) materialize at once: without the
    // lock the second would remove the history the first just put in place while it is read.
    let _lock = lock_beside(dest, parent).map_err(io_error(parent))?;

    match inspect(dest, tip) {
        Destination::Current => return Ok(result),
        Destination::Foreign => {
            return Err(CorpusError::Occupied {
                path: dest.to_path_buf(),
            });
        }
        Destination::Absent | Destination::Empty | Destination::Stale => {}
    }

    let git_error = |source| CorpusError::Git {
        path: dest.to_path_buf(),
        source,
    };
    let scratch = tempfile::Builder::new()
        .prefix(".corpus-")
        .tempdir_in(parent)
        .map_err(io_error(parent))?;
    let built = build(&script, scratch.path()).map_err(git_error)?;
    debug_assert_eq!(built, tip, "the in-memory ids and the written ids agree");

    // Whatever was at `dest` is an older materialization or an empty directory (checked
    // above); it makes way for the new one.
    if dest.exists() {
        fs::remove_dir_all(dest).map_err(io_error(dest))?;
    }
    let scratch = scratch.keep();
    if let Err(source) = fs::rename(&scratch, dest) {
        // Another process may have materialized the same script meanwhile; its result is ours.
        let _ = fs::remove_dir_all(&scratch);
        if matches!(inspect(dest, tip), Destination::Current) {
            return Ok(result);
        }
        return Err(CorpusError::Write {
            path: dest.to_path_buf(),
            source,
        });
    }
    Ok(result)
}

/// An exclusive lock on `.<name>.lock` beside `dest`, held until the file is dropped.
fn lock_beside(dest: &Path, parent: &Path) -> std::io::Result<fs::File> {
    let name = dest
        .file_name()
        .map_or_else(|| "corpus".into(), |name| name.to_string_lossy());
    let file = fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(parent.join(format!(".{name}.lock")))?;
    file.lock()?;
    Ok(file)
}

/// The commits [`materialize`] would write for the script in `script_dir`, oldest first,
/// computed in memory: nothing is written, so a dry run (`claimflow plan`) can key on the ids.
pub fn preview(script_dir: &Path) -> Result<Vec<MaterializedCommit>, CorpusError> {
    preview_script(script_dir, &load(script_dir)?)
}

fn preview_script(
    script_dir: &Path,
    script: &Script,
) -> Result<Vec<MaterializedCommit>, CorpusError> {
    let ids = expected_ids(script).map_err(|source| CorpusError::Git {
        path: script_dir.to_path_buf(),
        source,
    })?;
    Ok(script
        .commits
        .iter()
        .zip(ids)
        .map(|(commit, id)| MaterializedCommit {
            name: commit.name.clone(),
            subject: commit.subject.clone(),
            id: id.to_string(),
        })
        .collect())
}

/// What is at a destination now.
enum Destination {
    Absent,
    Empty,
    /// A repository we materialized, holding the expected tip on `main`.
    Current,
    /// A repository we materialized from another version of the script.
    Stale,
    /// Anything else: never touched.
    Foreign,
}

fn inspect(dest: &Path, tip: Oid) -> Destination {
    if !dest.exists() {
        return Destination::Absent;
    }
    if fs::read_dir(dest).is_ok_and(|mut entries| entries.next().is_none()) {
        return Destination::Empty;
    }
    let Ok(repository) = Repository::open(dest) else {
        return Destination::Foreign;
    };
    if repository.is_bare() || !repository.path().join(MARKER).is_file() {
        return Destination::Foreign;
    }
    let on_tip = repository
        .find_reference(&format!("refs/heads/{BRANCH}"))
        .ok()
        .and_then(|reference| reference.target())
        == Some(tip);
    let head_on_branch = repository
        .find_reference("HEAD")
        .ok()
        .and_then(|head| head.symbolic_target().map(str::to_string))
        .as_deref()
        == Some(&format!("refs/heads/{BRANCH}"));
    if on_tip && head_on_branch {
        Destination::Current
    } else {
        Destination::Stale
    }
}

/// The commit ids the script yields, computed without touching the disk.
fn expected_ids(script: &Script) -> Result<Vec<Oid>, git2::Error> {
    let database = git2::Odb::new()?;
    // The memory backend belongs to the object database from here on; the handle is not needed.
    database.add_new_mempack_backend(1)?;
    let repository = Repository::from_odb(database)?;
    write_history(&repository, script)
}

/// Write the repository at `dir` (which exists and is empty) and return its tip.
fn build(script: &Script, dir: &Path) -> Result<Oid, git2::Error> {
    let mut options = RepositoryInitOptions::new();
    options
        .initial_head(BRANCH)
        .external_template(false)
        .no_reinit(true);
    let repository = Repository::init_opts(dir, &options)?;
    {
        // Local settings win over the machine's: the checkout writes the script's bytes.
        let mut config = repository.config()?.open_level(git2::ConfigLevel::Local)?;
        config.set_bool("core.autocrlf", false)?;
        config.set_str("core.eol", "lf")?;
    }
    let ids = write_history(&repository, script)?;
    let tip = *ids.last().expect("a loaded script has at least one commit");
    repository.reference(
        &format!("refs/heads/{BRANCH}"),
        tip,
        true,
        "claimflow: materialize corpus",
    )?;
    repository.set_head(&format!("refs/heads/{BRANCH}"))?;
    repository.checkout_head(Some(CheckoutBuilder::new().force()))?;
    fs::write(
        repository.path().join(MARKER),
        "materialized by claimflow from a corpus script\n",
    )
    .map_err(|error| git2::Error::from_str(&error.to_string()))?;
    Ok(tip)
}

/// Write every commit of the script into `repository`'s object database, oldest first, and
/// return their ids. No reference is touched.
fn write_history(repository: &Repository, script: &Script) -> Result<Vec<Oid>, git2::Error> {
    let mut ids: Vec<Oid> = Vec::with_capacity(script.commits.len());
    for (commit, files) in script.commits.iter().zip(script.trees()) {
        let tree_id = write_tree(repository, &files)?;
        let tree = repository.find_tree(tree_id)?;
        let signature = signature(commit)?;
        let parent = match ids.last() {
            Some(id) => Some(repository.find_commit(*id)?),
            None => None,
        };
        let parents: Vec<&git2::Commit> = parent.iter().collect();
        let id = repository.commit(
            None,
            &signature,
            &signature,
            &commit.message(),
            &tree,
            &parents,
        )?;
        ids.push(id);
    }
    Ok(ids)
}

fn signature(commit: &ScriptCommit) -> Result<Signature<'static>, git2::Error> {
    Signature::new(
        &commit.author.name,
        &commit.author.email,
        &Time::new(commit.time.seconds, commit.time.offset_minutes),
    )
}

/// Write the tree holding `files` (path to contents) and return its id.
fn write_tree(
    repository: &Repository,
    files: &BTreeMap<String, Vec<u8>>,
) -> Result<Oid, git2::Error> {
    // Split off the first path component: files here, subdirectories recursively.
    let mut blobs: BTreeMap<&str, &[u8]> = BTreeMap::new();
    let mut directories: BTreeMap<&str, BTreeMap<String, Vec<u8>>> = BTreeMap::new();
    for (path, contents) in files {
        match path.split_once('/') {
            Some((directory, rest)) => {
                directories
                    .entry(directory)
                    .or_default()
                    .insert(rest.to_string(), contents.clone());
            }
            None => {
                blobs.insert(path, contents);
            }
        }
    }
    let mut builder = repository.treebuilder(None)?;
    for (name, contents) in blobs {
        let blob = repository.blob(contents)?;
        builder.insert(name, blob, 0o100_644)?;
    }
    for (name, subtree) in directories {
        let tree = write_tree(repository, &subtree)?;
        builder.insert(name, tree, 0o040_000)?;
    }
    builder.write()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny_script(subject: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let commit = dir.path().join("commits/01-first");
        fs::create_dir_all(commit.join("files/pkg")).unwrap();
        fs::write(
            commit.join("commit.yaml"),
            format!("subject: {subject}\ndate: 2024-01-02T03:04:05+02:00\n"),
        )
        .unwrap();
        fs::write(commit.join("files/pkg/mod.py"), "x = 1\n").unwrap();
        fs::write(commit.join("files/README"), "hello\n").unwrap();
        dir
    }

    #[test]
    fn the_memory_ids_are_the_written_ids() {
        let script_dir = tiny_script("First");
        let dest = tempfile::tempdir().unwrap();
        let repo = materialize(script_dir.path(), &dest.path().join("repo")).unwrap();
        let written = Repository::open(&repo.path).unwrap();
        let head = written.head().unwrap();
        assert_eq!(head.shorthand(), Some(BRANCH));
        assert_eq!(head.target().unwrap().to_string(), repo.tip);
        assert_eq!(
            fs::read_to_string(repo.path.join("pkg/mod.py")).unwrap(),
            "x = 1\n"
        );
        let commit = written.find_commit(head.target().unwrap()).unwrap();
        assert_eq!(commit.author().name(), Some("claimflow demo"));
        assert_eq!(commit.time().seconds(), 1_704_157_445);
        assert_eq!(commit.time().offset_minutes(), 120);
    }

    #[test]
    fn a_preview_writes_nothing_and_names_the_same_commits() {
        let script_dir = tiny_script("First");
        let previewed = preview(script_dir.path()).unwrap();
        let dest = tempfile::tempdir().unwrap();
        let repo = materialize(script_dir.path(), &dest.path().join("repo")).unwrap();
        assert_eq!(previewed, repo.commits);
    }

    #[test]
    fn a_current_repository_is_left_alone() {
        let script_dir = tiny_script("First");
        let dest = tempfile::tempdir().unwrap();
        let path = dest.path().join("repo");
        materialize(script_dir.path(), &path).unwrap();
        let sentinel = path.join("left-by-a-reader");
        fs::write(&sentinel, "").unwrap();
        materialize(script_dir.path(), &path).unwrap();
        assert!(
            sentinel.exists(),
            "the second materialization rebuilt the repository"
        );
    }

    #[test]
    fn a_stale_repository_is_rebuilt() {
        let dest = tempfile::tempdir().unwrap();
        let path = dest.path().join("repo");
        let first = materialize(tiny_script("First").path(), &path).unwrap();
        let second = materialize(tiny_script("Changed").path(), &path).unwrap();
        assert_ne!(first.tip, second.tip);
        let head = Repository::open(&path).unwrap().head().unwrap().target();
        assert_eq!(head.unwrap().to_string(), second.tip);
    }

    #[test]
    fn a_foreign_directory_is_never_replaced() {
        let dest = tempfile::tempdir().unwrap();
        fs::write(dest.path().join("precious.txt"), "mine").unwrap();
        let error = materialize(tiny_script("First").path(), dest.path()).unwrap_err();
        assert!(matches!(error, CorpusError::Occupied { .. }), "{error}");
        assert!(dest.path().join("precious.txt").exists());
    }

    #[test]
    fn an_empty_directory_is_filled() {
        let dest = tempfile::tempdir().unwrap();
        let repo = materialize(tiny_script("First").path(), dest.path()).unwrap();
        assert!(dest.path().join("README").is_file());
        assert_eq!(repo.commits.len(), 1);
    }
}
