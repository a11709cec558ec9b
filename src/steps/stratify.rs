//! The `stratify` step kind: a split's labelled claims drawn to a target flip rate.
//!
//! ```yaml
//! sample: {uses: stratify, needs: [truth], with: {split: heldout, flip_rate: 0.25, seed: 1}}
//! ```
//! It reads the labels of an `oracle` step (or of a `cutoff` step, to sample the post-cutoff
//! split) and draws with [`crate::controls::sample`]: every flip when flips are scarce, held claims
//! to match the rate, in a seeded order per claim, so a larger `size` contains a smaller one. Its
//! records are the sampled claims' truth records and one summary record holding the
//! `natural_rate` of the population it drew from, which `stats` reweights precision to. An arm
//! that needs the sample judges only the sampled claims. One item, keyed by every upstream label.

use super::selection::SampleSummary;
use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::selection;
use crate::controls::sample::{Candidate, SampleSettings, stratify};
use crate::engine::{
    ItemOutput, ItemPlan, ItemResult, ParamsDecl, Role, StepContext, StepError, StepKind, Upstream,
};
use crate::pipeline::Need;
use crate::pipeline::StepSpec;
use crate::records::{Label, TruthRecord};
use crate::stats::evaluation::parse_claim_id;

/// The `stratify` step kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stratify;

/// The parameters of `uses: stratify`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StratifyParams {
    /// Draw from the repositories with this `split:` (default: every repository).
    #[serde(default)]
    pub split: Option<String>,
    /// The share of flips in the sample, strictly between 0 and 1 (default 0.25).
    #[serde(default = "default_rate")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub flip_rate: f64,
    /// Seed of the draw (default 0).
    #[serde(default)]
    pub seed: u64,
    /// Claims wanted; default every flip and the held claims that match the rate.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub size: Option<u64>,
}

fn default_rate() -> f64 {
    0.25
}

/// What a step of this kind reads from the steps it needs.
const NEEDS: &[Need] = &[Need {
    roles: &[Role::LabelSample, Role::LabelSplit, Role::Labels],
    step: "an `oracle` step (or a `cutoff` or `stratify` step)",
    reads: "the labels it samples",
}];

impl StepKind for Stratify {
    fn name(&self) -> &'static str {
        "stratify"
    }

    fn version(&self) -> u32 {
        1
    }

    fn about(&self) -> &'static str {
        "a split's labelled claims drawn to a target flip rate, the natural rate recorded"
    }

    fn params(&self) -> ParamsDecl {
        ParamsDecl::of::<StratifyParams>()
    }

    fn requires(&self, _step: &StepSpec) -> &'static [Need] {
        NEEDS
    }

    fn role(&self, _step: &StepSpec) -> Role {
        Role::LabelSample
    }

    fn items(&self, ctx: &StepContext, upstream: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        let params: &StratifyParams = ctx.params()?;
        check(ctx, params)?;
        let labels = selection::label_step(ctx, upstream)?;
        let plan = ItemPlan::new("sample").params(serde_json::json!({
            "repositories": in_split(ctx, params),
        }));
        Ok(vec![plan.read_outputs([labels])])
    }

    fn run(
        &self,
        ctx: &StepContext,
        _item: &ItemPlan,
        upstream: &Upstream,
    ) -> Result<ItemOutput, StepError> {
        let params: &StratifyParams = ctx.params()?;
        let labels = selection::label_step(ctx, upstream)?;
        let truth: Vec<TruthRecord> = selection::truth_records(labels)?;
        let keep = in_split(ctx, params);
        let mut population = Vec::new();
        for record in &truth {
            let flipped = match record.label {
                Label::Flipped => true,
                Label::Held => false,
                Label::Discarded => continue,
            };
            let repository = parse_claim_id(&record.claim)
                .map(|origin| origin.repository)
                .ok_or_else(|| {
                    StepError::Invariant(format!(
                        "step `{}`: claim id `{}` names no repository",
                        ctx.step.name, record.claim
                    ))
                })?;
            if keep
                .as_ref()
                .is_some_and(|keep| !keep.contains(&repository))
            {
                continue;
            }
            population.push(Candidate {
                claim: record.claim.clone(),
                repository,
                flipped,
            });
        }
        let settings = SampleSettings {
            flip_rate: params.flip_rate,
            seed: params.seed,
            size: params.size.map(|size| size as usize),
        };
        let sample = stratify(&population, &settings)
            .map_err(|error| StepError::input(format!("step `{}`", ctx.step.name), error))?;
        let drawn: BTreeSet<&str> = sample.claims.iter().map(String::as_str).collect();
        let summary = selection::SelectionSummary::Sample(SampleSummary {
            split: params.split.clone(),
            seed: params.seed,
            size: params.size,
            labels_from: labels.step.clone(),
            natural_rate: sample.natural_rate,
            sample: sample.clone(),
        });
        let mut records = vec![serde_json::to_value(&summary).expect("a summary serializes")];
        records.extend(
            truth
                .iter()
                .filter(|record| drawn.contains(record.claim.as_str()))
                .map(|record| serde_json::to_value(record).expect("a truth record serializes")),
        );
        Ok(ItemOutput {
            records: records.into(),
            blobs: Default::default(),
        })
    }

    fn publish(&self, ctx: &StepContext, items: &[ItemResult]) -> Result<(), StepError> {
        selection::publish_with_summary(ctx, items, selection::is_selection_summary, "sample")
    }
}

fn check(ctx: &StepContext, params: &StratifyParams) -> Result<(), StepError> {
    let input = |message: String| StepError::Input(format!("step `{}`: {message}", ctx.step.name));
    if !(params.flip_rate > 0.0 && params.flip_rate < 1.0) {
        return Err(input(format!(
            "`flip_rate` is {}; give a share strictly between 0 and 1, such as 0.25",
            params.flip_rate
        )));
    }
    if params.size == Some(0) {
        return Err(input("`size` is 0; ask for at least one claim".into()));
    }
    if let Some(split) = &params.split
        && !ctx
            .pipeline
            .repos
            .iter()
            .any(|repo| repo.split.as_deref() == Some(split))
    {
        return Err(input(format!(
            "no repository has `split: {split}`; name a split of `repos:`"
        )));
    }
    Ok(())
}

/// The repositories of the step's split, or `None` for every repository.
fn in_split(ctx: &StepContext, params: &StratifyParams) -> Option<BTreeSet<String>> {
    params.split.as_ref().map(|split| {
        ctx.pipeline
            .repos
            .iter()
            .filter(|repo| repo.split.as_deref() == Some(split))
            .map(|repo| repo.name.clone())
            .collect()
    })
}
