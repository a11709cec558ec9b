//! The result records users read: one JSON object per line in `results/<name>/*.jsonl`.
//!
//! The field names here are a user-facing contract (see the README): fields may be added, never
//! renamed. Step kinds pass these records between each other through the cache as JSON values.

use serde::{Deserialize, Serialize};

/// A candidate commit, from `rank-commits` (`commits.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommitRecord {
    /// The `repos:` entry's name.
    pub repo: String,
    /// The child commit id (t+1).
    pub commit: String,
    /// The parent commit id (t): the first parent.
    pub parent: String,
    /// The ranking score (assertion lines deleted from test files, or keyword hits).
    pub score: f64,
    /// The commit's subject line.
    pub subject: String,
    /// Test files the commit touched (paths at the child; deleted files at the parent; both paths of
    /// a renamed file).
    pub test_files: Vec<String>,
    /// Non-test Python files the commit touched.
    pub source_files: Vec<String>,
    /// What the score counts: `assertion-deletions` or `keywords`.
    #[serde(default)]
    pub by: String,
    /// 1-based position in its repository's ranking.
    #[serde(default)]
    pub rank: u32,
    /// Assertion lines deleted from test files and not added back, reformatted or moved, to the same
    /// file by the same commit (whatever `by` is; the `assertion-deletions` score).
    #[serde(default)]
    pub assertions_deleted: u32,
    /// Assertion lines deleted from test files, reformatted and moved ones included (whatever `by`
    /// is): the difference from `assertions_deleted` is what a reformat or move touched.
    #[serde(default)]
    pub deleted_assertion_lines: u32,
    /// Ranking keywords in the subject (whatever `by` is).
    #[serde(default)]
    pub keyword_hits: u32,
    /// True for a merge commit (diffed against its first parent).
    #[serde(default)]
    pub merge: bool,
    /// Committer time, seconds since the epoch.
    #[serde(default)]
    pub time: i64,
}

/// A claim: a test at the parent commit with its assertions (`claims.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimRecord {
    /// Stable content id: repository, parent commit and node id.
    pub id: String,
    pub repo: String,
    /// The commit at which the claim was true (t).
    pub parent: String,
    /// The commit that may have falsified it (t+1).
    pub commit: String,
    /// The pytest node id at the parent.
    pub node: String,
    /// The test's source text, resolved through base classes when inherited.
    pub source: String,
    /// The assertion statements in the test; never empty.
    pub assertions: Vec<String>,
    /// The fixtures the test uses, by registered name.
    pub fixtures: Vec<String>,
}

/// The outcome of one run of one test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Passed,
    Failed,
    /// No verdict: a collection error, a missing record, a timeout, a crash. Never a failure.
    Unknown,
}

/// One run of one test, kept so every label can be audited (`truth.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The run index (0-based); `PYTHONHASHSEED` is derived from it.
    pub run: u32,
    pub outcome: Outcome,
    /// How it failed or why it is unknown: `assertion`, an exception class, `setup error`,
    /// `collection error`, `timeout`, ….
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The oracle's label for a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Label {
    Flipped,
    Held,
    Discarded,
}

/// The oracle's verdict on a claim (`truth.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TruthRecord {
    /// The claim id.
    pub claim: String,
    pub label: Label,
    /// Why it was discarded, or how it failed when flipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub parent_runs: Vec<RunRecord>,
    pub child_runs: Vec<RunRecord>,
}

/// An arm's verdict on a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Flipped,
    Held,
    /// The arm gave no verdict. Never read as either of the others.
    None,
}

/// One arm's prediction for one claim (`predictions/<step>.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PredictionRecord {
    pub claim: String,
    pub verdict: Verdict,
    /// Why the arm decided so: the touched module, the changed symbol, the model's raw answer.
    pub evidence: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_in: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_out: Option<u64>,
    /// Cost in the pipeline's price unit (dollars by convention).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

/// The stable id of a claim: `<repo>@<parent commit>::<node id>`.
pub fn claim_id(repo: &str, parent: &str, node: &str) -> String {
    format!("{repo}@{parent}::{node}")
}

/// A claim as `mine-claims` writes it to `claims.jsonl`: every [`ClaimRecord`] field, plus where
/// the test came from. Readers that want the contract decode lines as [`ClaimRecord`] (unknown
/// fields are ignored); [`ClaimRecord`] itself is left as it is so code building one stays valid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MinedClaim {
    pub id: String,
    pub repo: String,
    pub parent: String,
    pub commit: String,
    pub node: String,
    /// The test's source text, resolved through the class's MRO when inherited.
    pub source: String,
    /// The assertion statements in the test; never empty.
    pub assertions: Vec<String>,
    /// The fixtures the test uses, by registered name (`@pytest.fixture(name=...)` included).
    pub fixtures: Vec<String>,
    /// Registered fixture name -> the function that defines it.
    pub fixture_functions: std::collections::BTreeMap<String, String>,
    /// The test module (relative path at the parent).
    pub file: String,
    /// The class the test was collected in, if any.
    pub class: Option<String>,
    /// The test function's name, without parameters.
    pub function: String,
    /// The class that defines the method (a mixin for an inherited test), if any.
    pub owner: Option<String>,
    /// The file the source text comes from (a helper module for an inherited test).
    pub source_file: Option<String>,
    /// Why the test is the commit's: collected from a touched test module, or defined in a
    /// touched file and inherited into an untouched one (`file` is where pytest collects it,
    /// `source_file` where it is defined).
    #[serde(default)]
    pub origin: ClaimOrigin,
    /// The test files the commit touched (as in its `rank-commits` record: paths at the child,
    /// added files included; deleted files at the parent): the oracle runs the child's own
    /// versions of them, whatever else its step needs.
    #[serde(default)]
    pub test_files: Vec<String>,
    /// The interpreter the claim was collected under (`3.11.7`) and its pytest (`8.3.4`).
    pub interpreter: String,
    pub pytest: String,
}

/// The interpreter and pytest a claim was mined (and so labelled) under, as its `claims.jsonl` line
/// records them: a tool run on the claim again runs there. Claims from elsewhere may not say.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct MinedUnder {
    /// `2.7.18`, `3.11.7`.
    pub interpreter: String,
    /// The installed pytest, `3.5.1`.
    pub pytest: String,
}

impl MinedUnder {
    /// The interpreter and pytest a claim record names, when it names both.
    pub fn of_record(record: &serde_json::Value) -> Option<Self> {
        serde_json::from_value::<MinedUnder>(record.clone())
            .ok()
            .filter(|mined| !mined.interpreter.is_empty() && !mined.pytest.is_empty())
    }
}

/// Why a collected test is one of its commit's claims.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClaimOrigin {
    /// It is collected from a test module the commit touched.
    #[default]
    TouchedModule,
    /// Its function is defined in a file the commit touched (a mixin in a helper module) and it is
    /// collected from a test module the commit did not touch, through inheritance.
    InheritedFromTouchedFile,
}

impl MinedClaim {
    /// The contract fields.
    pub fn to_claim(&self) -> ClaimRecord {
        ClaimRecord {
            id: self.id.clone(),
            repo: self.repo.clone(),
            parent: self.parent.clone(),
            commit: self.commit.clone(),
            node: self.node.clone(),
            source: self.source.clone(),
            assertions: self.assertions.clone(),
            fixtures: self.fixtures.clone(),
        }
    }
}

/// A candidate commit `mine-claims` could not mine, and why (`excluded.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExclusionRecord {
    pub repo: String,
    pub commit: String,
    pub parent: String,
    pub kind: ExclusionKind,
    /// What went wrong, for a person.
    pub reason: String,
    /// Each interpreter tried and why it failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<AttemptRecord>,
}

/// Why a candidate commit gave no claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExclusionKind {
    /// No installed interpreter is allowed (declared, or by `python_requires`).
    NoInterpreter,
    /// None of the touched test files is a test module at the parent.
    NoTestModules,
    /// pytest could not collect the test modules under any allowed interpreter.
    Collection,
    /// pytest collected tests, none with an assertion statement.
    NoClaims,
    /// No environment could be built under any interpreter tried (a requirement that will not
    /// install, and cannot be dropped): pytest never ran.
    Environment,
}

/// One interpreter tried for a commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptRecord {
    pub interpreter: String,
    pub error: String,
}
