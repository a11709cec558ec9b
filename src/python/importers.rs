//! Which files of a checkout could import a given set of files, found statically and cheaply.
//!
//! A commit that touches a helper module (`tests/mixins.py`, `tests/__init__.py`) changes the tests
//! defined there, yet the test classes that inherit them may live in test modules the commit did
//! not touch. Mining finds those modules here, before pytest runs: a module *reaches* the touched
//! files when one of its `import` / `from` statements loads one of them, or loads a module that
//! reaches them (a base class in `tests/base.py` that mixes in `tests/mixins.py`). Imports are read
//! with the Python parser and resolved to files as the file-anchoring arm resolves them
//! ([`ModuleIndex`]: package rule, `src/` layout, relative imports). The package rule names a
//! module from the first directory upwards that is not a package, which is the directory pytest's
//! default import mode puts on `sys.path` (`tests/mixins.py` outside a package is `mixins`).
//!
//! The answer over-approximates on purpose: a module that imports a helper without inheriting from
//! it costs a collection, and the claims keep only tests whose function pytest says is defined in
//! a touched file. A file the parser cannot read (Python 2 source) counts as reaching a touched
//! file when its text names one, for the same reason.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::syntax::modules::ModuleIndex;
use crate::syntax::python::{Import, ParsedModule};

/// Directories never searched: version control, caches and environments, which hold no tests of
/// the repository.
const SKIPPED_DIRECTORIES: &[&str] = &["__pycache__", "node_modules", "site-packages"];

/// The Python files of `worktree` (other than `targets` themselves) that reach one of `targets`,
/// directly or through other files of the worktree, sorted. `targets` are worktree-relative paths;
/// those that are not Python files present in the worktree are ignored.
pub fn files_reaching(worktree: &Path, targets: &[String]) -> Vec<String> {
    let files = python_files(worktree);
    let mut reached: BTreeSet<String> = targets
        .iter()
        .filter(|target| files.contains(*target))
        .cloned()
        .collect();
    if reached.is_empty() {
        return Vec::new();
    }
    let index = ModuleIndex::new(&files);
    let mut scanner = Scanner {
        worktree,
        index: &index,
        texts: BTreeMap::new(),
        loads: BTreeMap::new(),
    };
    loop {
        let keywords: BTreeSet<&str> = reached.iter().map(|path| keyword(path)).collect();
        let newly: Vec<String> = files
            .iter()
            .filter(|file| !reached.contains(*file))
            .filter(|file| scanner.reaches(file, &keywords, &reached))
            .cloned()
            .collect();
        if newly.is_empty() {
            break;
        }
        reached.extend(newly);
    }
    reached
        .into_iter()
        .filter(|file| !targets.contains(file))
        .collect()
}

/// What a file loads, read once per file.
struct Scanner<'a> {
    worktree: &'a Path,
    index: &'a ModuleIndex,
    texts: BTreeMap<String, Option<String>>,
    /// The worktree files a file's imports load; `None` when its text does not parse.
    loads: BTreeMap<String, Option<BTreeSet<String>>>,
}

impl Scanner<'_> {
    /// True when `file` loads one of `reached`. The text is searched for the names first, so only
    /// files that could name a reached module are parsed.
    fn reaches(
        &mut self,
        file: &str,
        keywords: &BTreeSet<&str>,
        reached: &BTreeSet<String>,
    ) -> bool {
        let worktree = self.worktree;
        let Some(text) = self
            .texts
            .entry(file.to_string())
            .or_insert_with(|| std::fs::read_to_string(worktree.join(file)).ok())
        else {
            return false;
        };
        // `from . import Name` names no module: a package's `__init__.py` is reached that way.
        let may_name =
            text.contains("from .") || keywords.iter().any(|keyword| text.contains(keyword));
        if !may_name {
            return false;
        }
        if !self.loads.contains_key(file) {
            let loads = ParsedModule::parse(file, text)
                .ok()
                .map(|module| self.loaded_files(file, &module.imports()));
            self.loads.insert(file.to_string(), loads);
        }
        match &self.loads[file] {
            Some(loads) => loads.iter().any(|loaded| reached.contains(loaded)),
            // Unreadable by the parser: the names in its text are all there is to go on.
            None => true,
        }
    }

    /// The worktree files `imports` of `file` load.
    fn loaded_files(&self, file: &str, imports: &[Import]) -> BTreeSet<String> {
        imports
            .iter()
            .flat_map(|import| self.index.loaded_by(file, import))
            .collect()
    }
}

/// The name an import of `path` must contain: its stem, or its package's name for `__init__.py`.
fn keyword(path: &str) -> &str {
    let mut parts = path.rsplit('/');
    let file = parts.next().unwrap_or(path);
    match file.strip_suffix(".py") {
        Some("__init__") => parts.next().unwrap_or("__init__"),
        Some(stem) => stem,
        None => file,
    }
}

/// Every `.py` file under `root`, relative and `/`-separated; hidden directories, caches and
/// environments are skipped, symbolic links are not followed.
pub(super) fn python_files(root: &Path) -> BTreeSet<String> {
    let mut files = BTreeSet::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(directory) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&directory) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() {
                let environment = path.join("pyvenv.cfg").is_file();
                if !name.starts_with('.')
                    && !SKIPPED_DIRECTORIES.contains(&name.as_str())
                    && !environment
                {
                    pending.push(path);
                }
            } else if kind.is_file()
                && name.ends_with(".py")
                && let Ok(relative) = path.strip_prefix(root)
            {
                files.insert(relative.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let directory = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let file = directory.path().join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        }
        directory
    }

    fn reaching(directory: &tempfile::TempDir, targets: &[&str]) -> Vec<String> {
        let targets: Vec<String> = targets.iter().map(|target| target.to_string()).collect();
        files_reaching(directory.path(), &targets)
    }

    #[test]
    fn absolute_relative_and_package_imports_reach_a_helper() {
        let directory = tree(&[
            ("pkg/__init__.py", ""),
            ("pkg/core.py", "import os\n"),
            (
                "tests/__init__.py",
                "class CacheTests:\n    def test_x(self):\n        assert 1\n",
            ),
            ("tests/mixins.py", "class Contract:\n    pass\n"),
            (
                "tests/test_absolute.py",
                "from tests.mixins import Contract\n",
            ),
            ("tests/test_module.py", "import tests.mixins\n"),
            ("tests/test_relative.py", "from .mixins import Contract\n"),
            ("tests/test_relative_name.py", "from . import mixins\n"),
            ("tests/test_package.py", "from . import CacheTests\n"),
            (
                "tests/test_package_absolute.py",
                "from tests import CacheTests\n",
            ),
            (
                "tests/test_unrelated.py",
                "from pkg.core import os\n# mixins, in a comment\n",
            ),
            (
                "tests/test_conditional.py",
                "try:\n    from tests.mixins import Contract\nexcept ImportError:\n    Contract = object\n",
            ),
        ]);
        assert_eq!(
            reaching(&directory, &["tests/mixins.py"]),
            [
                "tests/test_absolute.py",
                "tests/test_conditional.py",
                "tests/test_module.py",
                "tests/test_relative.py",
                "tests/test_relative_name.py",
            ]
        );
        // Importing any module of a package runs its `__init__.py`.
        assert_eq!(
            reaching(&directory, &["tests/__init__.py"]),
            [
                "tests/test_absolute.py",
                "tests/test_conditional.py",
                "tests/test_module.py",
                "tests/test_package.py",
                "tests/test_package_absolute.py",
                "tests/test_relative.py",
                "tests/test_relative_name.py",
            ]
        );
        assert_eq!(
            reaching(&directory, &["tests/missing.py"]),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_test_directory_outside_a_package_imports_from_its_own_directory() {
        // pytest's default import mode puts `tests/` itself on sys.path.
        let directory = tree(&[
            ("tests/mixins.py", "class Contract:\n    pass\n"),
            ("tests/test_a.py", "from mixins import Contract\n"),
            ("tests/unit/test_b.py", "from mixins import Contract\n"),
        ]);
        // Any module named `mixins` may be it: a collection decides.
        assert_eq!(
            reaching(&directory, &["tests/mixins.py"]),
            ["tests/test_a.py", "tests/unit/test_b.py"]
        );
    }

    #[test]
    fn modules_reach_a_helper_through_a_base_module() {
        let directory = tree(&[
            ("tests/__init__.py", ""),
            ("tests/mixins.py", "class Contract:\n    pass\n"),
            (
                "tests/base.py",
                "from tests.mixins import Contract\n\nclass Base(Contract):\n    pass\n",
            ),
            ("tests/test_a.py", "from tests.base import Base\n"),
            ("tests/test_b.py", "from tests import base\n"),
            ("tests/test_c.py", "import json\n"),
        ]);
        assert_eq!(
            reaching(&directory, &["tests/mixins.py"]),
            ["tests/base.py", "tests/test_a.py", "tests/test_b.py"]
        );
    }

    #[test]
    fn python_2_source_that_names_the_helper_counts() {
        let directory = tree(&[
            ("tests/__init__.py", ""),
            ("tests/mixins.py", "class Contract:\n    pass\n"),
            (
                "tests/test_old.py",
                "from tests.mixins import Contract\nprint 'old'\n",
            ),
            ("tests/test_old_other.py", "import json\nprint 'old'\n"),
            (".hidden/test_x.py", "from tests.mixins import Contract\n"),
        ]);
        assert_eq!(
            reaching(&directory, &["tests/mixins.py"]),
            ["tests/test_old.py"]
        );
    }
}
