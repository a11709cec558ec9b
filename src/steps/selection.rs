//! Which labels a selecting step reads, and which claims an arm judges when a selection is
//! upstream.
//!
//! A `stratify` sample and a `cutoff` split are selections of labelled claims: their records are
//! the selected claims' truth records (and one summary record). A step that needs a selection
//! reads its labels from it instead of from the oracle; an arm that needs one judges only the
//! selected claims, so no verdict (and no model call) is spent on a claim the evaluation leaves
//! out, and a larger sample computes only the claims it adds.

use std::collections::BTreeSet;

use crate::engine::{StepContext, StepError, StepOutput, Upstream};
use crate::records::TruthRecord;

/// Kinds whose records are a selection of labelled claims.
pub const SELECTION_KINDS: &[&str] = &["stratify", "cutoff"];

/// Kinds a selection may draw its labels from, narrowest first.
pub const LABEL_KINDS: &[&str] = &["stratify", "cutoff", "oracle"];

/// The needed step whose labels a selection draws from: a selection if one is needed, else the
/// oracle.
pub fn label_step<'a>(
    ctx: &StepContext,
    upstream: &'a Upstream,
) -> Result<&'a StepOutput, StepError> {
    LABEL_KINDS
        .iter()
        .find_map(|kind| upstream.of_kind(kind))
        .ok_or_else(|| {
            StepError::Input(format!(
                "step `{}`: needs an `oracle` step (or a `cutoff` or `stratify` step) for the \
                 labels; add it to `needs:`",
                ctx.step.name
            ))
        })
}

/// The truth records of a labels step, its summary record left out.
pub fn truth_records(output: &StepOutput) -> Vec<TruthRecord> {
    output
        .items
        .iter()
        .flat_map(|item| item.output.records.iter())
        .filter(|record| record.get("record").is_none())
        .filter_map(|record| serde_json::from_value(record.clone()).ok())
        .collect()
}

/// The claims selected by every selection step needed, or `None` when none is needed.
pub fn selected_claims(upstream: &Upstream) -> Option<BTreeSet<String>> {
    let mut selected: Option<BTreeSet<String>> = None;
    for output in upstream
        .all()
        .filter(|output| SELECTION_KINDS.contains(&output.kind.as_str()))
    {
        let claims: BTreeSet<String> = truth_records(output)
            .into_iter()
            .map(|record| record.claim)
            .collect();
        selected = Some(match selected {
            Some(previous) => previous.intersection(&claims).cloned().collect(),
            None => claims,
        });
    }
    selected
}
