//! Which labels a selecting step reads, and which claims an arm judges when a selection is
//! upstream.
//!
//! A `stratify` sample and a `cutoff` split are selections of labelled claims: their records are
//! the selected claims' truth records (and one summary record). A step that needs a selection
//! reads its labels from it instead of from the oracle; an arm that needs one judges only the
//! selected claims, so no verdict (and no model call) is spent on a claim the evaluation leaves
//! out, and a larger sample computes only the claims it adds.

use std::collections::BTreeSet;

use crate::engine::{ItemResult, Role, StepContext, StepError, StepOutput, Upstream};
use crate::records::TruthRecord;

/// Whether a needed step's records are a selection of labelled claims (a sample, a split).
pub fn is_selection(output: &StepOutput) -> bool {
    output.role.is_selection()
}

/// Roles a selection may draw its labels from, narrowest first.
const LABEL_ROLES: [Role; 3] = [Role::LabelSample, Role::LabelSplit, Role::Labels];

/// The needed step whose labels a selection draws from: a selection if one is needed, else the
/// oracle.
pub fn label_step<'a>(
    ctx: &StepContext,
    upstream: &'a Upstream,
) -> Result<&'a StepOutput, StepError> {
    LABEL_ROLES
        .iter()
        .find_map(|role| upstream.first_with_role(|candidate| candidate == role))
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
    for output in upstream.all().filter(|output| is_selection(output)) {
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

/// Publishes a step whose items hold one summary record (`record: <summary>`) beside its other
/// records: the summary to `<name>.json`, the rest to `<name>.jsonl` (under the step's own name
/// when an earlier step of its kind took those files). A `stratify` sample, a `cutoff` split and
/// a `shuffle` publish so.
pub fn publish_with_summary(
    ctx: &StepContext,
    items: &[ItemResult],
    summary: &str,
    name: &str,
) -> Result<(), StepError> {
    let mut found = None;
    let mut records = Vec::new();
    for record in items.iter().flat_map(|item| &item.output.records) {
        if record.get("record").and_then(|value| value.as_str()) == Some(summary) {
            found = Some(record.clone());
        } else {
            records.push(record.clone());
        }
    }
    let found = found.ok_or_else(|| {
        StepError::Invariant(format!("step `{}` produced no summary", ctx.step.name))
    })?;
    let mut bytes = serde_json::to_vec_pretty(&found).expect("a summary serializes");
    bytes.push(b'\n');
    ctx.write_result(&ctx.own_result(&format!("{name}.json")), &bytes)?;
    ctx.write_jsonl(&ctx.own_result(&format!("{name}.jsonl")), records)
}
