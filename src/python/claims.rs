//! From what pytest collected to claims: one claim per test node (a parametrized test gives one per
//! parameter set) in the commit's touched test modules, with its resolved source, its assertion
//! statements and its fixtures. A test collected from an untouched module that imports a touched
//! file is the commit's too when its function is defined in a touched file (a mixin's test,
//! inherited); the other tests of such a module are not looked at. A test without any assertion
//! statement is not a claim: it is counted in the commit's summary, never written.

use serde::{Deserialize, Serialize};

use super::assertions::assertion_statements;
use super::collect::Collection;
use crate::records::{AttemptRecord, ClaimOrigin, CommitRecord, MinedClaim, claim_id};

/// What mining one commit produced besides its claims.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimSummary {
    pub repo: String,
    pub commit: String,
    pub parent: String,
    pub interpreter: String,
    pub pytest: String,
    /// The touched test modules collected.
    pub files: Vec<String>,
    /// Untouched test modules collected because they import a touched file, for the tests they
    /// inherit from it.
    #[serde(default)]
    pub importers: Vec<String>,
    /// Tests pytest collected from the touched modules, and inherited tests defined in a touched
    /// file.
    pub collected: usize,
    pub claims: usize,
    /// Tests with no assertion statement (not claims).
    pub without_assertions: Vec<String>,
    /// Tests whose source Python could not give (not claims).
    pub without_source: Vec<String>,
    /// Claims left out by `limit_claims_per_commit`.
    pub over_limit: usize,
    /// Discovered requirements left out of the environment because they would not install.
    pub dropped_requirements: Vec<String>,
    /// Tests whose assertions came from the interpreter's parser (source that is not Python 3).
    pub assertions_from_interpreter: usize,
    /// Interpreters tried before the one that collected, and why each failed.
    #[serde(default)]
    pub attempts: Vec<AttemptRecord>,
    /// Touched test modules left out because they could not import a module (an optional
    /// dependency the environment lacks), each with pytest's message; the others still give claims.
    #[serde(default)]
    pub left_out: Vec<AttemptRecord>,
}

/// A commit's claims and its summary.
#[derive(Debug, Clone, PartialEq)]
pub struct CommitClaims {
    pub claims: Vec<MinedClaim>,
    pub summary: ClaimSummary,
}

/// Builds the claims of `commit` from `collection` (taken at its parent), keeping tests of `files`
/// that are the commit's (see the module docs), in collection order, at most `limit` of them.
pub fn claims_from_collection(
    commit: &CommitRecord,
    files: &[String],
    collection: &Collection,
    limit: Option<usize>,
) -> CommitClaims {
    let mut summary = ClaimSummary {
        repo: commit.repo.clone(),
        commit: commit.commit.clone(),
        parent: commit.parent.clone(),
        interpreter: collection.python.clone(),
        pytest: collection.pytest.clone(),
        ..ClaimSummary::default()
    };
    let touched = |file: &str| commit.test_files.iter().any(|touched| touched == file);
    (summary.importers, summary.files) = files.iter().cloned().partition(|file| !touched(file));
    let mut claims = Vec::new();
    for test in &collection.tests {
        if !test.test_module || !files.contains(&test.file) {
            continue;
        }
        let origin = if touched(&test.file) {
            ClaimOrigin::TouchedModule
        } else if test.source_file.as_deref().is_some_and(touched) {
            ClaimOrigin::InheritedFromTouchedFile
        } else {
            continue;
        };
        summary.collected += 1;
        let Some(source) = test
            .source
            .clone()
            .filter(|source| !source.trim().is_empty())
        else {
            summary.without_source.push(test.node.clone());
            continue;
        };
        let assertions = match assertion_statements(&source) {
            Some(assertions) => assertions,
            None => {
                summary.assertions_from_interpreter += 1;
                test.assertions.clone()
            }
        };
        if assertions.is_empty() {
            summary.without_assertions.push(test.node.clone());
            continue;
        }
        if limit.is_some_and(|limit| claims.len() >= limit) {
            summary.over_limit += 1;
            continue;
        }
        let function = test.function.clone().unwrap_or_else(|| {
            test.node
                .rsplit("::")
                .next()
                .unwrap_or_default()
                .split('[')
                .next()
                .unwrap_or_default()
                .to_string()
        });
        claims.push(MinedClaim {
            id: claim_id(&commit.repo, &commit.parent, &test.node),
            repo: commit.repo.clone(),
            parent: commit.parent.clone(),
            commit: commit.commit.clone(),
            node: test.node.clone(),
            source,
            assertions,
            fixtures: test.fixtures.clone(),
            fixture_functions: test.fixture_functions.clone(),
            file: test.file.clone(),
            class: test.class.clone(),
            function,
            owner: test.owner.clone(),
            source_file: test.source_file.clone(),
            origin,
            test_files: commit.test_files.clone(),
            interpreter: collection.python.clone(),
            pytest: collection.pytest.clone(),
        });
    }
    summary.claims = claims.len();
    CommitClaims { claims, summary }
}

/// The invariants every written claim keeps: an id made of its repository, parent and node, a
/// source, and at least one assertion statement (each non-empty).
pub fn check_claim(claim: &MinedClaim) -> Result<(), String> {
    if claim.id != claim_id(&claim.repo, &claim.parent, &claim.node) {
        return Err(format!(
            "claim `{}` has an id that is not its repository, parent and node",
            claim.id
        ));
    }
    if claim.source.trim().is_empty() {
        return Err(format!("claim `{}` has no source text", claim.id));
    }
    if claim.assertions.is_empty()
        || claim
            .assertions
            .iter()
            .any(|assertion| assertion.trim().is_empty())
    {
        return Err(format!("claim `{}` has no assertion statements", claim.id));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::collect::CollectedTest;
    use super::*;

    fn test(node: &str, source: Option<&str>, plugin_assertions: &[&str]) -> CollectedTest {
        CollectedTest {
            node: node.into(),
            file: node.split("::").next().unwrap().into(),
            class: None,
            function: Some(
                node.rsplit("::")
                    .next()
                    .unwrap()
                    .split('[')
                    .next()
                    .unwrap()
                    .into(),
            ),
            owner: None,
            source: source.map(str::to_string),
            source_file: None,
            source_line: Some(1),
            assertions: plugin_assertions.iter().map(|a| a.to_string()).collect(),
            fixtures: vec![],
            fixture_functions: BTreeMap::new(),
            test_module: true,
            problem: None,
        }
    }

    fn commit() -> CommitRecord {
        serde_json::from_value(serde_json::json!({
            "repo": "demo", "commit": "c1", "parent": "p0", "score": 1.0, "subject": "s",
            "test_files": ["tests/test_a.py", "tests/helpers.py"], "source_files": []
        }))
        .unwrap()
    }

    #[test]
    fn claims_need_assertions_and_respect_the_limit() {
        let collection = Collection {
            tests: vec![
                test(
                    "tests/test_a.py::test_one[1]",
                    Some("def test_one(x):\n    assert x\n"),
                    &[],
                ),
                test(
                    "tests/test_a.py::test_one[2]",
                    Some("def test_one(x):\n    assert x\n"),
                    &[],
                ),
                test(
                    "tests/test_a.py::test_smoke",
                    Some("def test_smoke():\n    run()\n"),
                    &[],
                ),
                test(
                    "tests/test_a.py::test_py2",
                    Some("def test_py2():\n    print 'x'\n    assert 1\n"),
                    &["assert 1"],
                ),
                test("tests/test_a.py::test_lost", None, &[]),
                test(
                    "tests/test_other.py::test_elsewhere",
                    Some("def test_elsewhere():\n    assert 1\n"),
                    &[],
                ),
            ],
            pytest: "8.3.4".into(),
            python: "3.11.7".into(),
        };
        let files = vec!["tests/test_a.py".to_string()];
        let mined = claims_from_collection(&commit(), &files, &collection, Some(2));
        let nodes: Vec<&str> = mined
            .claims
            .iter()
            .map(|claim| claim.node.as_str())
            .collect();
        assert_eq!(
            nodes,
            [
                "tests/test_a.py::test_one[1]",
                "tests/test_a.py::test_one[2]"
            ]
        );
        assert_eq!(mined.claims[0].id, "demo@p0::tests/test_a.py::test_one[1]");
        assert_eq!(mined.claims[0].function, "test_one");
        assert_eq!(mined.summary.collected, 5);
        assert_eq!(
            mined.summary.without_assertions,
            ["tests/test_a.py::test_smoke"]
        );
        assert_eq!(mined.summary.without_source, ["tests/test_a.py::test_lost"]);
        assert_eq!(
            mined.summary.over_limit, 1,
            "the Python 2 test is over the limit"
        );
        assert_eq!(mined.summary.assertions_from_interpreter, 1);
        for claim in &mined.claims {
            check_claim(claim).unwrap();
        }
        let unlimited = claims_from_collection(&commit(), &files, &collection, None);
        assert_eq!(unlimited.claims[2].assertions, ["assert 1"]);
    }

    #[test]
    fn an_untouched_module_gives_only_the_tests_defined_in_touched_files() {
        let mut inherited = test(
            "tests/test_b.py::TestB::test_shared",
            Some("def test_shared(self):\n    assert self.value\n"),
            &[],
        );
        inherited.class = Some("TestB".into());
        inherited.owner = Some("SharedTests".into());
        inherited.source_file = Some("tests/helpers.py".into());
        let mut own = test(
            "tests/test_b.py::TestB::test_own",
            Some("def test_own(self):\n    assert 1\n"),
            &[],
        );
        own.source_file = Some("tests/test_b.py".into());
        let mut touched = test(
            "tests/test_a.py::test_one",
            Some("def test_one():\n    assert 1\n"),
            &[],
        );
        touched.source_file = Some("tests/test_a.py".into());
        let collection = Collection {
            tests: vec![touched, inherited, own],
            pytest: "8.3.4".into(),
            python: "3.11.7".into(),
        };
        let files = vec!["tests/test_a.py".to_string(), "tests/test_b.py".to_string()];
        let mined = claims_from_collection(&commit(), &files, &collection, None);
        let claims: Vec<(&str, ClaimOrigin, &str, Option<&str>)> = mined
            .claims
            .iter()
            .map(|claim| {
                (
                    claim.node.as_str(),
                    claim.origin,
                    claim.file.as_str(),
                    claim.source_file.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            claims,
            [
                (
                    "tests/test_a.py::test_one",
                    ClaimOrigin::TouchedModule,
                    "tests/test_a.py",
                    Some("tests/test_a.py")
                ),
                (
                    "tests/test_b.py::TestB::test_shared",
                    ClaimOrigin::InheritedFromTouchedFile,
                    "tests/test_b.py",
                    Some("tests/helpers.py")
                ),
            ]
        );
        assert_eq!(mined.summary.files, ["tests/test_a.py"]);
        assert_eq!(mined.summary.importers, ["tests/test_b.py"]);
        assert_eq!(mined.summary.collected, 2, "test_own is not the commit's");
    }

    #[test]
    fn the_invariant_rejects_claims_without_assertions() {
        let collection = Collection {
            tests: vec![test(
                "tests/test_a.py::test_one",
                Some("def test_one():\n    assert 1\n"),
                &[],
            )],
            pytest: "8.3.4".into(),
            python: "3.11.7".into(),
        };
        let mut claim =
            claims_from_collection(&commit(), &["tests/test_a.py".into()], &collection, None)
                .claims[0]
                .clone();
        claim.assertions.clear();
        assert_eq!(
            check_claim(&claim).unwrap_err(),
            "claim `demo@p0::tests/test_a.py::test_one` has no assertion statements"
        );
    }
}
