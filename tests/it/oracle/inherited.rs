//! Tests inherited from a touched helper, end to end: a commit changes a mixin in `tests/mixins.py`
//! and the library, and touches no test module. Mining collects the untouched modules that import
//! the mixin and keeps the tests defined in it; the oracle runs them in those untouched modules at
//! the parent, and at the child with the parent's mixin restored.

use std::time::Duration;

use claimflow::mining::TestFileRules;
use claimflow::oracle::invariants::check_judgements;
use claimflow::oracle::{
    CommitUnderTest, ImportErrorPolicy, Settings, Slot, Worktree, judge_commit,
};
use claimflow::python::{self, MineSettings};
use claimflow::records::{ClaimOrigin, ClaimRecord, CommitRecord};
use serde_json::json;

use super::fixture::{Change, FixtureRepo};
use super::procedure::render;
use super::python::environment;

const STORE: &str = r#"class Store(object):
    def __init__(self):
        self.items = []

    def put(self, item):
        self.items.append(item)

    def size(self):
        return len(self.items)
"#;

const MIXINS: &str = r#"class StoreContract(object):
    """What every store promises; a test class defines ``make``."""

    def make(self):
        raise NotImplementedError

    def test_size_counts_every_put(self):
        store = self.make()
        store.put("a")
        store.put("a")
        assert store.size() == 2

    def test_a_new_store_is_empty(self):
        assert self.make().size() == 0
"#;

const TEST_MEMORY: &str = r#"import unittest

from pkg.store import Store
from tests.mixins import StoreContract


class TestMemoryStore(StoreContract, unittest.TestCase):
    def make(self):
        return Store()

    def test_own(self):
        self.assertEqual(Store().items, [])
"#;

const TEST_RELATIVE: &str = r#"from pkg.store import Store

from .mixins import StoreContract


class TestRelativeStore(StoreContract):
    def make(self):
        return Store()
"#;

const TEST_OTHER: &str = r#"from pkg.store import Store


def test_put_keeps_the_item():
    store = Store()
    store.put("a")
    assert store.items == ["a"]
"#;

#[test]
fn a_mixin_test_flips_in_the_untouched_module_that_inherits_it() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut repo = FixtureRepo::init(&dir.path().join("repo"));
    let parent = repo.commit(
        None,
        "A store and its contract",
        &[
            Change::Write("pkg/__init__.py", ""),
            Change::Write("pkg/store.py", STORE),
            Change::Write("tests/__init__.py", ""),
            Change::Write("tests/mixins.py", MIXINS),
            Change::Write("tests/test_memory.py", TEST_MEMORY),
            Change::Write("tests/test_relative.py", TEST_RELATIVE),
            Change::Write("tests/test_other.py", TEST_OTHER),
        ],
    );
    let commit = repo.commit(
        Some(parent),
        "A store holds each item once",
        &[
            Change::Write(
                "pkg/store.py",
                &STORE.replace(
                    "self.items.append(item)",
                    "if item not in self.items:\n            self.items.append(item)",
                ),
            ),
            Change::Write(
                "tests/mixins.py",
                &MIXINS.replace("assert store.size() == 2", "assert store.size() == 1"),
            ),
        ],
    );
    let record: CommitRecord = serde_json::from_value(json!({
        "repo": "demo",
        "commit": commit.to_string(),
        "parent": parent.to_string(),
        "score": 1.0,
        "subject": "A store holds each item once",
        "test_files": ["tests/mixins.py"],
        "source_files": ["pkg/store.py"],
    }))
    .expect("a commit record");

    // Mining at the parent.
    let worktree = dir.path().join("claims-worktree");
    python::checkout_commit(&repo.repository, &record.parent, &worktree).expect("check out");
    let settings = MineSettings {
        python: vec!["3.11".into()],
        dependencies: Vec::new(),
        limit: None,
        timeout: Duration::from_secs(300),
        interpreters: python::DEFAULT_INTERPRETERS,
        date: None,
        released_before: None,
    };
    let scratch = dir.path().join("scratch");
    let mined = python::mine_commit(
        &record,
        &settings,
        &worktree,
        &scratch,
        &Default::default(),
        &|_: &str| {},
    )
    .expect("mine the commit");
    assert!(mined.exclusion.is_none(), "{:?}", mined.exclusion);
    let summary = mined.summary.expect("a summary");
    assert!(summary.files.is_empty(), "{:?}", summary.files);
    assert_eq!(
        summary.importers,
        ["tests/test_memory.py", "tests/test_relative.py"],
        "test_other.py does not import the mixin"
    );
    let described: Vec<(String, ClaimOrigin, String, Option<String>)> = mined
        .claims
        .iter()
        .map(|claim| {
            (
                claim.node.clone(),
                claim.origin,
                claim.file.clone(),
                claim.source_file.clone(),
            )
        })
        .collect();
    let inherited = |node: &str, file: &str| {
        (
            node.to_string(),
            ClaimOrigin::InheritedFromTouchedFile,
            file.to_string(),
            Some("tests/mixins.py".to_string()),
        )
    };
    assert_eq!(
        described,
        [
            inherited(
                "tests/test_memory.py::TestMemoryStore::test_a_new_store_is_empty",
                "tests/test_memory.py"
            ),
            inherited(
                "tests/test_memory.py::TestMemoryStore::test_size_counts_every_put",
                "tests/test_memory.py"
            ),
            inherited(
                "tests/test_relative.py::TestRelativeStore::test_size_counts_every_put",
                "tests/test_relative.py"
            ),
            inherited(
                "tests/test_relative.py::TestRelativeStore::test_a_new_store_is_empty",
                "tests/test_relative.py"
            ),
        ],
        "the module's own test_own is not the commit's"
    );

    // The oracle: the untouched modules run at the parent, and at the child with the parent's
    // mixin restored.
    let claims: Vec<ClaimRecord> = mined.claims.iter().map(|claim| claim.to_claim()).collect();
    let runs = 3;
    let oracle_settings = Settings {
        runs,
        timeout: Duration::from_secs(120),
        import_errors: ImportErrorPolicy::Discard,
        test_files: TestFileRules::default(),
    };
    let mut slot = Slot {
        worktree: Worktree::new(dir.path().join("worktrees/oracle-0")),
        runs: dir.path().join("oracle/slot-0"),
    };
    let judgements = judge_commit(
        &oracle_settings,
        &environment(),
        &mut slot,
        &CommitUnderTest {
            repository: &repo.repository,
            parent: &record.parent,
            commit: &record.commit,
            test_files: &record.test_files,
            claims: &claims,
        },
    )
    .expect("judge the commit");
    let ids: Vec<String> = claims.iter().map(|claim| claim.id.clone()).collect();
    let problems = check_judgements(&ids, &judgements, runs, ImportErrorPolicy::Discard);
    assert!(problems.is_empty(), "{problems:?}");
    insta::assert_snapshot!(render(&judgements));
}
