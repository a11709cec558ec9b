//! Scratch checkouts: one commit's tree written into a directory under the workdir
//! (`<workdir>/worktrees/<slot>`), emptied first so no file (or stale `.pyc`) of an earlier
//! checkout survives. Blobs are written straight from the object database: the repository's index,
//! HEAD and work tree are never touched (a `path:` repository is the user's own checkout).

use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid, Repository, TreeWalkMode, TreeWalkResult};

/// Why a checkout failed.
#[derive(Debug, thiserror::Error)]
pub enum CheckoutError {
    /// libgit2 could not find or read the commit or one of its objects.
    #[error("check out {commit} into {path}: {source}")]
    Git {
        commit: String,
        path: PathBuf,
        #[source]
        source: git2::Error,
    },
    /// A file could not be written.
    #[error("check out {commit}: write {path}: {source}")]
    Io {
        commit: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Writes the tree of `commit` into `destination`, replacing whatever was there. Submodules are
/// left out (their commits are not in this repository).
pub fn checkout_commit(
    repository: &Repository,
    commit: &str,
    destination: &Path,
) -> Result<(), CheckoutError> {
    let git_error = |source| CheckoutError::Git {
        commit: commit.to_string(),
        path: destination.to_path_buf(),
        source,
    };
    let io_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| CheckoutError::Io {
            commit: commit.to_string(),
            path,
            source,
        }
    };
    let oid = Oid::from_str(commit).map_err(git_error)?;
    let tree = repository
        .find_commit(oid)
        .and_then(|found| found.tree())
        .map_err(git_error)?;
    clear(destination).map_err(io_error(destination))?;
    let mut failure: Option<CheckoutError> = None;
    tree.walk(TreeWalkMode::PreOrder, |directory, entry| {
        let Some(name) = entry.name() else {
            return TreeWalkResult::Skip;
        };
        let path = destination.join(directory).join(name);
        let result = match entry.kind() {
            Some(ObjectType::Tree) => std::fs::create_dir_all(&path).map_err(io_error(&path)),
            Some(ObjectType::Blob) => entry
                .to_object(repository)
                .and_then(|object| object.peel_to_blob())
                .map_err(git_error)
                .and_then(|blob| {
                    write_entry(&path, blob.content(), entry.filemode()).map_err(io_error(&path))
                }),
            _ => Ok(()),
        };
        match result {
            Ok(()) => TreeWalkResult::Ok,
            Err(error) => {
                failure = Some(error);
                TreeWalkResult::Abort
            }
        }
    })
    .or_else(|error| match failure.is_some() {
        true => Ok(()),
        false => Err(git_error(error)),
    })?;
    failure.map_or(Ok(()), Err)
}

/// Empties `directory` (creating it if needed).
pub fn clear(directory: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(directory) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(error),
    }
    std::fs::create_dir_all(directory)
}

fn write_entry(path: &Path, content: &[u8], mode: i32) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    #[cfg(unix)]
    if mode == 0o120000 {
        let target = String::from_utf8_lossy(content).into_owned();
        return std::os::unix::fs::symlink(target, path);
    }
    std::fs::write(path, content)?;
    #[cfg(unix)]
    if mode == 0o100755 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(())
}

/// Makes a fresh checkout what its tests expect of an installed project, without building or
/// installing it: registered as a distribution ([`register_project`]), with the version files its
/// build backend writes ([`super::version_file`]) and its gettext catalogues compiled
/// ([`super::gettext_catalogue`]). Called after every checkout that tests run in.
pub fn prepare_checkout(worktree: &Path) -> std::io::Result<()> {
    register_project(worktree)?;
    super::version_file::write_version_files(worktree)?;
    super::gettext_catalogue::compile_catalogues(worktree).map(drop)
}

/// Makes the checked-out project an installed distribution as `importlib.metadata` (and
/// `pkg_resources`) see one, without installing anything: a `<name>-0.0.0.dist-info` directory at
/// the root of the checkout, which is first on `PYTHONPATH`. A package that reads its own version
/// at import (`importlib.metadata.version("name")`) otherwise fails with `PackageNotFoundError`
/// under the oracle, which imports it from the checkout. The environments are shared between
/// commits and slots, so an editable install into them would point at one slot's checkout; this is
/// the part of an editable install the tests can see, entry points included (`entry_points.txt`):
/// a library that finds plugins through `importlib.metadata.entry_points` finds those its own
/// packaging files declare, as stevedore's tests do. Nothing is written when the project declares
/// no name, or when the checkout already holds that distribution's metadata.
pub fn register_project(worktree: &Path) -> std::io::Result<()> {
    let metadata = super::ProjectMetadata::read(worktree);
    let Some(name) = metadata.name.as_deref().and_then(super::requirement_name) else {
        return Ok(());
    };
    let stem = name.replace('-', "_");
    let exists = std::fs::read_dir(worktree)?.flatten().any(|entry| {
        let file = entry
            .file_name()
            .to_string_lossy()
            .to_ascii_lowercase()
            .replace('-', "_");
        (file.ends_with(".dist_info") || file.ends_with(".egg_info"))
            && (file.starts_with(&format!("{stem}_")) || file.starts_with(&format!("{stem}.")))
    });
    if exists {
        return Ok(());
    }
    let directory = worktree.join(format!("{stem}-0.0.0.dist-info"));
    std::fs::create_dir_all(&directory)?;
    std::fs::write(
        directory.join("METADATA"),
        format!("Metadata-Version: 2.1\nName: {name}\nVersion: 0.0.0\n"),
    )?;
    if !metadata.entry_points.is_empty() {
        std::fs::write(
            directory.join("entry_points.txt"),
            entry_points_txt(&metadata.entry_points),
        )?;
    }
    std::fs::write(directory.join("INSTALLER"), "claimflow\n")
}

/// The `entry_points.txt` of a distribution: an INI section per group, `name = reference` lines.
fn entry_points_txt(
    groups: &std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>,
) -> String {
    let mut text = String::new();
    for (group, points) in groups {
        text.push_str(&format!("[{group}]\n"));
        for (name, reference) in points {
            text.push_str(&format!("{name} = {reference}\n"));
        }
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use git2::Signature;

    use super::*;

    #[test]
    fn writes_the_commits_tree_and_nothing_else() {
        let directory = tempfile::tempdir().unwrap();
        let repository = Repository::init(directory.path().join("repo")).unwrap();
        let mut index = repository.index().unwrap();
        let blob = repository.blob(b"print('x')\n").unwrap();
        let mut entry = git2::IndexEntry {
            ctime: git2::IndexTime::new(0, 0),
            mtime: git2::IndexTime::new(0, 0),
            dev: 0,
            ino: 0,
            mode: 0o100644,
            uid: 0,
            gid: 0,
            file_size: 11,
            id: blob,
            flags: 0,
            flags_extended: 0,
            path: b"pkg/mod.py".to_vec(),
        };
        index.add(&entry).unwrap();
        entry.path = b"run.sh".to_vec();
        entry.mode = 0o100755;
        index.add(&entry).unwrap();
        let tree = repository.find_tree(index.write_tree().unwrap()).unwrap();
        let signature = Signature::new("t", "t@example.invalid", &git2::Time::new(0, 0)).unwrap();
        let commit = repository
            .commit(None, &signature, &signature, "one", &tree, &[])
            .unwrap();
        let destination = directory.path().join("worktree");
        std::fs::create_dir_all(destination.join("stale")).unwrap();
        std::fs::write(destination.join("stale/old.pyc"), b"").unwrap();
        checkout_commit(&repository, &commit.to_string(), &destination).unwrap();
        assert_eq!(
            std::fs::read_to_string(destination.join("pkg/mod.py")).unwrap(),
            "print('x')\n"
        );
        assert!(!destination.join("stale").exists());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(destination.join("run.sh"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o111, 0o111);
        }
        assert!(checkout_commit(&repository, &"0".repeat(40), &destination).is_err());
    }
}
