//! What a claim's words can name in the repository: its files and directories, and its Python
//! definitions with their line ranges, read once per run so that resolving thousands of code spans
//! costs a map lookup each.
//!
//! Files are the working tree's (tracked, plus untracked ones git does not ignore) together with
//! those of the revisions a check compares, so a name the range deleted or added still resolves.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use git2::{ObjectType, Repository, Status, StatusOptions, TreeWalkMode, TreeWalkResult};
use rayon::prelude::*;

use crate::syntax::modules::ModuleIndex;
use crate::syntax::python::{DefinitionLines, ParsedModule};

use super::error::SourceError;

/// Python sources keyed by path and content digest.
type PythonSources = BTreeMap<(String, [u8; 32]), String>;

/// One Python definition as a claim may name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    /// Repository-relative file.
    pub path: String,
    /// Qualified name within its module (`Client.get`).
    pub name: String,
    /// `module.Client.get`, split on dots, for suffix matching (`client.Client.get`).
    dotted: Vec<String>,
}

/// The repository's names, for resolving anchors.
#[derive(Debug, Default)]
pub struct RepositoryIndex {
    files: BTreeSet<String>,
    directories: BTreeSet<String>,
    /// Sites by the last component of their name.
    by_last_name: BTreeMap<String, Vec<Site>>,
    /// Each Python file's definitions with their lines.
    lines: BTreeMap<String, Vec<DefinitionLines>>,
}

impl RepositoryIndex {
    /// Reads the working tree of the repository at `root` and the trees of `revisions`.
    pub fn build(root: &Path, revisions: &[git2::Oid]) -> Result<Self, SourceError> {
        let failed = |source| SourceError::Repository {
            path: root.to_path_buf(),
            source,
        };
        let repository = Repository::open(root).map_err(failed)?;
        let mut python = PythonSources::new();
        let mut files = BTreeSet::new();
        for path in worktree_files(&repository).map_err(failed)? {
            if path.ends_with(".py")
                && let Ok(text) = std::fs::read_to_string(root.join(&path))
            {
                python.insert(
                    (path.clone(), *blake3::hash(text.as_bytes()).as_bytes()),
                    text,
                );
            }
            files.insert(path);
        }
        for revision in revisions {
            let tree = repository
                .find_commit(*revision)
                .and_then(|commit| commit.tree())
                .map_err(failed)?;
            tree.walk(TreeWalkMode::PreOrder, |directory, entry| {
                if entry.kind() == Some(ObjectType::Blob) {
                    let path = format!("{directory}{}", entry.name().unwrap_or_default());
                    if path.ends_with(".py")
                        && let Ok(blob) = repository.find_blob(entry.id())
                        && let Ok(text) = std::str::from_utf8(blob.content())
                    {
                        python
                            .entry((path.clone(), *blake3::hash(text.as_bytes()).as_bytes()))
                            .or_insert_with(|| text.to_string());
                    }
                    files.insert(path);
                }
                TreeWalkResult::Ok
            })
            .map_err(failed)?;
        }
        Ok(Self::from_files(files, python))
    }

    /// An index of the given files and Python sources (keyed by path and content digest, so a file
    /// that differs between revisions contributes the definitions of each version).
    fn from_files(files: BTreeSet<String>, python: PythonSources) -> Self {
        let modules = ModuleIndex::new(&files);
        let parsed: Vec<(String, Vec<DefinitionLines>)> = python
            .into_par_iter()
            .filter_map(|((path, _), text)| {
                let module = ParsedModule::parse(&path, &text).ok()?;
                Some((path, module.definition_lines()))
            })
            .collect();
        let mut index = RepositoryIndex {
            directories: files.iter().flat_map(|file| parents(file)).collect(),
            files,
            ..RepositoryIndex::default()
        };
        for (path, definitions) in parsed {
            let module = modules.module_name(&path);
            for definition in &definitions {
                let site = Site {
                    path: path.clone(),
                    name: definition.name.clone(),
                    dotted: format!("{module}.{}", definition.name)
                        .split('.')
                        .map(str::to_string)
                        .collect(),
                };
                let last = site.dotted.last().cloned().unwrap_or_default();
                let sites = index.by_last_name.entry(last).or_default();
                if !sites.contains(&site) {
                    sites.push(site);
                }
            }
            index.lines.entry(path).or_default().extend(definitions);
        }
        index
    }

    /// Whether `path` (repository-relative, `/`-separated) is a file of the repository.
    pub fn has_file(&self, path: &str) -> bool {
        self.files.contains(path)
    }

    /// Whether `path` is a directory holding files of the repository.
    pub fn has_directory(&self, path: &str) -> bool {
        self.directories.contains(path.trim_end_matches('/'))
    }

    /// The definitions whose dotted name (`module.Class.method`) ends with `dotted`'s components.
    pub fn sites(&self, dotted: &[&str]) -> Vec<&Site> {
        let Some(last) = dotted.last() else {
            return Vec::new();
        };
        self.by_last_name
            .get(*last)
            .into_iter()
            .flatten()
            .filter(|site| {
                site.dotted.len() >= dotted.len()
                    && site.dotted[site.dotted.len() - dotted.len()..]
                        .iter()
                        .zip(dotted)
                        .all(|(have, want)| have == want)
            })
            .collect()
    }

    /// Whether `path` defines `name` (`Client.get`).
    pub fn defines(&self, path: &str, name: &str) -> bool {
        self.lines
            .get(path)
            .is_some_and(|definitions| definitions.iter().any(|found| found.name == name))
    }

    /// The innermost definition of `path` whose lines hold `line`.
    pub fn definition_at(&self, path: &str, line: u32) -> Option<&str> {
        self.lines
            .get(path)?
            .iter()
            .filter(|found| found.first <= line && line <= found.last)
            .min_by_key(|found| found.last - found.first)
            .map(|found| found.name.as_str())
    }

    /// An index of explicit files and Python sources, for tests elsewhere in `check`.
    #[cfg(test)]
    pub fn of_sources(files: &[(&str, &str)]) -> Self {
        let python = files
            .iter()
            .filter(|(path, _)| path.ends_with(".py"))
            .map(|(path, text)| {
                (
                    (path.to_string(), *blake3::hash(text.as_bytes()).as_bytes()),
                    text.to_string(),
                )
            })
            .collect();
        Self::from_files(
            files.iter().map(|(path, _)| path.to_string()).collect(),
            python,
        )
    }
}

/// The index of one repository, built the first time a reader needs a name resolved (JSON Lines
/// with declared anchors never do), then shared by every file of the run.
pub struct LazyIndex {
    root: Option<std::path::PathBuf>,
    revisions: Vec<git2::Oid>,
    built: std::cell::OnceCell<RepositoryIndex>,
}

impl LazyIndex {
    /// The repository at `root` with the trees of `revisions`; `None` resolves no names.
    pub fn new(root: Option<&Path>, revisions: &[git2::Oid]) -> Self {
        LazyIndex {
            root: root.map(Path::to_path_buf),
            revisions: revisions.to_vec(),
            built: std::cell::OnceCell::new(),
        }
    }

    /// An index already built (tests of the readers).
    #[cfg(test)]
    pub fn with_index(index: RepositoryIndex) -> Self {
        let built = std::cell::OnceCell::new();
        let _ = built.set(index);
        LazyIndex {
            root: None,
            revisions: Vec::new(),
            built,
        }
    }

    pub fn get(&self) -> Result<&RepositoryIndex, SourceError> {
        if let Some(index) = self.built.get() {
            return Ok(index);
        }
        let index = match &self.root {
            Some(root) => RepositoryIndex::build(root, &self.revisions)?,
            None => RepositoryIndex::default(),
        };
        Ok(self.built.get_or_init(|| index))
    }
}

/// The working tree's files as git sees them: the index's entries still on disk, and untracked
/// files that no ignore rule excludes.
pub fn worktree_files(repository: &Repository) -> Result<BTreeSet<String>, git2::Error> {
    let Some(root) = repository.workdir() else {
        return Ok(BTreeSet::new());
    };
    let mut files = BTreeSet::new();
    for entry in repository.index()?.iter() {
        let path = String::from_utf8_lossy(&entry.path).into_owned();
        if root.join(&path).is_file() {
            files.insert(path);
        }
    }
    let mut options = StatusOptions::new();
    options
        .include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false);
    for status in repository.statuses(Some(&mut options))?.iter() {
        if status.status().contains(Status::WT_NEW)
            && let Some(path) = status.path()
        {
            files.insert(path.to_string());
        }
    }
    Ok(files)
}

/// `a/b/c.py` → `a/b`, `a`.
fn parents(file: &str) -> impl Iterator<Item = String> + '_ {
    file.match_indices('/')
        .map(|(at, _)| file[..at].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLIENT: &str = "class Client:\n    def get(self):\n        return 1\n\n\ndef parse_url(text):\n    return text\n";

    #[test]
    fn sites_match_dotted_suffixes_and_lines_map_to_the_innermost_definition() {
        let index = RepositoryIndex::of_sources(&[
            ("src/pkg/__init__.py", ""),
            ("src/pkg/client.py", CLIENT),
            ("README.md", "x"),
        ]);
        assert!(index.has_file("README.md") && index.has_directory("src/pkg"));
        let names = |dotted: &[&str]| -> Vec<String> {
            index
                .sites(dotted)
                .iter()
                .map(|site| format!("{}::{}", site.path, site.name))
                .collect()
        };
        assert_eq!(names(&["Client", "get"]), ["src/pkg/client.py::Client.get"]);
        assert_eq!(
            names(&["client", "parse_url"]),
            ["src/pkg/client.py::parse_url"]
        );
        assert!(names(&["other", "parse_url"]).is_empty());
        assert_eq!(
            index.definition_at("src/pkg/client.py", 3),
            Some("Client.get")
        );
        assert_eq!(index.definition_at("src/pkg/client.py", 1), Some("Client"));
        assert_eq!(index.definition_at("src/pkg/client.py", 4), None);
        assert!(index.defines("src/pkg/client.py", "parse_url"));
    }
}
