//! The failures a merge commit brings in with a merged parent.
//!
//! The gate looks a failure of the child's own tests up at the first parent, the one the claims
//! were mined at. A merge has others: a branch whose own tip already failed a test brings that
//! failure into the merge, which did not cause it (marshmallow 8237781990 merged a branch whose
//! new `tests/test_serializer.py` failed four tests at the branch's tip, and 183 claims were
//! discarded for them). A failure the merge shares with another parent is that parent's; one that
//! no parent has is the merge's own.

use std::collections::{BTreeMap, BTreeSet};

use super::{ChildGate, GateError, Slot, Stage, check_out, file_of};
use crate::oracle::classify::{CollectionError, Verdict};
use crate::oracle::lineage::Lineage;
use crate::oracle::worktree::WorktreeError;

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
    /// Runs the files of the child's `failing` nodes and `broken` files once at each parent but
    /// the first (the slot is checked out there and back) and says which of those failures were
    /// already there. Nothing runs for a commit with one parent.
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
        let others: Vec<git2::Oid> = self
            .repository
            .find_commit(self.commit)
            .map_err(|source| WorktreeError::Git {
                what: format!("the parents of commit {}", self.commit),
                source,
            })?
            .parent_ids()
            .filter(|id| *id != self.parent)
            .collect();
        let child_files: Vec<String> = failing
            .keys()
            .map(|node| file_of(node).to_string())
            .chain(broken.keys().cloned())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        for other in others {
            let lineage = Lineage::of_commit(self.repository, other, self.commit, &child_files)?;
            let files: Vec<String> = child_files
                .iter()
                .map(|file| lineage.parent_file(file).to_string())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            check_out(slot, self.repository, other)?;
            let there = Stage::new(self.settings, self.environment, slot).run_files_once(&files);
            check_out(slot, self.repository, self.commit)?;
            let there = there?;
            let short = &other.to_string()[..10];
            for node in failing.keys() {
                let at_other = lineage.parent_node(node);
                let failed_there = there.broken_files.contains_key(file_of(&at_other))
                    || matches!(
                        there
                            .verdicts
                            .get(&at_other)
                            .and_then(|verdicts| verdicts.first()),
                        Some(Verdict::Failed(_))
                    );
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
}
