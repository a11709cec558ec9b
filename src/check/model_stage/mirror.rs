//! The repository the generated pipeline reads: a bare repository in the check's workdir that
//! borrows the user's objects (git's `alternates`), its one branch `check` at the range's end, so
//! the engine, which opens repositories by branch, reads a detached commit too.

use std::path::Path;

use crate::check::error::CheckError;
use crate::check::range::Range;

pub(super) fn write_if_changed(path: &Path, text: &str) -> Result<(), CheckError> {
    if std::fs::read_to_string(path).is_ok_and(|existing| existing == text) {
        return Ok(());
    }
    let parent = path.parent().expect("a file in a directory");
    std::fs::create_dir_all(parent)
        .map_err(|error| CheckError::failed(format!("create {}", parent.display()), error))?;
    crate::cache::write_atomic_in(parent, path, text.as_bytes())
        .map_err(|error| CheckError::failed(format!("write {}", path.display()), error))
}

/// A bare repository at `at` reading the range's repository's objects, its `check` branch at the
/// range's end.
pub(super) fn mirror(range: &Range, at: &Path) -> Result<(), CheckError> {
    let failed = |what: &str| {
        let what = format!("{what} {}", at.display());
        move |error: git2::Error| CheckError::failed(what, error)
    };
    if !at.join("HEAD").is_file() {
        git2::Repository::init_bare(at).map_err(failed("create the repository"))?;
    }
    let objects = range.repository.commondir().join("objects");
    let objects = objects.canonicalize().unwrap_or(objects);
    write_if_changed(
        &at.join("objects").join("info").join("alternates"),
        &format!("{}\n", objects.display()),
    )?;
    let mirror = git2::Repository::open_bare(at).map_err(failed("open"))?;
    mirror
        .reference(
            "refs/heads/check",
            range.to,
            true,
            "claimflow check: the range's end",
        )
        .map_err(failed("point the check branch of"))?;
    Ok(())
}
