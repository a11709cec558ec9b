//! The top-level modules a checkout's tests import, read statically. A project's general
//! `requirements.txt` often lists its development tools beside pinned runtime dependencies
//! (sortedcontainers' 2014–2018 file lists `nose`, which its tests import, next to Sphinx and
//! ipython): installing the whole file would drag in an era's worth of unbuildable pins, but the
//! entries the tests import are what the project's own CI installed to run them. See
//! [`super::requirements::discover_requirements`].

use std::collections::BTreeSet;
use std::path::Path;

use crate::syntax::python::{Import, ParsedModule};

/// At most this many test files are read: enough for any suite, bounded for a huge checkout.
const MAX_FILES: usize = 2000;

/// The top-level module names (`nose`, `freezegun`) imported by the test files of `worktree`:
/// Python files under a `test`/`tests`/`testing` directory, `test_*.py`, `*_test.py`,
/// `*_tests.py` and `conftest.py`. Imports at any depth count (a test that imports its tool in a
/// function needs it as much). Relative imports name nothing installable.
pub fn test_imports(worktree: &Path) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let files = super::importers::python_files(worktree);
    for file in files
        .iter()
        .filter(|file| is_test_file(file))
        .take(MAX_FILES)
    {
        let Ok(text) = std::fs::read_to_string(worktree.join(file)) else {
            continue;
        };
        match ParsedModule::parse(file, &text) {
            Ok(module) => names.extend(module.imports().iter().filter_map(top_level_name)),
            // Python 2 source: its import statements read the same line by line.
            Err(_) => names.extend(text.lines().filter_map(import_line_name)),
        }
    }
    names
}

/// True for a file that holds tests or their fixtures.
fn is_test_file(path: &str) -> bool {
    let mut parts: Vec<&str> = path.split('/').collect();
    let name = parts.pop().unwrap_or(path);
    let in_test_directory = parts
        .iter()
        .any(|part| matches!(*part, "test" | "tests" | "testing"));
    in_test_directory
        || name == "conftest.py"
        || name.starts_with("test_")
        || name.ends_with("_test.py")
        || name.ends_with("_tests.py")
}

fn top_level_name(import: &Import) -> Option<String> {
    let module = match import {
        Import::Module { name, .. } => name.as_str(),
        Import::From {
            level: 0,
            module: Some(module),
            ..
        } => module.as_str(),
        Import::From { .. } => return None,
    };
    module.split('.').next().map(str::to_string)
}

/// The top-level module of an `import a.b` / `from a.b import c` line (the first of a list).
fn import_line_name(line: &str) -> Option<String> {
    let line = line.trim();
    let rest = line
        .strip_prefix("import ")
        .or_else(|| line.strip_prefix("from "))?;
    let name: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// The module name a distribution is imported as, by the common convention (`python-dateutil`
/// is not covered; `nose`, `freezegun`, `pytest-mock`'s `pytest_mock` are).
pub fn import_name(distribution: &str) -> String {
    distribution.to_ascii_lowercase().replace(['-', '.'], "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_of_test_files_and_python_2_sources() {
        let directory = tempfile::tempdir().unwrap();
        let root = directory.path();
        std::fs::create_dir_all(root.join("tests")).unwrap();
        std::fs::create_dir_all(root.join("package")).unwrap();
        std::fs::write(
            root.join("tests/test_a.py"),
            "import os.path\nfrom freezegun import freeze_time\nfrom . import helpers\n\ndef test():\n    import hypothesis.strategies\n",
        )
        .unwrap();
        std::fs::write(
            root.join("tests/helpers.py"),
            "from nose.tools import raises\nprint 'python 2'\n",
        )
        .unwrap();
        std::fs::write(root.join("package/core.py"), "import requests\n").unwrap();
        let names: Vec<String> = test_imports(root).into_iter().collect();
        assert_eq!(names, ["freezegun", "hypothesis", "nose", "os"]);
        assert_eq!(import_name("Pytest-Mock"), "pytest_mock");
    }
}
