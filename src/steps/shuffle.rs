//! The `shuffle` step kind: the shuffled-diff null, each claim paired with another commit.
//!
//! ```yaml
//! shuffled:    {uses: shuffle, needs: [rank, claims], with: {seed: 1}}
//! a4_shuffled: {uses: arm, needs: [claims, shuffled], with: {arm: symbol-anchoring}}
//! ```
//! It pairs every claim of the needed `mine-claims` step with a commit that is never the claim's
//! own and, when the corpus has several repositories, from another one
//! ([`crate::controls::shuffle`]). The commits come from a needed `rank-commits` step (those
//! whose diff touches a source file), else from the claims' own commits. An arm that needs the
//! step judges each claim against its paired commit's source-only diff instead of its own: the
//! static arms see that commit's changed files and symbols, a model arm its diff. Such an arm is a
//! control of the arm with the same `uses:` and `with:` that needs the same steps but this one,
//! which is what the summary record declares (`control: shuffled-diff`); `stats` reports the two
//! fire rates side by side. One item, keyed by every upstream record it reads.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::controls::shuffle::{CommitRef, Pairing, ShuffleClaim, shuffle};
use crate::engine::{
    ItemOutput, ItemPlan, ItemResult, ParamsDecl, Role, StepContext, StepError, StepKind,
    StepOutput, Upstream,
};
use crate::pipeline::Need;
use crate::pipeline::StepSpec;
use crate::records::{ClaimRecord, CommitRecord};

/// The `shuffle` step kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct ShuffleStep;

/// The parameters of `uses: shuffle`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShuffleParams {
    /// Seed of the pairing (default 0).
    #[serde(default)]
    pub seed: u64,
}

/// A record of a shuffle, told apart by its `record` tag.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "lowercase")]
pub enum ShuffleRecord {
    /// The summary (`shuffle.json`).
    Shuffle(ShuffleSummary),
    /// One pairing (`shuffle.jsonl`).
    Pairing(Pairing),
}

/// The summary record of a shuffle (`shuffle.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShuffleSummary {
    /// Always `shuffled-diff`: an arm needing this step is a control of its unshuffled twin.
    pub control: String,
    pub seed: u64,
    /// Commits a claim could be paired with.
    pub commits: usize,
    pub paired: usize,
    /// Pairs whose commit is from another repository.
    pub other_repository: usize,
    pub unpaired: Vec<crate::controls::shuffle::Unpaired>,
}

/// The commit whose diff each claim is shown, when a `shuffle` step is needed: by claim id.
/// `None` when no needed step pairs claims; a shuffle that paired nothing still shuffles (every
/// claim goes unjudged). A record of a shuffle that does not decode is an error naming the step.
pub fn shown_commits(
    upstream: &Upstream,
) -> Result<Option<BTreeMap<String, CommitRef>>, StepError> {
    let mut found: Option<BTreeMap<String, CommitRef>> = None;
    for output in upstream.all() {
        if declares_control(output).as_deref() != Some(SHUFFLED_DIFF) {
            continue;
        }
        let shown = found.get_or_insert_with(BTreeMap::new);
        for record in output
            .items
            .iter()
            .flat_map(|item| item.output.records.iter())
        {
            let decoded =
                ShuffleRecord::deserialize(record).map_err(|source| StepError::Record {
                    step: output.step.clone(),
                    source,
                })?;
            if let ShuffleRecord::Pairing(pairing) = decoded {
                shown.insert(pairing.claim, pairing.paired);
            }
        }
    }
    Ok(found)
}

/// The manipulation a needed step declares by its role, if it manipulates what arms see.
pub fn declares_control(output: &StepOutput) -> Option<String> {
    match &output.role {
        Role::Manipulation { control } => Some(control.clone()),
        _ => None,
    }
}

/// Every needed step's records of role `role`, decoded as `T`.
fn records_of<T: serde::de::DeserializeOwned>(
    upstream: &Upstream,
    role: &Role,
) -> Result<Vec<T>, StepError> {
    let mut records = Vec::new();
    for output in upstream.all().filter(|output| output.role == *role) {
        records.extend(output.decode_all::<T>()?);
    }
    Ok(records)
}

/// What a step of this kind reads from the steps it needs.
const NEEDS: &[Need] = &[Need {
    roles: &[Role::Claims],
    step: "a `mine-claims` step",
    reads: "the claims it pairs",
}];

impl StepKind for ShuffleStep {
    fn name(&self) -> &'static str {
        "shuffle"
    }

    fn version(&self) -> u32 {
        1
    }

    fn about(&self) -> &'static str {
        "the shuffled-diff null: each claim paired with another commit's diff, seeded"
    }

    fn params(&self) -> ParamsDecl {
        ParamsDecl::of::<ShuffleParams>()
    }

    fn requires(&self, _step: &StepSpec) -> &'static [Need] {
        NEEDS
    }

    fn role(&self, _step: &StepSpec) -> Role {
        Role::Manipulation {
            control: SHUFFLED_DIFF.to_string(),
        }
    }

    fn items(&self, ctx: &StepContext, upstream: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        ctx.params::<ShuffleParams>()?;
        if upstream
            .first_with_role(|role| *role == Role::Claims)
            .is_none()
        {
            return Err(StepError::Input(format!(
                "step `{}`: needs a `mine-claims` step for the claims to pair; add it to `needs:`",
                ctx.step.name
            )));
        }
        Ok(vec![
            ItemPlan::new("pairs").read_outputs(
                upstream
                    .all()
                    .filter(|output| matches!(output.role, Role::Claims | Role::Commits)),
            ),
        ])
    }

    fn run(
        &self,
        ctx: &StepContext,
        _item: &ItemPlan,
        upstream: &Upstream,
    ) -> Result<ItemOutput, StepError> {
        let params: &ShuffleParams = ctx.params()?;
        let claims: Vec<ClaimRecord> = records_of(upstream, &Role::Claims)?;
        let ranked: Vec<CommitRecord> = records_of(upstream, &Role::Commits)?;
        let as_ref = |repo: &str, parent: &str, commit: &str| CommitRef {
            repo: repo.to_string(),
            parent: parent.to_string(),
            commit: commit.to_string(),
        };
        let commits: BTreeSet<CommitRef> = if ranked.is_empty() {
            claims
                .iter()
                .map(|claim| as_ref(&claim.repo, &claim.parent, &claim.commit))
                .collect()
        } else {
            // A commit that changes no source file has an empty source-only diff: no null at all.
            ranked
                .iter()
                .filter(|commit| !commit.source_files.is_empty())
                .map(|commit| as_ref(&commit.repo, &commit.parent, &commit.commit))
                .collect()
        };
        let commits: Vec<CommitRef> = commits.into_iter().collect();
        let to_pair: Vec<ShuffleClaim> = claims
            .iter()
            .map(|claim| ShuffleClaim {
                claim: claim.id.clone(),
                own: as_ref(&claim.repo, &claim.parent, &claim.commit),
            })
            .collect();
        let result = shuffle(&to_pair, &commits, params.seed);
        let summary = ShuffleRecord::Shuffle(ShuffleSummary {
            control: "shuffled-diff".into(),
            seed: params.seed,
            commits: commits.len(),
            paired: result.pairings.len(),
            other_repository: result
                .pairings
                .iter()
                .filter(|pairing| pairing.other_repository)
                .count(),
            unpaired: result.unpaired,
        });
        let mut records = vec![serde_json::to_value(&summary).expect("a summary serializes")];
        records.extend(result.pairings.into_iter().map(|pairing| {
            serde_json::to_value(ShuffleRecord::Pairing(pairing)).expect("a pairing serializes")
        }));
        Ok(ItemOutput {
            records: records.into(),
            blobs: Default::default(),
        })
    }

    fn publish(&self, ctx: &StepContext, items: &[ItemResult]) -> Result<(), StepError> {
        let is_summary = |record: &serde_json::Value| {
            ShuffleRecord::deserialize(record)
                .map(|decoded| matches!(decoded, ShuffleRecord::Shuffle(_)))
        };
        super::selection::publish_with_summary(ctx, items, is_summary, "shuffle")
    }
}

/// The name of the manipulation, as a control's predictions declare it in `evidence.control`.
pub const SHUFFLED_DIFF: &str = "shuffled-diff";

/// Marks a prediction's evidence as judged against `commit`'s diff under the shuffle: `stats`
/// reads `control` to report the arm as a control of its unshuffled twin.
pub fn mark_shown(evidence: &mut serde_json::Value, commit: &CommitRef) {
    if !evidence.is_object() {
        *evidence = json!({"evidence": evidence.take()});
    }
    let map = evidence.as_object_mut().expect("made an object");
    map.insert("control".into(), json!(SHUFFLED_DIFF));
    map.insert("diff_of".into(), json!(commit.name()));
}

/// Claims grouped by the commit whose diff they are shown: their own commit, or with a `shuffle`
/// step needed, the commit it paired them with (claims it left unpaired are not judged). Groups
/// keep the order in which their first claim comes.
pub fn group_by_shown(
    groups: Vec<Vec<ClaimRecord>>,
    upstream: &Upstream,
) -> Result<Vec<(CommitRef, Vec<ClaimRecord>)>, StepError> {
    let shown = shown_commits(upstream)?;
    let mut result: Vec<(CommitRef, Vec<ClaimRecord>)> = Vec::new();
    let mut index: BTreeMap<CommitRef, usize> = BTreeMap::new();
    for claim in groups.into_iter().flatten() {
        let commit = match &shown {
            None => CommitRef {
                repo: claim.repo.clone(),
                parent: claim.parent.clone(),
                commit: claim.commit.clone(),
            },
            Some(shown) => match shown.get(&claim.id) {
                Some(commit) => commit.clone(),
                None => continue,
            },
        };
        let slot = *index.entry(commit.clone()).or_insert_with(|| {
            result.push((commit, Vec::new()));
            result.len() - 1
        });
        result[slot].1.push(claim);
    }
    Ok(result)
}
