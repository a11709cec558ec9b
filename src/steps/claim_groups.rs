//! The claims a model step asks about, grouped by commit: what `llm-arm` and `prose-render`
//! both plan from (a selection upstream narrows them, a paraphrase upstream rewrites them).

use std::collections::BTreeMap;

use crate::engine::{Role, StepContext, StepError, Upstream};
use crate::records::ClaimRecord;

/// Claims of the needed claim steps, grouped by commit in first-seen order; with a `stratify`
/// sample or a `cutoff` split among the needs, only the claims it selected (no call is spent on a
/// claim the evaluation leaves out).
pub fn claims_by_commit(
    ctx: &StepContext,
    upstream: &Upstream,
) -> Result<Vec<Vec<ClaimRecord>>, StepError> {
    let mut groups: Vec<Vec<ClaimRecord>> = Vec::new();
    let mut index: BTreeMap<(String, String, String), usize> = BTreeMap::new();
    let mut found = false;
    let selected = super::selection::selected_claims(upstream)?;
    // A paraphrase upstream: only the claims it kept, as rewritten.
    let paraphrased = super::paraphrase::paraphrased_claims(upstream)?;
    for output in upstream.all() {
        if output.role != Role::Claims {
            continue;
        }
        found = true;
        for claim in output.decode_all::<ClaimRecord>()? {
            if selected
                .as_ref()
                .is_some_and(|selected| !selected.contains(&claim.id))
            {
                continue;
            }
            let claim = match &paraphrased {
                None => claim,
                Some(kept) => match kept.get(&claim.id) {
                    Some(record) => serde_json::from_value(record.clone()).map_err(|error| {
                        StepError::failed(
                            format!(
                                "step `{}`: read the paraphrase of {}",
                                ctx.step.name, claim.id
                            ),
                            error,
                        )
                    })?,
                    None => continue,
                },
            };
            let commit = (
                claim.repo.clone(),
                claim.parent.clone(),
                claim.commit.clone(),
            );
            let slot = *index.entry(commit).or_insert_with(|| {
                groups.push(Vec::new());
                groups.len() - 1
            });
            groups[slot].push(claim);
        }
    }
    if !found {
        return Err(StepError::Input(format!(
            "step `{}`: needs a step whose records are claims (`mine-claims`)",
            ctx.step.name
        )));
    }
    Ok(groups)
}
