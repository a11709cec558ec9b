//! A small Python library with one commit per oracle case, each a child of a shared base.
//!
//! The cases are the ones the paper's oracle must tell apart: an assertion flip with the test
//! updated in the same commit, a removed API (an exception flip), an unrelated change, a broken
//! child, a child that makes a test nondeterministic, a test file that no longer imports at the
//! child, and collection errors at the parent and at the child.

use std::path::Path;

use git2::Oid;

use super::fixture::{Change, FixtureRepo};

const CORE: &str = r#"import os


def add(a, b):
    return a + b


def mul(a, b):
    return a * b


def pick():
    return 1


def legacy():
    return "old"


class Store(object):
    def __init__(self):
        self.items = {}

    def put(self, key, value):
        self.items[key] = value

    def clear(self):
        self.items = {}
"#;

const TEST_CORE: &str = r#"from pkg.core import add, mul, pick


def test_add():
    assert add(1, 2) == 3


def test_mul():
    assert mul(2, 3) == 6


def test_pick():
    assert pick() == 1
"#;

const TEST_STORE: &str = r#"from pkg.core import Store


def test_clear():
    store = Store()
    store.put("a", 1)
    store.clear()
    assert store.items == {}
"#;

const TEST_LEGACY: &str = r#"from pkg.core import legacy


def test_legacy():
    assert legacy() == "old"
"#;

const TEST_SEED: &str = r#"import os


def test_even_seed():
    assert int(os.environ["PYTHONHASHSEED"]) % 2 == 0
"#;

/// The fixture library and its cases, by name.
pub struct Library {
    pub repo: FixtureRepo,
    pub base: Oid,
    /// A base whose `tests/conftest.py` imports `legacy`.
    pub base_with_conftest: Oid,
    /// A base with a test file that imports a module that is not installed.
    pub base_with_broken_file: Oid,
}

/// A case: its parent and child.
#[derive(Debug, Clone, Copy)]
pub struct Case {
    pub parent: Oid,
    pub commit: Oid,
}

impl Library {
    pub fn create(dir: &Path) -> Self {
        let mut repo = FixtureRepo::init(dir);
        let base = repo.commit(
            None,
            "A small library with tests",
            &[
                Change::Write("pkg/__init__.py", ""),
                Change::Write("pkg/core.py", CORE),
                Change::Write("tests/test_core.py", TEST_CORE),
                Change::Write("tests/test_store.py", TEST_STORE),
                Change::Write("tests/test_legacy.py", TEST_LEGACY),
                Change::Write("tests/test_seed.py", TEST_SEED),
            ],
        );
        let base_with_conftest = repo.commit(
            Some(base),
            "Share the legacy value through conftest",
            &[Change::Write(
                "tests/conftest.py",
                "from pkg.core import legacy as _legacy\n",
            )],
        );
        let base_with_broken_file = repo.commit(
            Some(base),
            "A test that needs an optional dependency",
            &[Change::Write(
                "tests/test_optional.py",
                "import not_installed_module\n\n\ndef test_optional():\n    assert not_installed_module\n",
            )],
        );
        Library {
            repo,
            base,
            base_with_conftest,
            base_with_broken_file,
        }
    }

    fn case(&mut self, parent: Oid, message: &str, changes: &[Change]) -> Case {
        let commit = self.repo.commit(Some(parent), message, changes);
        Case { parent, commit }
    }

    /// `add` changes meaning and its test is updated in the same commit.
    pub fn assertion_flip(&mut self) -> Case {
        self.case(
            self.base,
            "add counts from one",
            &[
                Change::Write(
                    "pkg/core.py",
                    &CORE.replace("return a + b", "return a + b + 1"),
                ),
                Change::Write(
                    "tests/test_core.py",
                    &TEST_CORE.replace("add(1, 2) == 3", "add(1, 2) == 4"),
                ),
            ],
        )
    }

    /// The assertion flip, and the child's test file gains a test it skips (on a platform, a
    /// version, a missing optional dependency): a skip is the test's own choice, not a broken child.
    pub fn assertion_flip_with_a_skipped_test(&mut self) -> Case {
        self.case(
            self.base,
            "add counts from one; a skipped test for later",
            &[
                Change::Write(
                    "pkg/core.py",
                    &CORE.replace("return a + b", "return a + b + 1"),
                ),
                Change::Write(
                    "tests/test_core.py",
                    &format!(
                        "import pytest\n{}\n\n@pytest.mark.skip(reason=\"not yet\")\ndef test_later():\n    assert add(2, 2) == 5\n",
                        TEST_CORE.replace("add(1, 2) == 3", "add(1, 2) == 4")
                    ),
                ),
            ],
        )
    }

    /// `Store.clear` is removed; its test is rewritten for `reset`.
    pub fn removed_api(&mut self) -> Case {
        self.case(
            self.base,
            "Rename Store.clear to reset",
            &[
                Change::Write(
                    "pkg/core.py",
                    &CORE.replace("def clear(self)", "def reset(self)"),
                ),
                Change::Write("tests/test_store.py", &TEST_STORE.replace("clear", "reset")),
            ],
        )
    }

    /// A comment in the library and a new test.
    pub fn unrelated(&mut self) -> Case {
        self.case(
            self.base,
            "Document add, test add with zero",
            &[
                Change::Write("pkg/core.py", &format!("# Arithmetic helpers.\n{CORE}")),
                Change::Write(
                    "tests/test_core.py",
                    &format!("{TEST_CORE}\n\ndef test_add_zero():\n    assert add(0, 0) == 0\n"),
                ),
            ],
        )
    }

    /// `mul` breaks while the child's own `test_mul` still expects the old result.
    pub fn broken_child(&mut self) -> Case {
        self.case(
            self.base,
            "Speed up mul",
            &[
                Change::Write(
                    "pkg/core.py",
                    &CORE.replace("return a * b", "return a * b + 1"),
                ),
                Change::Write(
                    "tests/test_core.py",
                    &format!("{TEST_CORE}\n\ndef test_add_zero():\n    assert add(0, 0) == 0\n"),
                ),
            ],
        )
    }

    /// `pick` starts to depend on the hash seed: odd runs fail.
    pub fn nondeterministic(&mut self) -> Case {
        self.case(
            self.base,
            "pick depends on hashing",
            &[
                Change::Write(
                    "pkg/core.py",
                    &CORE.replace(
                        "def pick():\n    return 1",
                        "def pick():\n    return 1 if int(os.environ.get(\"PYTHONHASHSEED\", \"0\")) % 2 == 0 else 2",
                    ),
                ),
                Change::Write("tests/test_core.py", &format!("# Core tests.\n{TEST_CORE}")),
            ],
        )
    }

    /// `legacy` is removed and its test file deleted; another test file is touched too.
    pub fn import_error(&mut self) -> Case {
        self.case(
            self.base,
            "Drop legacy",
            &[
                Change::Write(
                    "pkg/core.py",
                    &CORE.replace("def legacy():\n    return \"old\"\n", ""),
                ),
                Change::Remove("tests/test_legacy.py"),
                Change::Write("tests/test_core.py", &format!("# Core tests.\n{TEST_CORE}")),
            ],
        )
    }

    /// `legacy` is removed; the parent's `conftest.py`, restored at the child, no longer imports.
    pub fn conftest_error(&mut self) -> Case {
        self.case(
            self.base_with_conftest,
            "Drop legacy, and its conftest import",
            &[
                Change::Write(
                    "pkg/core.py",
                    &CORE.replace("def legacy():\n    return \"old\"\n", ""),
                ),
                Change::Write("tests/conftest.py", "# Nothing shared.\n"),
                Change::Remove("tests/test_legacy.py"),
            ],
        )
    }

    /// An unrelated change whose parent has a test file that does not collect.
    pub fn parent_collection_error(&mut self) -> Case {
        self.case(
            self.base_with_broken_file,
            "Document add; mark the optional test",
            &[
                Change::Write("pkg/core.py", &format!("# Arithmetic helpers.\n{CORE}")),
                Change::Write(
                    "tests/test_optional.py",
                    "import not_installed_module  # optional\n\n\ndef test_optional():\n    assert not_installed_module\n",
                ),
            ],
        )
    }
}
