//! Mining: commit ranking (scores, order, renames, merges, keywords, test-file rules), source-only
//! diffs, repositories, and the `rank-commits` step kind driven directly through a hand-built context.

use std::collections::BTreeMap;
use std::path::Path;

use claimflow::cache::Store;
use claimflow::engine::{ItemResult, StepContext, StepKind, Upstream};
use claimflow::mining::repository;
use claimflow::mining::{
    CommitScore, Merges, RankBy, Selection, TestFileRules, rank, score_history, source_diff,
};
use claimflow::pipeline::{Pipeline, RepoSource, RepoSpec, StepSpec};
use claimflow::records::CommitRecord;
use claimflow::steps::RankCommits;
use serde_json::json;

use crate::common::git::FixtureRepo;

const CACHE_PY: &str = "def get(key):\n    return key\n";
const CACHE_PY_V2: &str = "def get(key, default=None):\n    return default\n";

const TEST_CACHE_V1: &str = "\
import pytest
from pkg import cache


def test_get():
    assert cache.get(1) == 1
    assert cache.get(2) == 2


class TestCache(unittest.TestCase):
    def test_pop(self):
        self.assertEqual(cache.get(3), 3)
        with self.assertRaises(KeyError):
            cache.pop(4)

    def test_raises(self):
        with pytest.raises(TypeError):
            cache.get()
";

/// A small history with one commit of each kind ranking must tell apart.
fn history() -> FixtureRepo {
    let mut repo = FixtureRepo::new();
    repo.commit(
        "Initial cache",
        &[
            ("pkg/__init__.py", Some("")),
            ("pkg/cache.py", Some(CACHE_PY)),
            ("tests/test_cache.py", Some(TEST_CACHE_V1)),
        ],
    )
    .commit(
        "Return the default from get",
        &[
            ("pkg/cache.py", Some(CACHE_PY_V2)),
            (
                "tests/test_cache.py",
                Some(&TEST_CACHE_V1.replace(
                    "    assert cache.get(1) == 1\n    assert cache.get(2) == 2\n",
                    "    assert cache.get(1) is None\n",
                )),
            ),
        ],
    )
    .commit("Document the cache", &[("README.md", Some("# cache\n"))])
    .commit(
        "Tidy tests",
        &[(
            "tests/test_cache.py",
            Some(&TEST_CACHE_V1.replace("    assert cache.get(2) == 2\n", "")),
        )],
    )
    .commit(
        "Fix pop: remove the KeyError",
        &[
            ("pkg/cache.py", Some("def get(key, default=None):\n    return default\n\n\ndef pop(key):\n    return None\n")),
            (
                "tests/test_cache.py",
                Some("from pkg import cache\n\n\ndef test_pop():\n    cache.pop(4)\n"),
            ),
        ],
    )
    .commit(
        "Add put",
        &[
            ("pkg/cache.py", Some("def put(key):\n    pass\n")),
            ("tests/test_put.py", Some("def test_put():\n    assert put(1) is None\n")),
        ],
    );
    repo
}

fn score(repo: &FixtureRepo, rules: &TestFileRules, merges: Merges) -> Vec<CommitScore> {
    score_history(repo.path(), "fixture", repo.head(), rules, merges).unwrap()
}

fn selection(by: RankBy) -> Selection {
    Selection {
        by,
        top: 40,
        min_score: 1.0,
    }
}

/// One line per history commit: deleted assertions, candidacy, subject, files.
fn describe_history(history: &[CommitScore]) -> String {
    history
        .iter()
        .map(|commit| {
            format!(
                "{:>2} {:9} {:32} tests={:?} sources={:?}",
                commit.assertions_deleted,
                if commit.is_candidate() {
                    "candidate"
                } else {
                    "-"
                },
                commit.subject,
                commit.test_files,
                commit.source_files,
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One line per ranked record.
fn describe_ranking(records: &[CommitRecord]) -> String {
    records
        .iter()
        .map(|record| {
            format!(
                "#{} score={} {} (assertions_deleted={} deleted_assertion_lines={} keyword_hits={} merge={})",
                record.rank,
                record.score,
                record.subject,
                record.assertions_deleted,
                record.deleted_assertion_lines,
                record.keyword_hits,
                record.merge
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn history_scores_count_deleted_assertions_per_commit() {
    let repo = history();
    let history = score(&repo, &TestFileRules::default(), Merges::Include);
    insta::assert_snapshot!(describe_history(&history), @r#"
     0 candidate Add put                          tests=["tests/test_put.py"] sources=["pkg/cache.py"]
     4 candidate Fix pop: remove the KeyError     tests=["tests/test_cache.py"] sources=["pkg/cache.py"]
     1 -         Tidy tests                       tests=["tests/test_cache.py"] sources=[]
     0 -         Document the cache               tests=[] sources=[]
     2 candidate Return the default from get      tests=["tests/test_cache.py"] sources=["pkg/cache.py"]
     0 -         Initial cache                    tests=[] sources=[]
    "#);
}

#[test]
fn ranking_orders_by_deleted_assertions_and_drops_zero_scores() {
    let repo = history();
    let history = score(&repo, &TestFileRules::default(), Merges::Include);
    let records = rank("fixture", &history, selection(RankBy::AssertionDeletions));
    insta::assert_snapshot!(describe_ranking(&records), @r"
    #1 score=4 Fix pop: remove the KeyError (assertions_deleted=4 deleted_assertion_lines=4 keyword_hits=2 merge=false)
    #2 score=2 Return the default from get (assertions_deleted=2 deleted_assertion_lines=2 keyword_hits=0 merge=false)
    ");
    assert_eq!(records[0].parent, repo.commits()[3].to_string());
    assert_eq!(records[0].commit, repo.commits()[4].to_string());
}

#[test]
fn top_keeps_the_best_and_ties_keep_history_order() {
    let mut repo = FixtureRepo::new();
    repo.commit(
        "Initial",
        &[
            ("pkg/a.py", Some("a = 0\n")),
            ("tests/test_a.py", Some("assert 1\nassert 2\nassert 3\n")),
        ],
    )
    .commit(
        "Older",
        &[
            ("pkg/a.py", Some("a = 1\n")),
            ("tests/test_a.py", Some("assert 2\nassert 3\n")),
        ],
    )
    .commit(
        "Newer",
        &[
            ("pkg/a.py", Some("a = 2\n")),
            ("tests/test_a.py", Some("assert 3\n")),
        ],
    );
    let history = score(&repo, &TestFileRules::default(), Merges::Include);
    let top = Selection {
        top: 1,
        ..selection(RankBy::AssertionDeletions)
    };
    let records = rank("fixture", &history, top);
    insta::assert_snapshot!(describe_ranking(&records), @"#1 score=1 Newer (assertions_deleted=1 deleted_assertion_lines=1 keyword_hits=0 merge=false)");
}

#[test]
fn a_moved_test_file_deletes_no_assertions() {
    let mut repo = history();
    repo.commit(
        "Move the cache tests",
        &[
            ("tests/test_cache.py", None),
            (
                "tests/unit/test_cache.py",
                Some("from pkg import cache\n\n\ndef test_pop():\n    cache.pop(4)\n"),
            ),
            ("pkg/cache.py", Some("def put(key):\n    return key\n")),
        ],
    );
    let history = score(&repo, &TestFileRules::default(), Merges::Include);
    let moved = &history[0];
    assert_eq!(moved.subject, "Move the cache tests");
    assert_eq!(moved.assertions_deleted, 0);
    assert_eq!(
        moved.test_files,
        ["tests/test_cache.py", "tests/unit/test_cache.py"],
        "claims live at the old path at the parent"
    );
    assert!(moved.is_candidate());
}

#[test]
fn a_moved_and_edited_test_file_counts_only_the_edit() {
    let mut repo = FixtureRepo::new();
    let body: String = (0..20)
        .map(|index| format!("def test_{index}():\n    assert f({index}) == {index}\n\n"))
        .collect();
    repo.commit(
        "Initial",
        &[
            ("pkg/f.py", Some("def f(x):\n    return x\n")),
            ("tests/test_f.py", Some(&body)),
        ],
    )
    .commit(
        "Move and retire one expectation",
        &[
            ("pkg/f.py", Some("def f(x):\n    return -x\n")),
            ("tests/test_f.py", None),
            (
                "tests/unit/test_f.py",
                Some(&body.replace("    assert f(3) == 3\n", "    assert f(3) == -3\n")),
            ),
        ],
    );
    let history = score(&repo, &TestFileRules::default(), Merges::Include);
    assert_eq!(history[0].assertions_deleted, 1);
}

#[test]
fn a_deleted_test_file_deletes_all_its_assertions() {
    let mut repo = FixtureRepo::new();
    repo.commit(
        "Initial",
        &[("a.py", Some("")), ("test_a.py", Some(TEST_CACHE_V1))],
    )
    .commit(
        "Drop the tests",
        &[("a.py", Some("x\n")), ("test_a.py", None)],
    );
    let history = score(&repo, &TestFileRules::default(), Merges::Include);
    assert_eq!(history[0].assertions_deleted, 5);
    assert_eq!(history[0].test_files, ["test_a.py"]);
}

const TEST_TALLY: &str = "\
from tally import Tally


def test_counts():
    tally = Tally(['apple', 'pear', 'apple'])
    assert tally['apple']==2
    assert tally['pear'] == 1


class TestTally(unittest.TestCase):
    def test_most_common(self):
        self.assertEqual(Tally({'apple': 1, 'pear': 3}).most_common(1), [('pear', 3)], 'most first')

    def test_empty(self):
        self.assertEqual(len(Tally()), 0)
";

/// `TEST_TALLY` as black writes it: double quotes, spaces around `==`, a long call exploded one
/// argument a line with a trailing comma.
const TEST_TALLY_BLACK: &str = "\
from tally import Tally


def test_counts():
    tally = Tally([\"apple\", \"pear\", \"apple\"])
    assert tally[\"apple\"] == 2
    assert tally[\"pear\"] == 1


class TestTally(unittest.TestCase):
    def test_most_common(self):
        self.assertEqual(
            Tally({\"apple\": 1, \"pear\": 3}).most_common(1),
            [(\"pear\", 3)],
            \"most first\",
        )

    def test_empty(self):
        self.assertEqual(len(Tally()), 0)
";

/// A history of reformats, a move and real deletions; every commit also changes the source, so each
/// is a candidate and only its score tells them apart.
fn reformat_history() -> FixtureRepo {
    let (head, tail) = TEST_TALLY_BLACK
        .split_once("    def test_most_common(self):")
        .unwrap();
    let (most_common, empty) = tail.split_once("\n    def test_empty(self):").unwrap();
    let moved = format!(
        "{head}    def test_empty(self):{empty}\n    def test_most_common(self):{most_common}"
    );
    let edited = moved.replace(
        "assert tally[\"apple\"] == 2",
        "assert tally[\"apple\"] == 3",
    );
    let unformatted_without_pear = TEST_TALLY
        .replace("assert tally['apple']==2", "assert tally['apple']==3")
        .replace("    assert tally['pear'] == 1\n", "");
    let mut repo = FixtureRepo::new();
    repo.commit(
        "Initial tally",
        &[
            ("tally/__init__.py", Some("from tally.core import Tally\n")),
            ("tally/core.py", Some("class Tally(dict):\n    pass\n")),
            ("tests/test_tally.py", Some(TEST_TALLY)),
        ],
    )
    .commit(
        "Format with black",
        &[
            ("tally/core.py", Some("class Tally(dict):\n    pass\n\n")),
            ("tests/test_tally.py", Some(TEST_TALLY_BLACK)),
        ],
    )
    .commit(
        "Move test_empty first",
        &[
            (
                "tally/core.py",
                Some("class Tally(dict):\n    \"\"\"Counts.\"\"\"\n"),
            ),
            ("tests/test_tally.py", Some(&moved)),
        ],
    )
    .commit(
        "Count one more apple",
        &[
            (
                "tally/core.py",
                Some("class Tally(dict):\n    \"\"\"Counts things.\"\"\"\n"),
            ),
            ("tests/test_tally.py", Some(&edited)),
        ],
    )
    .commit(
        "Undo black and drop the pear check",
        &[
            (
                "tally/core.py",
                Some("class Tally(dict):\n    \"\"\"Counts items.\"\"\"\n"),
            ),
            ("tests/test_tally.py", Some(&unformatted_without_pear)),
        ],
    );
    repo
}

/// One line per history commit: assertions that went away, assertion lines deleted, subject.
fn describe_deletions(history: &[CommitScore]) -> String {
    history
        .iter()
        .map(|commit| {
            format!(
                "gone={} lines={} {}",
                commit.assertions_deleted, commit.deleted_assertion_lines, commit.subject
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_reformat_or_a_move_deletes_no_assertions_but_an_edit_or_a_removal_does() {
    let repo = reformat_history();
    let history = score(&repo, &TestFileRules::default(), Merges::Include);
    insta::assert_snapshot!(describe_deletions(&history), @r"
    gone=1 lines=3 Undo black and drop the pear check
    gone=1 lines=1 Count one more apple
    gone=0 lines=1 Move test_empty first
    gone=0 lines=3 Format with black
    gone=0 lines=0 Initial tally
    ");
    let records = rank("fixture", &history, selection(RankBy::AssertionDeletions));
    insta::assert_snapshot!(describe_ranking(&records), @r"
    #1 score=1 Undo black and drop the pear check (assertions_deleted=1 deleted_assertion_lines=3 keyword_hits=1 merge=false)
    #2 score=1 Count one more apple (assertions_deleted=1 deleted_assertion_lines=1 keyword_hits=0 merge=false)
    ");
}

fn merged_history() -> FixtureRepo {
    let mut repo = FixtureRepo::new();
    repo.commit(
        "Initial",
        &[
            ("pkg/a.py", Some("a = 0\n")),
            ("tests/test_a.py", Some("assert a == 0\nassert b == 0\n")),
        ],
    )
    .branch("feature")
    .commit(
        "Change a on a branch",
        &[
            ("pkg/a.py", Some("a = 1\n")),
            ("tests/test_a.py", Some("assert b == 0\n")),
        ],
    )
    .switch("main")
    .commit("Document a", &[("README.md", Some("a\n"))])
    .merge(
        "Merge branch feature",
        "feature",
        &[
            ("pkg/a.py", Some("a = 1\n")),
            ("tests/test_a.py", Some("assert b == 0\n")),
        ],
    );
    repo
}

#[test]
fn merges_are_diffed_against_their_first_parent_when_included() {
    let repo = merged_history();
    let history = score(&repo, &TestFileRules::default(), Merges::Include);
    insta::assert_snapshot!(describe_history(&history), @r#"
     1 candidate Merge branch feature             tests=["tests/test_a.py"] sources=["pkg/a.py"]
     0 -         Document a                       tests=[] sources=[]
     0 -         Initial                          tests=[] sources=[]
    "#);
    let records = rank("fixture", &history, selection(RankBy::AssertionDeletions));
    assert_eq!(records.len(), 1);
    assert!(records[0].merge);
    assert_eq!(records[0].parent, repo.commits()[2].to_string());
}

#[test]
fn merges_are_left_out_when_skipped() {
    let repo = merged_history();
    let history = score(&repo, &TestFileRules::default(), Merges::Skip);
    let subjects: Vec<_> = history
        .iter()
        .map(|commit| commit.subject.as_str())
        .collect();
    assert_eq!(subjects, ["Document a", "Initial"]);
    assert!(rank("fixture", &history, selection(RankBy::AssertionDeletions)).is_empty());
}

#[test]
fn keyword_ranking_counts_subject_words() {
    let repo = history();
    let history = score(&repo, &TestFileRules::default(), Merges::Include);
    let records = rank("fixture", &history, selection(RankBy::Keywords));
    insta::assert_snapshot!(describe_ranking(&records), @"#1 score=2 Fix pop: remove the KeyError (assertions_deleted=4 deleted_assertion_lines=4 keyword_hits=2 merge=false)");
}

#[test]
fn custom_test_patterns_decide_what_is_a_test() {
    let mut repo = FixtureRepo::new();
    repo.commit(
        "Initial",
        &[
            ("lib/a.py", Some("a = 0\n")),
            ("checks/verify_a.py", Some("assert a == 0\n")),
            ("tests/test_a.py", Some("assert a == 0\n")),
        ],
    )
    .commit(
        "Change a",
        &[
            ("lib/a.py", Some("a = 1\n")),
            ("checks/verify_a.py", Some("assert a == 1\n")),
            ("tests/test_a.py", Some("assert a == 1\n")),
        ],
    );
    let defaults = score(&repo, &TestFileRules::default(), Merges::Include);
    assert_eq!(defaults[0].test_files, ["tests/test_a.py"]);
    assert_eq!(defaults[0].source_files, ["checks/verify_a.py", "lib/a.py"]);
    assert_eq!(defaults[0].assertions_deleted, 1);
    let custom = TestFileRules::new(&["checks/**", "tests/**"]).unwrap();
    let custom = score(&repo, &custom, Merges::Include);
    assert_eq!(
        custom[0].test_files,
        ["checks/verify_a.py", "tests/test_a.py"]
    );
    assert_eq!(custom[0].source_files, ["lib/a.py"]);
    assert_eq!(custom[0].assertions_deleted, 2);
}

#[test]
fn source_diff_shows_only_source_files() {
    let repo = history();
    let commits = repo.commits();
    let diff = source_diff(
        repo.repository(),
        commits[3],
        commits[4],
        &TestFileRules::default(),
        12_000,
    )
    .unwrap();
    assert_eq!(diff.files, ["pkg/cache.py"]);
    assert_eq!(diff.excluded, ["tests/test_cache.py"]);
    assert!(!diff.truncated);
    assert!(!diff.text.contains("test_cache"));
    assert!(!diff.text.contains("assert"));
    insta::assert_snapshot!(diff.text, @r"
    diff --git a/pkg/cache.py b/pkg/cache.py
    index 5c3eeb8..b5a0079 100644
    --- a/pkg/cache.py
    +++ b/pkg/cache.py
    @@ -1,2 +1,6 @@
     def get(key, default=None):
         return default
    +
    +
    +def pop(key):
    +    return None
    ");
}

#[test]
fn source_diff_is_truncated_with_a_marker() {
    let repo = history();
    let commits = repo.commits();
    let diff = source_diff(
        repo.repository(),
        commits[3],
        commits[4],
        &TestFileRules::default(),
        40,
    )
    .unwrap();
    assert!(diff.truncated);
    assert!(diff.text.ends_with(&format!(
        "[diff truncated: 40 of {} characters shown]\n",
        diff.total_chars
    )));
    assert_eq!(diff.text.lines().count(), 2);
}

#[test]
fn source_diff_of_a_tests_only_commit_is_empty() {
    let repo = history();
    let commits = repo.commits();
    let diff = source_diff(
        repo.repository(),
        commits[2],
        commits[3],
        &TestFileRules::default(),
        12_000,
    )
    .unwrap();
    assert_eq!(diff.text, "");
    assert_eq!(diff.excluded, ["tests/test_cache.py"]);
}

fn spec(name: &str, source: RepoSource) -> RepoSpec {
    RepoSpec {
        name: name.to_string(),
        source,
        branch: "main".to_string(),
        split: None,
        python: Vec::new(),
        test_patterns: None,
        dependencies: Vec::new(),
        merges: None,
        releases: claimflow::pipeline::Releases::Newest,
    }
}

fn pipeline(root: &Path, repos: Vec<RepoSpec>, with: serde_json::Value) -> Pipeline {
    Pipeline {
        file: "pipeline.yaml".into(),
        root: root.to_path_buf(),
        version: 1,
        name: "test".into(),
        workdir: root.join(".claimflow"),
        results: root.join("results"),
        repos,
        models: BTreeMap::new(),
        executor: Default::default(),
        steps: vec![
            StepSpec::parsed(
                "rank",
                "rank-commits",
                &[],
                with,
                &claimflow::steps::Registry::builtin(),
            )
            .unwrap(),
        ],
    }
}

/// Plans, computes and publishes the step like the engine does, without a cache.
fn run_step(pipeline: &Pipeline) -> (Vec<ItemResult>, String) {
    let store = Store::open(pipeline.workdir.join("cache")).unwrap();
    let ctx = StepContext::new(pipeline, &pipeline.steps[0], &store);
    let upstream = Upstream::default();
    let kind = RankCommits;
    let results: Vec<ItemResult> = kind
        .items(&ctx, &upstream)
        .unwrap()
        .into_iter()
        .map(|plan| {
            let output = kind.run(&ctx, &plan, &upstream).unwrap();
            let digest = store.put_json(&output).unwrap();
            ItemResult {
                plan,
                digest,
                output: output.into(),
                cached: false,
                in_place: false,
            }
        })
        .collect();
    kind.publish(&ctx, &results).unwrap();
    let published = std::fs::read_to_string(pipeline.results.join("commits.jsonl")).unwrap();
    (results, published)
}

#[test]
fn the_step_ranks_each_repository_and_publishes_in_pipeline_order() {
    let first = history();
    let second = merged_history();
    let root = tempfile::tempdir().unwrap();
    let pipeline = pipeline(
        root.path(),
        vec![
            spec("second", RepoSource::Path(second.path_buf())),
            spec("first", RepoSource::Path(first.path_buf())),
        ],
        json!({"top": 1}),
    );
    let (results, published) = run_step(&pipeline);
    let ids: Vec<_> = results.iter().map(|item| item.plan.id.as_str()).collect();
    assert_eq!(ids, ["second", "first"]);
    assert_eq!(
        results[1].plan.tools.get("repo:first"),
        Some(&first.head().to_string())
    );
    let records: Vec<CommitRecord> = published
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let lines: Vec<_> = records
        .iter()
        .map(|record| format!("{} #{} {}", record.repo, record.rank, record.subject))
        .collect();
    assert_eq!(
        lines,
        [
            "second #1 Merge branch feature",
            "first #1 Fix pop: remove the KeyError"
        ]
    );
    let mut record = serde_json::to_value(&records[1]).unwrap();
    record["commit"] = json!("[commit]");
    record["parent"] = json!("[parent]");
    insta::assert_json_snapshot!(record, @r#"
    {
      "assertions_deleted": 4,
      "by": "assertion-deletions",
      "commit": "[commit]",
      "deleted_assertion_lines": 4,
      "keyword_hits": 2,
      "merge": false,
      "parent": "[parent]",
      "rank": 1,
      "repo": "first",
      "score": 4.0,
      "source_files": [
        "pkg/cache.py"
      ],
      "subject": "Fix pop: remove the KeyError",
      "test_files": [
        "tests/test_cache.py"
      ],
      "time": 1700000240
    }
    "#);
}

#[test]
fn the_step_key_follows_the_branch_tip_and_the_params() {
    let mut repo = history();
    let root = tempfile::tempdir().unwrap();
    let plan = |repo: &FixtureRepo, with: serde_json::Value| {
        let pipeline = pipeline(
            root.path(),
            vec![spec("r", RepoSource::Path(repo.path_buf()))],
            with,
        );
        let store = Store::open(root.path().join("cache")).unwrap();
        let ctx = StepContext::new(&pipeline, &pipeline.steps[0], &store);
        RankCommits
            .items(&ctx, &Upstream::default())
            .unwrap()
            .remove(0)
    };
    let before = plan(&repo, json!({}));
    assert_eq!(before.params["by"], "assertion-deletions");
    assert_eq!(before.params["top"], 40);
    assert_eq!(before.params["min_score"], 1.0);
    assert_eq!(before.params["merges"], "include");
    assert_eq!(before.params["test_patterns"].as_array().unwrap().len(), 7);
    assert_eq!(plan(&repo, json!({})), before, "planning is deterministic");
    assert_ne!(plan(&repo, json!({"by": "keywords"})).params, before.params);
    repo.commit("More", &[("pkg/b.py", Some("b = 1\n"))]);
    let after = plan(&repo, json!({}));
    assert_ne!(after.tools, before.tools);
    assert_eq!(after.tools["repo:r"], repo.head().to_string());
}

#[test]
fn a_repository_may_name_its_own_merge_setting() {
    let repo = merged_history();
    let root = tempfile::tempdir().unwrap();
    let mut own = spec("r", RepoSource::Path(repo.path_buf()));
    own.merges = Some(claimflow::pipeline::Merges::Skip);
    let pipeline = pipeline(root.path(), vec![own], json!({"merges": "include"}));
    let (results, published) = run_step(&pipeline);
    assert_eq!(results[0].plan.params["merges"], "skip");
    assert_eq!(published, "");
}

#[test]
fn a_repository_may_name_its_own_test_patterns() {
    let repo = history();
    let root = tempfile::tempdir().unwrap();
    let mut own = spec("r", RepoSource::Path(repo.path_buf()));
    own.test_patterns = Some(vec!["nothing/**".into()]);
    let pipeline = pipeline(
        root.path(),
        vec![own],
        json!({"test_patterns": ["tests/**"]}),
    );
    let (results, published) = run_step(&pipeline);
    assert_eq!(
        results[0].plan.params["test_patterns"],
        json!(["nothing/**"])
    );
    assert_eq!(published, "", "no test files, so no candidates");
}

#[test]
fn the_loader_rejects_an_unknown_repository_name() {
    let repo = history();
    let text = format!(
        "version: 1\nname: r\nrepos:\n  - {{name: r, path: {}, branch: main}}\nsteps:\n  \
         rank: {{uses: rank-commits, with: {{repos: [nope]}}}}\n",
        repo.path().display()
    );
    let root = tempfile::tempdir().unwrap();
    let problems = claimflow::pipeline::load_str(
        &text,
        std::path::Path::new("pipeline.yaml"),
        root.path(),
        &claimflow::steps::Registry::builtin(),
    )
    .unwrap_err();
    assert!(problems.to_string().contains("`nope`"), "{problems}");
}

#[test]
fn a_url_repository_is_cloned_then_fetched() {
    let mut origin = history();
    let workdir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", origin.path().display());
    let remote = spec("remote", RepoSource::Url(url));
    let prepared = repository::prepare(&remote, workdir.path(), false).unwrap();
    assert_eq!(prepared.tip, origin.head());
    assert_eq!(prepared.path, workdir.path().join("repos").join("remote"));
    origin.commit("Later", &[("pkg/later.py", Some("x = 1\n"))]);
    assert_eq!(
        repository::locate(&remote, workdir.path()).unwrap().tip,
        prepared.tip,
        "locating never fetches"
    );
    let fetched = repository::prepare(&remote, workdir.path(), false).unwrap();
    assert_eq!(fetched.tip, origin.head());
    let history = score_history(
        &fetched.path,
        "remote",
        fetched.tip,
        &TestFileRules::default(),
        Merges::Include,
    )
    .unwrap();
    assert_eq!(history.len(), 7);
}

#[test]
fn steps_preparing_one_url_repository_at_once_share_the_clone() {
    // Two rankings of one repository plan at the same time; each prepares the clone.
    let origin = history();
    let workdir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", origin.path().display());
    let remote = spec("remote", RepoSource::Url(url));
    let tips: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|_| scope.spawn(|| repository::prepare(&remote, workdir.path(), false)))
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap().unwrap().tip)
            .collect()
    });
    assert_eq!(tips, vec![origin.head(); 4]);
    let history = score_history(
        &workdir.path().join("repos").join("remote"),
        "remote",
        origin.head(),
        &TestFileRules::default(),
        Merges::Include,
    )
    .unwrap();
    assert_eq!(history.len(), 6);
}

#[test]
fn head_is_never_used_for_a_missing_branch() {
    let repo = history();
    let mut missing = spec("r", RepoSource::Path(repo.path_buf()));
    missing.branch = "release".into();
    let error = repository::prepare(&missing, repo.path(), false).unwrap_err();
    insta::assert_snapshot!(error.to_string(), @"branch `release` not found in repository `r` (looked for refs/heads/release and refs/remotes/origin/release; HEAD is never used); set `branch:` to one it has: `main`");
}

#[test]
fn a_path_repository_is_read_in_place_without_writes() {
    let repo = history();
    let before = std::fs::read_dir(repo.path().join(".git")).unwrap().count();
    let path = spec("r", RepoSource::Path(repo.path_buf()));
    let workdir = tempfile::tempdir().unwrap();
    let prepared = repository::prepare(&path, workdir.path(), false).unwrap();
    assert_eq!(prepared.path, repo.path());
    assert_eq!(
        std::fs::read_dir(repo.path().join(".git")).unwrap().count(),
        before
    );
    assert!(!workdir.path().join("repos").exists());
}

#[test]
fn the_demo_corpus_is_materialized_and_ranked() {
    let root = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/demo");
    let pipeline = pipeline(
        root.path(),
        vec![spec("demo", RepoSource::Corpus(script))],
        json!({"min_score": 0}),
    );
    let (results, published) = run_step(&pipeline);
    assert_eq!(
        results[0].plan.tools["repo:demo"].len(),
        40,
        "the materialized tip is in the key"
    );
    let lines: Vec<String> = published
        .lines()
        .map(|line| {
            let record: CommitRecord = serde_json::from_str(line).unwrap();
            format!(
                "#{} score={} {} tests={:?}",
                record.rank, record.score, record.subject, record.test_files
            )
        })
        .collect();
    insta::assert_snapshot!(lines.join("\n"));
}

/// A project whose pipeline ranks one fixture repository, for the `claimflow` binary.
fn ranking_project(repo: &FixtureRepo) -> crate::common::project::Project {
    let project = crate::common::project::Project::new();
    project.file(
        "pipeline.yaml",
        &format!(
            "version: 1\nname: mined\nrepos:\n  - name: fixture\n    path: {}\n    branch: main\n\
             steps:\n  rank:\n    uses: rank-commits\n    with: {{top: 5}}\n",
            repo.path().display()
        ),
    );
    project
}

#[test]
fn claimflow_run_ranks_and_a_moved_branch_reranks_only_then() {
    let mut repo = history();
    let project = ranking_project(&repo);
    project.ok(&["run", "pipeline.yaml"]);
    let published = project.read("results/mined/commits.jsonl");
    let subjects: Vec<String> = published
        .lines()
        .map(|line| serde_json::from_str::<CommitRecord>(line).unwrap().subject)
        .collect();
    assert_eq!(
        subjects,
        [
            "Fix pop: remove the KeyError",
            "Return the default from get"
        ]
    );
    let again = project.ok(&["run", "pipeline.yaml"]);
    assert!(again.stderr.contains("0 computed"), "{}", again.stderr);
    repo.commit(
        "Return nothing from get",
        &[
            ("pkg/cache.py", Some("def get(key):\n    return None\n")),
            ("tests/test_put.py", Some("def test_put():\n    pass\n")),
        ],
    );
    let moved = project.ok(&["run", "pipeline.yaml"]);
    assert!(moved.stderr.contains("1 computed"), "{}", moved.stderr);
    let published = project.read("results/mined/commits.jsonl");
    assert_eq!(published.lines().count(), 3);
    assert!(published.lines().next().unwrap().contains("Fix pop"));
}

#[test]
fn offline_runs_use_the_existing_clone_and_online_runs_fetch() {
    let mut origin = history();
    let project = crate::common::project::Project::new();
    project.file(
        "pipeline.yaml",
        &format!(
            "version: 1\nname: mined\nrepos:\n  - name: remote\n    url: file://{}\n    branch: main\n\
             steps:\n  rank:\n    uses: rank-commits\n",
            origin.path().display()
        ),
    );
    let never_fetched = project.run(&["run", "pipeline.yaml", "--offline"]);
    assert_ne!(never_fetched.code, 0);
    assert!(
        never_fetched.stderr.contains("was never fetched"),
        "{}",
        never_fetched.stderr
    );
    project.ok(&["run", "pipeline.yaml"]);
    let first = project.read("results/mined/commits.jsonl");
    origin.commit(
        "Return nothing from get",
        &[
            ("pkg/cache.py", Some("def get(key):\n    return None\n")),
            ("tests/test_put.py", Some("def test_put():\n    pass\n")),
        ],
    );
    let offline = project.ok(&["run", "pipeline.yaml", "--offline"]);
    assert!(offline.stderr.contains("0 computed"), "{}", offline.stderr);
    assert_eq!(project.read("results/mined/commits.jsonl"), first);
    let online = project.ok(&["run", "pipeline.yaml"]);
    assert!(online.stderr.contains("1 computed"), "{}", online.stderr);
    assert_eq!(
        project.read("results/mined/commits.jsonl").lines().count(),
        3
    );
}

#[test]
fn fixture_commit_ids_are_stable_and_checkout_writes_the_files() {
    let repo = history();
    let again = history();
    assert_eq!(repo.commits(), again.commits());
    repo.checkout();
    assert_eq!(
        std::fs::read_to_string(repo.path().join("tests/test_put.py")).unwrap(),
        "def test_put():\n    assert put(1) is None\n"
    );
    let commit = repo.repository().find_commit(repo.head()).unwrap();
    assert_eq!(commit.author().email(), Some("test@claimflow.invalid"));
    assert_eq!(commit.time().seconds(), 1_700_000_000 + 5 * 60);
    insta::assert_snapshot!(repo.head().to_string(), @"6426f51df4eb8d9383afb6d63e09d02f1992990d");
}
