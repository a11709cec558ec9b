//! Step 2 of the procedure: whether the child fails its own tests, and which failures are its own.
//!
//! The child's own test files run once; a failure runs again up to N - 1 times and is flaky (only
//! named) if it passes once. What fails every time is looked up elsewhere, one run of the files as
//! they are there, followed through renames ([`Lineage`]):
//! - at a merge's other parents: a failure a merged branch already had came in with it (marshmallow
//!   8237781990 merged a branch whose new `tests/test_serializer.py` failed four tests at the
//!   branch's tip, and 183 claims were discarded for them);
//! - at the first parent, the one the claims were mined at: the failure is the child's only when
//!   the test passed there or did not exist there; a file that does not collect is the child's
//!   unless it did not collect there either.

use std::collections::{BTreeMap, BTreeSet};

use git2::Oid;

use super::{ChildGate, GateError, Slot, Stage, StageResult, check_out, file_of, passed_once};
use crate::oracle::classify::{CollectionError, FailureKind, UnknownReason, Verdict};
use crate::oracle::lineage::Lineage;
use crate::oracle::worktree::WorktreeError;

/// What the child's own files did on their first run.
pub(super) struct FirstRun {
    /// Every node's verdicts, and the files that did not collect.
    pub result: StageResult,
    /// Failing nodes (not claims that already failed at the parent), with the kind of failure.
    pub failing: BTreeMap<String, String>,
    /// Nodes that gave no verdict, with the reason.
    pub unknown: Vec<String>,
    /// Nodes that failed on a name their own test file never defines, with the error: the
    /// test's code is broken whatever the child's is, so they are named, not counted.
    pub undefined_names: Vec<String>,
}

/// What the child's failures owe to its other parents.
#[derive(Debug, Default)]
pub(super) struct Inherited {
    /// Failing nodes (as at the child) that fail the same way at another parent.
    pub nodes: BTreeSet<String>,
    /// Files (as at the child) that do not collect at another parent either.
    pub files: BTreeSet<String>,
    /// One entry per inherited failure, naming the parent it came from.
    pub notes: Vec<String>,
}

impl ChildGate<'_> {
    /// Runs the child's own `files` once and sorts what failed and what gave no verdict.
    pub(super) fn first_run(&self, slot: &Slot, files: &[String]) -> Result<FirstRun, GateError> {
        let result = Stage::new(self.settings, self.environment, slot).run_files_once(files)?;
        let mut failing = BTreeMap::new();
        let mut unknown = Vec::new();
        let mut undefined_names = Vec::new();
        for (node, verdicts) in &result.verdicts {
            // A claim that did not pass at the parent fails, or gives no verdict, for reasons
            // older than the commit.
            let not_passing_before = self.claims.contains(node) && !self.kept.contains(node);
            match verdicts.first() {
                Some(Verdict::Failed(_) | Verdict::Unknown(_)) if not_passing_before => {}
                Some(Verdict::Failed(kind @ FailureKind::UndefinedNameInTest(_))) => {
                    undefined_names.push(format!("{node} ({kind})"));
                }
                Some(Verdict::Failed(kind)) => {
                    failing.insert(node.clone(), kind.to_string());
                }
                // A test the child removed or renamed is not a failure (when the child renamed
                // every claim, pytest collects nothing: exit code 5), and a test that skips itself
                // (a platform, a version, an optional dependency) chose not to run: neither says
                // anything about whether the child is broken.
                Some(Verdict::Unknown(
                    UnknownReason::MissingRecord
                    | UnknownReason::ExitCode(5)
                    | UnknownReason::Skipped,
                ))
                | Some(Verdict::Passed) => {}
                Some(Verdict::Unknown(reason)) => unknown.push(format!("{node}: {reason}")),
                None => {}
            }
        }
        unknown.dedup();
        Ok(FirstRun {
            result,
            failing,
            unknown,
            undefined_names,
        })
    }

    /// Runs the `failing` nodes up to N - 1 more times; one that passes on any run is flaky, not
    /// the child's: it leaves `failing` and is named in what this returns.
    pub(super) fn drop_flaky(
        &self,
        slot: &Slot,
        failing: &mut BTreeMap<String, String>,
    ) -> Result<Vec<String>, GateError> {
        let runs = self.settings.runs;
        let mut flaky = Vec::new();
        if runs <= 1 || failing.is_empty() {
            return Ok(flaky);
        }
        let nodes: Vec<String> = failing.keys().cloned().collect();
        let again =
            Stage::new(self.settings, self.environment, slot).run(&nodes, 1..runs, passed_once)?;
        for node in &nodes {
            let verdicts = again.verdicts.get(node).map(Vec::as_slice).unwrap_or(&[]);
            if verdicts.contains(&Verdict::Passed) {
                let failed = 1 + verdicts
                    .iter()
                    .filter(|verdict| matches!(verdict, Verdict::Failed(_)))
                    .count();
                flaky.push(format!(
                    "{node} (failed {failed} of {} runs)",
                    verdicts.len() + 1
                ));
                failing.remove(node);
            }
        }
        Ok(flaky)
    }

    /// Which of the child's `failing` nodes and `broken` files a merge shares with one of its
    /// other parents. Nothing runs for a commit with one parent.
    pub(super) fn inherited_from_merged_parents(
        &self,
        slot: &mut Slot,
        failing: &BTreeMap<String, String>,
        broken: &BTreeMap<String, CollectionError>,
    ) -> Result<Inherited, GateError> {
        let mut inherited = Inherited::default();
        if failing.is_empty() && broken.is_empty() {
            return Ok(inherited);
        }
        let others: Vec<Oid> = self
            .repository
            .find_commit(self.commit)
            .map_err(|source| WorktreeError::Git {
                what: format!("the parents of commit {}", self.commit),
                source,
            })?
            .parent_ids()
            .filter(|id| *id != self.parent)
            .collect();
        for other in others {
            let (lineage, there) = self.run_at(slot, other, failing, broken, &[])?;
            let short = &other.to_string()[..10];
            for node in failing.keys() {
                let at_other = lineage.parent_node(node);
                let failed_there = there.broken_files.contains_key(file_of(&at_other))
                    || matches!(first(&there, &at_other), Some(Verdict::Failed(_)));
                if failed_there && inherited.nodes.insert(node.clone()) {
                    inherited.notes.push(format!("{node} (fails at {short})"));
                }
            }
            for file in broken.keys() {
                if there.broken_files.contains_key(lineage.parent_file(file))
                    && inherited.files.insert(file.clone())
                {
                    inherited
                        .notes
                        .push(format!("{file} (does not collect at {short})"));
                }
            }
        }
        Ok(inherited)
    }

    /// The child's `failing` nodes and `broken` files that the first parent did not have: a
    /// test that passed there or did not exist there, a file that collected there.
    pub(super) fn new_at_child(
        &self,
        slot: &mut Slot,
        failing: &BTreeMap<String, String>,
        broken: &BTreeMap<String, CollectionError>,
    ) -> Result<Vec<String>, GateError> {
        let mut new_failures = Vec::new();
        if failing.is_empty() && broken.is_empty() {
            return Ok(new_failures);
        }
        let (lineage, before) = self.run_at(slot, self.parent, failing, broken, self.deleted)?;
        for (file, error) in broken {
            if !before.broken_files.contains_key(lineage.parent_file(file)) {
                new_failures.push(format!("{file} fails to collect ({})", error.message));
            }
        }
        for (node, kind) in failing {
            let at_parent = lineage.parent_node(node);
            if before.broken_files.contains_key(file_of(&at_parent)) {
                continue;
            }
            let verdict = first(&before, &at_parent)
                .or_else(|| moved_test(&before.verdicts, node, self.deleted));
            // It passed at the parent, or it is new: the failure is the child's.
            if matches!(verdict, Some(Verdict::Passed) | None) {
                new_failures.push(format!("{node} fails ({kind})"));
            }
        }
        Ok(new_failures)
    }

    /// Runs the files of the child's `failing` nodes and `broken` files once as they are at
    /// `elsewhere` (a parent of the child), with `extra` files of that commit; the slot is
    /// checked out there and back. The lineage maps the child's names to that commit's.
    fn run_at(
        &self,
        slot: &mut Slot,
        elsewhere: Oid,
        failing: &BTreeMap<String, String>,
        broken: &BTreeMap<String, CollectionError>,
        extra: &[String],
    ) -> Result<(Lineage, StageResult), GateError> {
        let child_files: Vec<String> = failing
            .keys()
            .map(|node| file_of(node).to_string())
            .chain(broken.keys().cloned())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let lineage = Lineage::of_commit(self.repository, elsewhere, self.commit, &child_files)?;
        let files: Vec<String> = child_files
            .iter()
            .map(|file| lineage.parent_file(file).to_string())
            .chain(extra.iter().cloned())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        check_out(slot, self.repository, elsewhere)?;
        let there = Stage::new(self.settings, self.environment, slot).run_files_once(&files);
        check_out(slot, self.repository, self.commit)?;
        Ok((lineage, there?))
    }
}

/// A node's first verdict in `result`.
fn first<'a>(result: &'a StageResult, node: &str) -> Option<&'a Verdict> {
    result
        .verdicts
        .get(node)
        .and_then(|verdicts| verdicts.first())
}

/// The parent's verdict of the test `child_node` moved from a file the commit deleted: a test
/// of a deleted file with the same function name and parameters (arrow's nose-era
/// `tests/factory_tests.py::GetTests::test_one_arg_dateparser_datetime` became
/// `tests/test_factory.py::TestGet::test_one_arg_dateparser_datetime`). When several match, one
/// that passed wins, so the child is never excused by a namesake that failed.
fn moved_test<'a>(
    parent: &'a BTreeMap<String, Vec<Verdict>>,
    child_node: &str,
    deleted: &[String],
) -> Option<&'a Verdict> {
    let name = child_node.rsplit("::").next()?;
    if !child_node.contains("::") {
        return None;
    }
    let mut found: Option<&Verdict> = None;
    for (node, verdicts) in parent {
        if deleted.iter().any(|file| file == file_of(node))
            && node.rsplit("::").next() == Some(name)
            && let Some(verdict) = verdicts.first()
        {
            if *verdict == Verdict::Passed {
                return Some(verdict);
            }
            found.get_or_insert(verdict);
        }
    }
    found
}
