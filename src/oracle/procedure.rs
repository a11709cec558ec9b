//! The oracle's procedure for one commit: which of its claims the commit flipped.
//!
//! 1. At the parent, run the claims N times; keep those that passed N of N.
//! 2. At the child, run the child's *own* tests: every test in the claims' files and in the test
//!    modules the commit touched (by its diff, so added files are run whatever the pipeline passes
//!    in), including tests the commit added or rewrote. A test that fails runs again, up to N - 1
//!    more times: one that passes on any run is flaky, named in a discard reason but not held
//!    against the child. A test that fails every time (or a file that no longer collects) is
//!    looked up at the parent, whose version of those files runs once: the failure is the child's
//!    only when that test passed at the parent or did not exist there (a file git renamed, and a
//!    test function whose body moved under a new name, are followed; see [`super::lineage`]; a
//!    test not found so is looked up by name in the test files the commit deleted). The
//!    child's own failures mean the child is broken and excluded, because its "flips" would be
//!    artefacts; a failure already there comes from the environment or the suite. A test that
//!    fails on a name its own file never defines (a `NameError` raised in the test file, which
//!    imports nothing with `*`) is named but not counted: its code fails whatever the child's
//!    does (marshmallow a8f1024206 merged a test calling `assert_raises` into a file that no
//!    longer imported it).
//! 3. Restore the parent's version of every touched test file (modified and deleted files come back,
//!    added files go; helpers and `conftest.py` included) and run the kept claims N times: N fails →
//!    flipped, N passes → held, a mix → flaky, any unknown → discarded.
//!
//! A claim that can no longer get a label (it failed at the parent, it has no verdict, it both
//! passed and failed at the child) leaves the batch for the remaining runs: its records show the
//! runs that decided it, and a hanging test costs one timeout instead of N.
//!
//! A batch aborted by a collection error gives no verdicts. When the collection errors are in test
//! files of the batch, those files are dropped and the batch runs again, so one file that no longer
//! imports at the child (the commit removed a name it imports) costs only its own claims: they get
//! the import-error label (discarded, or flipped under `import_errors: flip`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use git2::{Oid, Repository};
use serde::{Deserialize, Serialize};

use super::classify::{BatchVerdicts, CollectionError, UnknownReason, Verdict, classify};
use super::command::RunFiles;
use super::patience::Patience;
use super::runner::{RunRequest, RunnerError};
use super::worktree::{Worktree, WorktreeError, touched_test_files};

mod gate;
use crate::mining::TestFileRules;
use crate::python::{DroppedRequirement, Environment};
use crate::records::{ClaimRecord, Label, Outcome, RunRecord, TruthRecord};

/// Failures that stop the oracle for a commit (not test outcomes: those are verdicts).
#[derive(Debug, thiserror::Error)]
pub enum ProcedureError {
    #[error("judge commit {commit}: {source}")]
    Worktree {
        commit: String,
        #[source]
        source: WorktreeError,
    },
    #[error("judge commit {commit}: {source}")]
    Runner {
        commit: String,
        #[source]
        source: RunnerError,
    },
    #[error("judge commit {commit}: `{id}` is not a commit id")]
    BadCommit { commit: String, id: String },
}

/// What to do with claims whose restored test file no longer imports at the child.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ImportErrorPolicy {
    /// Discard them (the default): no test ran, so there is no execution verdict.
    #[default]
    Discard,
    /// Count them as flipped: the commit removed or renamed what the claim relies on.
    Flip,
}

/// Why a claim was discarded; written as `cause` next to each truth record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// It failed in at least one run at the parent.
    NotPassingAtParent,
    /// Some run at the parent gave no verdict.
    UnknownAtParent,
    /// The child fails its own version of the claim's tests.
    BrokenChild,
    /// Its restored test file failed to import at the child.
    ImportError,
    /// It both passed and failed at the child.
    FlakyAtChild,
    /// Some run at the child gave no verdict.
    UnknownAtChild,
    /// No environment could be rebuilt for the commit: nothing ran.
    NoEnvironment,
}

/// A claim's label, with why it was discarded (or, under `import_errors: flip`, why it flipped).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    pub truth: TruthRecord,
    pub cause: Option<Cause>,
}

/// How the oracle runs.
#[derive(Debug, Clone)]
pub struct Settings {
    /// N: runs at the parent and at the child.
    pub runs: u32,
    /// Per pytest run.
    pub timeout: Duration,
    pub import_errors: ImportErrorPolicy,
    /// Which touched files are test files (restored at the child).
    pub test_files: TestFileRules,
}

/// The commit to judge and its claims.
pub struct CommitUnderTest<'a> {
    pub repository: &'a Repository,
    pub parent: &'a str,
    pub commit: &'a str,
    /// Test files the commit touched as the ranking saw them; joined with the diff's own.
    pub test_files: &'a [String],
    pub claims: &'a [ClaimRecord],
}

/// A slot: its checkout and its run directory.
pub struct Slot {
    pub worktree: Worktree,
    pub runs: PathBuf,
}

/// Labels every claim of one commit.
pub fn judge_commit(
    settings: &Settings,
    environment: &Environment,
    slot: &mut Slot,
    under_test: &CommitUnderTest,
) -> Result<Vec<Judgement>, ProcedureError> {
    let commit_name = under_test.commit.to_string();
    let parse = |id: &str| {
        Oid::from_str(id).map_err(|_| ProcedureError::BadCommit {
            commit: commit_name.clone(),
            id: id.to_string(),
        })
    };
    let parent = parse(under_test.parent)?;
    let commit = parse(under_test.commit)?;
    let worktree_error = |source| ProcedureError::Worktree {
        commit: commit_name.clone(),
        source,
    };
    let runner_error = |source| ProcedureError::Runner {
        commit: commit_name.clone(),
        source,
    };
    let repository = under_test.repository;
    let runs = settings.runs;
    let nodes: Vec<String> = under_test
        .claims
        .iter()
        .map(|claim| claim.node.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();

    // 1. The parent.
    check_out(slot, repository, parent).map_err(worktree_error)?;
    let at_parent = Stage::new(settings, environment, slot)
        .run(&nodes, 0..runs, settled_at_parent)
        .map_err(runner_error)?;
    let kept = passed_every_run(&nodes, &at_parent, runs);
    let left_out = left_out_note(&environment.dropped);
    let mut judgements = discarded_at_parent(under_test.claims, &at_parent, &kept, runs, &left_out);
    if kept.is_empty() {
        return Ok(ordered(under_test.claims, judgements));
    }

    // 2. The child's own tests.
    let touched = touched_test_files(repository, parent, commit, &settings.test_files)
        .map_err(worktree_error)?;
    check_out(slot, repository, commit).map_err(worktree_error)?;
    let (own_files, deleted) = child_test_files(
        under_test,
        &touched,
        &nodes,
        &at_parent,
        slot.worktree.dir(),
    );
    let gate = ChildGate {
        deleted: &deleted,
        settings,
        environment,
        repository,
        parent,
        commit,
        claims: &nodes,
        kept: &kept,
    };
    if let Some((cause, reason)) = gate.judge(slot, &own_files).map_err(|error| match error {
        GateError::Worktree(source) => worktree_error(source),
        GateError::Runner(source) => runner_error(source),
    })? {
        for claim in under_test.claims {
            if kept.contains(&claim.node) {
                let parent_runs = at_parent.records(&claim.node);
                judgements.insert(
                    claim.id.clone(),
                    discarded(claim, cause, reason.clone(), parent_runs, Vec::new()),
                );
            }
        }
        return Ok(ordered(under_test.claims, judgements));
    }

    // 3. The parent's tests at the child.
    let mut restored: BTreeSet<String> = under_test.test_files.iter().cloned().collect();
    restored.extend(touched);
    let restored: Vec<String> = restored.into_iter().collect();
    slot.worktree
        .restore(repository, parent, &restored)
        .map_err(worktree_error)?;
    let at_child = Stage::new(settings, environment, slot)
        .run(&kept, 0..runs, settled_at_child)
        .map_err(runner_error)?;
    for claim in under_test.claims {
        if kept.contains(&claim.node) {
            let judgement = label_at_child(settings, claim, &at_parent, &at_child);
            judgements.insert(claim.id.clone(), judgement);
        }
    }
    Ok(ordered(under_test.claims, judgements))
}

/// The nodes that passed every one of the `runs` runs at the parent: the claims kept.
fn passed_every_run(nodes: &[String], at_parent: &StageResult, runs: u32) -> Vec<String> {
    nodes
        .iter()
        .filter(|node| {
            let records = at_parent.records(node);
            records.iter().all(|run| run.outcome == Outcome::Passed)
                && records.len() == runs as usize
        })
        .cloned()
        .collect()
}

/// The claims not `kept` at the parent, discarded with what they did there: no verdict (with
/// `left_out`, what the environment could not install that the tests import only if they can),
/// or not passing every run.
fn discarded_at_parent(
    claims: &[ClaimRecord],
    at_parent: &StageResult,
    kept: &[String],
    runs: u32,
    left_out: &str,
) -> BTreeMap<String, Judgement> {
    let mut judgements = BTreeMap::new();
    for claim in claims.iter().filter(|claim| !kept.contains(&claim.node)) {
        let parent_runs = at_parent.records(&claim.node);
        let passed = count(&parent_runs, Outcome::Passed);
        let unknown = count(&parent_runs, Outcome::Unknown);
        let (cause, reason) = if unknown > 0 {
            (
                Cause::UnknownAtParent,
                format!(
                    "no verdict at the parent (after {} of {runs} runs): {}{left_out}",
                    parent_runs.len(),
                    details(&parent_runs, Outcome::Unknown)
                ),
            )
        } else {
            (
                Cause::NotPassingAtParent,
                format!(
                    "did not pass {runs} of {runs} runs at the parent: {passed} passed, then it failed ({})",
                    details(&parent_runs, Outcome::Failed)
                ),
            )
        };
        judgements.insert(
            claim.id.clone(),
            discarded(claim, cause, reason, parent_runs, Vec::new()),
        );
    }
    judgements
}

/// `"; the environment could not install the optional numpy, pandas"` when it left out optional
/// requirements (a test that imports one only if it can skips itself without it), else nothing.
fn left_out_note(dropped: &[DroppedRequirement]) -> String {
    let optional: Vec<&str> = dropped
        .iter()
        .filter(|requirement| requirement.source.starts_with("optional:"))
        .map(|requirement| requirement.spec.as_str())
        .collect();
    if optional.is_empty() {
        String::new()
    } else {
        format!(
            "; the environment could not install the optional {}",
            optional.join(", ")
        )
    }
}

/// The child's own test files (the claims' files and the test modules the commit touched,
/// without those that did not collect at the parent either: they fail at the child for the
/// same old reason), and the test modules the commit deleted (a test it moved to another file
/// and class is found there at the parent by its name). The slot holds the child.
fn child_test_files(
    under_test: &CommitUnderTest,
    touched: &[String],
    nodes: &[String],
    at_parent: &StageResult,
    worktree: &std::path::Path,
) -> (Vec<String>, Vec<String>) {
    let nose = crate::python::runs_under_nose(worktree);
    let declared_and_touched = || under_test.test_files.iter().chain(touched);
    let own: BTreeSet<String> = nodes
        .iter()
        .map(|node| file_of(node).to_string())
        .chain(
            declared_and_touched()
                .filter(|file| is_test_module(file, nose))
                .cloned(),
        )
        .filter(|file| !at_parent.broken_files.contains_key(file))
        .collect();
    let deleted: BTreeSet<String> = declared_and_touched()
        .filter(|file| is_test_module(file, true) && !worktree.join(file).is_file())
        .cloned()
        .collect();
    (own.into_iter().collect(), deleted.into_iter().collect())
}

/// The label of a kept claim from its runs at the child: an import error when its file no
/// longer collects there, else by its N runs.
fn label_at_child(
    settings: &Settings,
    claim: &ClaimRecord,
    at_parent: &StageResult,
    at_child: &StageResult,
) -> Judgement {
    let parent_runs = at_parent.records(&claim.node);
    let child_runs = at_child.records(&claim.node);
    match at_child.broken_files.get(file_of(&claim.node)) {
        Some(error) => import_error(settings, claim, error, parent_runs, child_runs),
        None => label(claim, settings.runs, parent_runs, child_runs),
    }
}

/// Failures of the child gate's machinery (never test outcomes).
enum GateError {
    Worktree(WorktreeError),
    Runner(RunnerError),
}

impl From<WorktreeError> for GateError {
    fn from(source: WorktreeError) -> Self {
        GateError::Worktree(source)
    }
}

impl From<RunnerError> for GateError {
    fn from(source: RunnerError) -> Self {
        GateError::Runner(source)
    }
}

/// Step 2: whether the child fails its own tests, and which failures are its own (the lookups it
/// makes are in [`gate`]).
struct ChildGate<'a> {
    settings: &'a Settings,
    environment: &'a Environment,
    repository: &'a Repository,
    parent: Oid,
    commit: Oid,
    /// Every claim's node id.
    claims: &'a [String],
    /// The claims that passed N of N at the parent.
    kept: &'a [String],
    /// Test modules of the parent the commit deleted.
    deleted: &'a [String],
}

impl ChildGate<'_> {
    /// Runs the child's own `files` (the slot holds the child) and says why the commit is
    /// discarded, if it is.
    fn judge(
        &self,
        slot: &mut Slot,
        files: &[String],
    ) -> Result<Option<(Cause, String)>, GateError> {
        let first = self.first_run(slot, files)?;
        let (mut own, mut failing, unknown) = (first.result, first.failing, first.unknown);
        let flaky = self.drop_flaky(slot, &mut failing)?;

        let inherited = self.inherited_from_merged_parents(slot, &failing, &own.broken_files)?;
        failing.retain(|node, _| !inherited.nodes.contains(node));
        own.broken_files
            .retain(|file, _| !inherited.files.contains(file));

        // A kept claim passed N of N at the parent: its failure is the child's.
        let mut new_failures: Vec<String> = failing
            .iter()
            .filter(|(node, _)| self.kept.contains(*node))
            .map(|(node, kind)| format!("{node} fails ({kind})"))
            .collect();
        failing.retain(|node, _| !self.kept.contains(node));
        // The other failures may have been there already.
        new_failures.extend(self.new_at_child(slot, &failing, &own.broken_files)?);

        // What failed but is not held against the child: flaky tests, and tests whose own file
        // lacks a name they use (they fail whatever the child's code does).
        let not_counted = note("flaky at the child, not counted", &flaky)
            + &note(
                "failing on a name their own test file never defines, not counted",
                &first.undefined_names,
            );
        if !new_failures.is_empty() {
            let inherited_note = note(
                "brought in by a merged parent, not counted",
                &inherited.notes,
            );
            return Ok(Some((
                Cause::BrokenChild,
                format!(
                    "the child is broken: its own version of {}{not_counted}{inherited_note}",
                    new_failures.join("; ")
                ),
            )));
        }
        if !unknown.is_empty() {
            return Ok(Some((
                Cause::UnknownAtChild,
                format!(
                    "the child's own tests gave no verdict: {}{not_counted}",
                    unknown.join("; ")
                ),
            )));
        }
        Ok(None)
    }
}

/// `"; {what}: a, b"`, or nothing when there is nothing to name.
fn note(what: &str, entries: &[String]) -> String {
    if entries.is_empty() {
        String::new()
    } else {
        format!("; {what}: {}", entries.join(", "))
    }
}

/// Checks `commit` out into the slot, prepared as its tests expect of an installed project (see
/// [`crate::python::prepare_checkout`]).
pub fn check_out(
    slot: &mut Slot,
    repository: &Repository,
    commit: Oid,
) -> Result<(), WorktreeError> {
    slot.worktree.checkout(repository, commit)?;
    let dir = slot.worktree.dir();
    crate::python::prepare_checkout(dir).map_err(|source| WorktreeError::Io {
        action: "prepare the checkout",
        path: dir.to_path_buf(),
        source,
    })
}

/// The label of a kept claim from its N runs at the child.
fn label(
    claim: &ClaimRecord,
    runs: u32,
    parent_runs: Vec<RunRecord>,
    child_runs: Vec<RunRecord>,
) -> Judgement {
    let passed = count(&child_runs, Outcome::Passed);
    let failed = count(&child_runs, Outcome::Failed);
    let unknown = count(&child_runs, Outcome::Unknown);
    let (label, cause, reason) = if unknown > 0 {
        (
            Label::Discarded,
            Some(Cause::UnknownAtChild),
            Some(format!(
                "no verdict at the child (after {} of {runs} runs): {}",
                child_runs.len(),
                details(&child_runs, Outcome::Unknown)
            )),
        )
    } else if passed > 0 && failed > 0 {
        (
            Label::Discarded,
            Some(Cause::FlakyAtChild),
            Some(format!(
                "flaky at the child: {passed} passed, {failed} failed ({})",
                details(&child_runs, Outcome::Failed)
            )),
        )
    } else if failed == runs as usize {
        (
            Label::Flipped,
            None,
            Some(format!(
                "failed {runs} of {runs} runs at the child: {}",
                details(&child_runs, Outcome::Failed)
            )),
        )
    } else if passed == runs as usize {
        (Label::Held, None, None)
    } else {
        (
            Label::Discarded,
            Some(Cause::UnknownAtChild),
            Some(format!(
                "no verdict at the child: {} of {runs} runs recorded",
                child_runs.len()
            )),
        )
    };
    Judgement {
        truth: TruthRecord {
            claim: claim.id.clone(),
            label,
            reason,
            parent_runs,
            child_runs,
        },
        cause,
    }
}

/// The special label of a claim whose restored test file no longer imports at the child.
fn import_error(
    settings: &Settings,
    claim: &ClaimRecord,
    error: &CollectionError,
    parent_runs: Vec<RunRecord>,
    child_runs: Vec<RunRecord>,
) -> Judgement {
    let missing = error
        .missing_name()
        .map(|name| format!(" (missing name `{name}`)"))
        .unwrap_or_default();
    let reason = format!(
        "import error: the parent's {} failed to import at the child{missing}: {}",
        error.node, error.message
    );
    let label = match settings.import_errors {
        ImportErrorPolicy::Discard => Label::Discarded,
        ImportErrorPolicy::Flip => Label::Flipped,
    };
    Judgement {
        truth: TruthRecord {
            claim: claim.id.clone(),
            label,
            reason: Some(reason),
            parent_runs,
            child_runs,
        },
        cause: Some(Cause::ImportError),
    }
}

fn discarded(
    claim: &ClaimRecord,
    cause: Cause,
    reason: String,
    parent_runs: Vec<RunRecord>,
    child_runs: Vec<RunRecord>,
) -> Judgement {
    Judgement {
        truth: TruthRecord {
            claim: claim.id.clone(),
            label: Label::Discarded,
            reason: Some(reason),
            parent_runs,
            child_runs,
        },
        cause: Some(cause),
    }
}

/// The judgements in the claims' order.
fn ordered(claims: &[ClaimRecord], mut judgements: BTreeMap<String, Judgement>) -> Vec<Judgement> {
    claims
        .iter()
        .filter_map(|claim| judgements.remove(&claim.id))
        .collect()
}

fn count(runs: &[RunRecord], outcome: Outcome) -> usize {
    runs.iter().filter(|run| run.outcome == outcome).count()
}

/// The distinct details of the runs with `outcome`, joined.
fn details(runs: &[RunRecord], outcome: Outcome) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for run in runs.iter().filter(|run| run.outcome == outcome) {
        let detail = run.detail.as_deref().unwrap_or("no detail");
        if !seen.contains(&detail) {
            seen.push(detail);
        }
    }
    seen.join("; ")
}

/// The test file of a node id.
fn file_of(node: &str) -> &str {
    node.split("::").next().unwrap_or(node)
}

/// Repeated runs of one set of node ids in the slot's current checkout.
struct Stage<'a> {
    settings: &'a Settings,
    environment: &'a Environment,
    slot: &'a Slot,
    /// The time limits of its runs.
    patience: Patience,
}

/// The verdicts of every run of a stage, and the files dropped for collection errors.
struct StageResult {
    verdicts: BTreeMap<String, Vec<Verdict>>,
    broken_files: BTreeMap<String, CollectionError>,
}

impl StageResult {
    /// A node's run records; the claims of a dropped file get one unknown run naming the error.
    fn records(&self, node: &str) -> Vec<RunRecord> {
        if let Some(error) = self.broken_files.get(file_of(node)) {
            return vec![RunRecord {
                run: 0,
                outcome: Outcome::Unknown,
                detail: Some(format!("collection error: {}", error.message)),
            }];
        }
        self.verdicts
            .get(node)
            .map(|verdicts| {
                verdicts
                    .iter()
                    .zip(0..)
                    .map(|(verdict, run)| verdict.run_record(run))
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl<'a> Stage<'a> {
    fn new(settings: &'a Settings, environment: &'a Environment, slot: &'a Slot) -> Self {
        Stage {
            settings,
            environment,
            slot,
            patience: Patience::default(),
        }
    }

    /// Runs `nodes` once per run index of `runs` (the index seeds the hash). A node is dropped from later runs once `settled` says its
    /// runs so far already decide it cannot get a label (it failed at the parent, it has no verdict,
    /// it both passed and failed), so a hanging test costs one timeout, not N. When the first run
    /// is aborted by collection errors that all lie in files of the batch, those files are dropped
    /// and the run is repeated without them.
    fn run(
        &self,
        nodes: &[String],
        runs: std::ops::Range<u32>,
        settled: fn(&[Verdict]) -> bool,
    ) -> Result<StageResult, RunnerError> {
        let worktree = self.slot.worktree.dir();
        let mut result = StageResult {
            verdicts: BTreeMap::new(),
            broken_files: BTreeMap::new(),
        };
        let mut run = runs.start;
        while run < runs.end {
            let selected: Vec<String> = nodes
                .iter()
                .filter(|node| !result.broken_files.contains_key(file_of(node)))
                .filter(|node| {
                    result
                        .verdicts
                        .get(*node)
                        .is_none_or(|verdicts| !settled(verdicts))
                })
                .cloned()
                .collect();
            if selected.is_empty() {
                break;
            }
            let files: Vec<String> = selected
                .iter()
                .map(|node| file_of(node).to_string())
                .collect::<BTreeSet<_>>()
                .into_iter()
                // A file missing from the checkout would make pytest stop with a usage error; its
                // nodes simply get no record.
                .filter(|file| worktree.join(file).is_file())
                .collect();
            let batch = if files.is_empty() {
                // Nothing to run: no test of the batch exists in this checkout.
                BatchVerdicts {
                    verdicts: selected
                        .iter()
                        .map(|node| (node.clone(), Verdict::Unknown(UnknownReason::MissingRecord)))
                        .collect(),
                    collection_errors: Vec::new(),
                    aborted: false,
                }
            } else {
                let report = self.patience.run(&RunRequest {
                    environment: self.environment,
                    worktree,
                    files: &RunFiles::new(self.slot.runs.join("run")),
                    test_files: &files,
                    nodes: &selected,
                    run,
                    timeout: self.settings.timeout,
                })?;
                let mut batch = classify(&selected, &report.outcome, &report.records);
                // Messages name files by absolute path; the slot's path must not reach results.
                let prefix = format!("{}/", worktree.display());
                for error in &mut batch.collection_errors {
                    error.message = error.message.replace(&prefix, "");
                }
                batch
            };
            let in_batch = |error: &CollectionError| files.contains(&error.node);
            if run == runs.start
                && batch.aborted
                && !batch.collection_errors.is_empty()
                && batch.collection_errors.iter().all(in_batch)
            {
                for error in batch.collection_errors {
                    result.broken_files.insert(error.node.clone(), error);
                }
                continue;
            }
            for (node, verdict) in batch.verdicts {
                result.verdicts.entry(node).or_default().push(verdict);
            }
            run += 1;
        }
        Ok(result)
    }
}

impl Stage<'_> {
    /// Runs every test in `files` (those present in the checkout) once; the plugin reports which
    /// nodes pytest selected, and those are classified. Files whose collection aborts the batch are
    /// dropped and the rest run again, as in [`Stage::run`]. A batch that selected nothing and
    /// gave no verdict is recorded under the pseudo-node `<files>`.
    fn run_files_once(&self, files: &[String]) -> Result<StageResult, RunnerError> {
        let worktree = self.slot.worktree.dir();
        let mut result = StageResult {
            verdicts: BTreeMap::new(),
            broken_files: BTreeMap::new(),
        };
        loop {
            let present: Vec<String> = files
                .iter()
                .filter(|file| worktree.join(file).is_file())
                .filter(|file| !result.broken_files.contains_key(*file))
                .cloned()
                .collect();
            if present.is_empty() {
                return Ok(result);
            }
            let report = self.patience.run(&RunRequest {
                environment: self.environment,
                worktree,
                files: &RunFiles::new(self.slot.runs.join("run")),
                test_files: &present,
                // A file path selects every test in that file.
                nodes: &present,
                run: 0,
                timeout: self.settings.timeout,
            })?;
            let selected = selected_nodes(&report.records);
            let mut batch = classify(&selected, &report.outcome, &report.records);
            let prefix = format!("{}/", worktree.display());
            for error in &mut batch.collection_errors {
                error.message = error.message.replace(&prefix, "");
            }
            let new_broken: Vec<CollectionError> = batch
                .collection_errors
                .iter()
                .filter(|error| present.contains(&error.node))
                .cloned()
                .collect();
            if batch.aborted
                && !new_broken.is_empty()
                && new_broken.len() == batch.collection_errors.len()
            {
                for error in new_broken {
                    result.broken_files.insert(error.node.clone(), error);
                }
                continue;
            }
            // Exit code 5 is pytest's "no tests collected": the files hold no test, nothing failed.
            let nothing_collected = matches!(report.outcome, crate::process::Outcome::Exited(5));
            if selected.is_empty() && batch.aborted && !nothing_collected {
                let reason = match &report.outcome {
                    crate::process::Outcome::TimedOut => UnknownReason::Timeout,
                    other => UnknownReason::Crash(format!("pytest selected nothing: {other:?}")),
                };
                result
                    .verdicts
                    .insert("<files>".to_string(), vec![Verdict::Unknown(reason)]);
            }
            for (node, verdict) in batch.verdicts {
                result.verdicts.entry(node).or_default().push(verdict);
            }
            return Ok(result);
        }
    }
}

/// The node ids the plugin reported as selected.
fn selected_nodes(records: &str) -> Vec<String> {
    #[derive(Deserialize)]
    struct Selected {
        event: String,
        #[serde(default)]
        nodes: Vec<String>,
    }
    records
        .lines()
        .filter_map(|line| serde_json::from_str::<Selected>(line).ok())
        .filter(|record| record.event == "selected")
        .flat_map(|record| record.nodes)
        .collect()
}

/// True for a file pytest collects as a test module by default (`test_*.py`, `*_test.py`), or,
/// in a project that runs its tests with nose, one nose collects (`arrow_tests.py`).
fn is_test_module(path: &str, nose: bool) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.ends_with(".py")
        && (name.starts_with("test_")
            || name.ends_with("_test.py")
            || (nose && crate::python::is_nose_test_module(name)))
}

/// At the parent a claim is out once it did not pass.
fn settled_at_parent(verdicts: &[Verdict]) -> bool {
    verdicts.iter().any(|verdict| *verdict != Verdict::Passed)
}

/// A re-run of the child gate's failures is done with a test once it passed: it is flaky.
fn passed_once(verdicts: &[Verdict]) -> bool {
    verdicts.contains(&Verdict::Passed)
}

/// At the child a claim is out once it has no verdict or has both passed and failed.
fn settled_at_child(verdicts: &[Verdict]) -> bool {
    let unknown = verdicts
        .iter()
        .any(|verdict| matches!(verdict, Verdict::Unknown(_)));
    let passed = verdicts.contains(&Verdict::Passed);
    let failed = verdicts
        .iter()
        .any(|verdict| matches!(verdict, Verdict::Failed(_)));
    unknown || (passed && failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dropped(spec: &str, source: &str) -> DroppedRequirement {
        DroppedRequirement {
            spec: spec.into(),
            source: source.into(),
            reason: "no matching distribution".into(),
        }
    }

    #[test]
    fn a_discard_names_the_optional_requirements_the_environment_left_out() {
        assert_eq!(left_out_note(&[]), "");
        // A declared requirement left out is the environment's description's business, not a
        // reason a test skipped.
        assert_eq!(left_out_note(&[dropped("blist", "setup.py")]), "");
        assert_eq!(
            left_out_note(&[
                dropped("numpy", "optional: tox.ini [testenv:py38-extra]"),
                dropped("blist", "setup.py"),
                dropped("pandas", "optional: setup.py extras"),
            ]),
            "; the environment could not install the optional numpy, pandas"
        );
    }
}
