//! The top-level modules a checkout's tests import, read statically. A project's general
//! `requirements.txt` often lists its development tools beside pinned runtime dependencies
//! (sortedcontainers' 2014–2018 file lists `nose`, which its tests import, next to Sphinx and
//! ipython): installing the whole file would drag in an era's worth of unbuildable pins, but the
//! entries the tests import are what the project's own CI installed to run them. See
//! [`super::requirements::discover_requirements`].
//!
//! Imports the tests make optionally (`pytest.importorskip("numpy")`, an import under `try:` whose
//! `except ImportError:` skips the test) name what a suite runs more of when it is installed
//! (tabulate's numpy, pandas and wcwidth tests): [`optional_test_imports`], see
//! [`super::optional_requirements`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rustpython_ast::Visitor;
use rustpython_parser::Parse;
use rustpython_parser::ast::{self, Constant, Expr};

use crate::syntax::python::{Import, ParsedModule};

/// At most this many test files are read: enough for any suite, bounded for a huge checkout.
const MAX_FILES: usize = 2000;

/// The top-level module names (`nose`, `freezegun`) imported by the test files of `worktree`:
/// Python files under a `test`/`tests`/`testing` directory, `test_*.py`, `*_test.py`,
/// `*_tests.py` and `conftest.py`. Imports at any depth count (a test that imports its tool in a
/// function needs it as much). Relative imports name nothing installable.
pub fn test_imports(worktree: &Path) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (file, text) in test_sources(worktree) {
        match ParsedModule::parse(&file, &text) {
            Ok(module) => names.extend(module.imports().iter().filter_map(top_level_name)),
            // Python 2 source: its import statements read the same line by line.
            Err(_) => names.extend(text.lines().filter_map(import_line_name)),
        }
    }
    names
}

/// The top-level modules the test files of `worktree` import optionally, each with the first file
/// (in path order) that does: the name given to `importorskip` (`pytest.importorskip("numpy")`),
/// and the imports under a `try:` whose handlers catch `ImportError` or `ModuleNotFoundError` (or
/// everything). A Python 2 source that does not parse is read for `importorskip` calls alone.
pub fn optional_test_imports(worktree: &Path) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    for (file, text) in test_sources(worktree) {
        let names = match ast::Suite::parse(&text, &file) {
            Ok(suite) => {
                let mut collector = OptionalImports::default();
                for statement in suite {
                    collector.visit_stmt(statement);
                }
                collector.names
            }
            Err(_) => importorskip_names(&text),
        };
        for name in names {
            found.entry(name).or_insert_with(|| file.clone());
        }
    }
    found
}

/// The test files of `worktree` (in path order, at most [`MAX_FILES`]) that read as text, with
/// their text.
fn test_sources(worktree: &Path) -> impl Iterator<Item = (String, String)> + '_ {
    super::importers::python_files(worktree)
        .into_iter()
        .filter(|file| is_test_file(file))
        .take(MAX_FILES)
        .filter_map(|file| {
            let text = std::fs::read_to_string(worktree.join(&file)).ok()?;
            Some((file, text))
        })
}

/// Walks a module for optional imports (see [`optional_test_imports`]).
#[derive(Default)]
struct OptionalImports {
    /// How many `try:` bodies guarded by an `ImportError` handler enclose the current statement.
    guarded: usize,
    names: BTreeSet<String>,
}

impl Visitor for OptionalImports {
    fn visit_stmt_try(&mut self, node: ast::StmtTry) {
        let guards = node.handlers.iter().any(catches_import_error);
        self.guarded += usize::from(guards);
        for statement in node.body {
            self.visit_stmt(statement);
        }
        self.guarded -= usize::from(guards);
        for handler in node.handlers {
            self.visit_excepthandler(handler);
        }
        for statement in node.orelse.into_iter().chain(node.finalbody) {
            self.visit_stmt(statement);
        }
    }

    fn visit_stmt_import(&mut self, node: ast::StmtImport) {
        if self.guarded > 0 {
            self.names.extend(
                node.names
                    .iter()
                    .filter_map(|alias| alias.name.split('.').next().map(str::to_string)),
            );
        }
    }

    fn visit_stmt_import_from(&mut self, node: ast::StmtImportFrom) {
        let absolute = node.level.is_none_or(|level| level.to_u32() == 0);
        if self.guarded > 0
            && absolute
            && let Some(module) = &node.module
        {
            self.names
                .extend(module.split('.').next().map(str::to_string));
        }
    }

    fn visit_expr_call(&mut self, node: ast::ExprCall) {
        let named = match &*node.func {
            Expr::Name(name) => name.id.as_str() == "importorskip",
            Expr::Attribute(attribute) => attribute.attr.as_str() == "importorskip",
            _ => false,
        };
        if named
            && let Some(Expr::Constant(constant)) = node.args.first()
            && let Constant::Str(module) = &constant.value
        {
            self.names
                .extend(module.split('.').next().map(str::to_string));
        }
        self.generic_visit_expr_call(node);
    }
}

/// True for `except ImportError`, `except (ImportError, ...)`, `except ModuleNotFoundError` and a
/// bare `except:` or `except Exception:` (both catch a missing module).
fn catches_import_error(handler: &ast::ExceptHandler) -> bool {
    let ast::ExceptHandler::ExceptHandler(handler) = handler;
    let catches = |expression: &Expr| {
        let name = match expression {
            Expr::Name(name) => name.id.as_str(),
            Expr::Attribute(attribute) => attribute.attr.as_str(),
            _ => return false,
        };
        matches!(
            name,
            "ImportError" | "ModuleNotFoundError" | "Exception" | "BaseException"
        )
    };
    match handler.type_.as_deref() {
        None => true,
        Some(Expr::Tuple(tuple)) => tuple.elts.iter().any(catches),
        Some(expression) => catches(expression),
    }
}

/// The modules named by `importorskip("name")` calls in `text`, read without parsing it.
fn importorskip_names(text: &str) -> BTreeSet<String> {
    text.split("importorskip(")
        .skip(1)
        .filter_map(|rest| {
            let rest = rest.trim_start();
            let quote = rest.chars().next().filter(|c| matches!(c, '\'' | '"'))?;
            let name = rest[1..].split(quote).next()?;
            let top = name.split('.').next()?;
            (!top.is_empty() && top.chars().all(|c| c.is_alphanumeric() || c == '_'))
                .then(|| top.to_string())
        })
        .collect()
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

    #[test]
    fn optional_imports_are_skips_and_guarded_imports() {
        let directory = tempfile::tempdir().unwrap();
        let root = directory.path();
        std::fs::create_dir_all(root.join("test")).unwrap();
        // tabulate's forms.
        std::fs::write(
            root.join("test/test_input.py"),
            "import pytest\nfrom common import skip\ntry:\n    import wcwidth  # noqa\n    \
             HAS_WCWIDTH = True\nexcept ImportError:\n    HAS_WCWIDTH = False\n\n\
             def test_numpy():\n    try:\n        import numpy\n        from pandas.core import frame\n    \
             except (ImportError, AttributeError):\n        skip('')\n\n\
             def test_other():\n    try:\n        import required_module\n    except KeyError:\n        \
             import fallback_module\n\n\
             def test_lxml():\n    etree = pytest.importorskip(\"lxml.etree\")\n",
        )
        .unwrap();
        std::fs::write(
            root.join("test/test_old.py"),
            "print 'python 2'\nyaml = pytest.importorskip('yaml')\n",
        )
        .unwrap();
        std::fs::write(
            root.join("setup.py"),
            "try:\n    import not_a_test\nexcept ImportError:\n    pass\n",
        )
        .unwrap();
        let found = optional_test_imports(root);
        let names: Vec<&str> = found.keys().map(String::as_str).collect();
        assert_eq!(names, ["lxml", "numpy", "pandas", "wcwidth", "yaml"]);
        assert_eq!(found["yaml"], "test/test_old.py");
        assert_eq!(found["numpy"], "test/test_input.py");
    }
}
