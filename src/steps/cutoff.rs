//! The `cutoff` step kind: the post-cutoff split, claims whose child commit postdates a date.
//!
//! ```yaml
//! post: {uses: cutoff, needs: [rank, truth], with: {date: 2024-05-01}}
//! post_judge: {uses: cutoff, needs: [rank, truth], with: {model: judge}}   # its `cutoff:`
//! ```
//! A model cannot have read in training a commit made after its training cutoff, so the claims of
//! those commits are the split on which an arm's numbers cannot be recall of the repository. The
//! step reads the commit times of the `rank-commits` step and the labels of the `oracle` step it
//! needs, and its records are the post-cutoff claims' truth records, so `stats` and `stratify`
//! steps that need it score or sample that split, and arms that need it judge only those claims.
//! Its summary record also gives every labelled claim's side, from which `stats` builds the
//! fixed-repository comparison across the cutoff (Table IX).

use super::selection::{CutoffSummary, SideCount};
use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::selection;
use crate::engine::{
    ItemOutput, ItemPlan, ItemResult, ModelName, ParamsDecl, PipelineProblem, Role, StepContext,
    StepError, StepKind, Upstream,
};
use crate::pipeline::Need;
use crate::pipeline::{Pipeline, StepSpec};
use crate::records::{CommitRecord, Label, TruthRecord};
use crate::stats::cutoff::{Cutoff, Side};
use crate::stats::evaluation::parse_claim_id;

/// The `cutoff` step kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct CutoffStep;

/// The parameters of `uses: cutoff`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CutoffParams {
    /// The training cutoff: `2024-05-01` (that whole day is before it) or an RFC 3339 time; give
    /// this or `model`.
    #[serde(default)]
    pub date: Option<String>,
    /// A `models:` entry whose `cutoff:` is the date; give this or `date`.
    #[serde(default)]
    pub model: Option<ModelName>,
    /// Keep only repositories with this `split:` (default: every repository).
    #[serde(default)]
    pub split: Option<String>,
}

/// What a step of this kind reads from the steps it needs.
const NEEDS: &[Need] = &[
    Need {
        roles: &[Role::Labels],
        step: "an `oracle` step",
        reads: "the labels it splits",
    },
    Need {
        roles: &[Role::Commits],
        step: "a `rank-commits` step",
        reads: "the commit times it splits them by",
    },
];

impl StepKind for CutoffStep {
    fn name(&self) -> &'static str {
        "cutoff"
    }

    fn version(&self) -> u32 {
        1
    }

    fn about(&self) -> &'static str {
        "the post-cutoff split: claims whose child commit is dated after a training cutoff"
    }

    fn params(&self) -> ParamsDecl {
        ParamsDecl::of::<CutoffParams>()
    }

    fn requires(&self, _step: &StepSpec) -> &'static [Need] {
        NEEDS
    }

    fn role(&self, _step: &StepSpec) -> Role {
        Role::LabelSplit
    }

    fn check_pipeline(&self, step: &StepSpec, pipeline: &Pipeline) -> Vec<PipelineProblem> {
        let Some(params) = step.params.get::<CutoffParams>() else {
            return Vec::new();
        };
        match date_of(params, pipeline) {
            Ok(date) => match Cutoff::parse(&date) {
                Ok(_) => Vec::new(),
                Err(error) => vec![PipelineProblem {
                    param: Some(
                        if params.date.is_some() {
                            "date"
                        } else {
                            "model"
                        }
                        .to_string(),
                    ),
                    index: None,
                    message: format!("the cutoff of step `{}`: {error}", step.name),
                    hint: "write the date as `YYYY-MM-DD` or an RFC 3339 time".to_string(),
                }],
            },
            Err((param, message, hint)) => vec![PipelineProblem {
                param,
                index: None,
                message,
                hint,
            }],
        }
    }

    fn items(&self, ctx: &StepContext, upstream: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        let params: &CutoffParams = ctx.params()?;
        cutoff_of(ctx, params)?;
        let labels = oracle(ctx, upstream)?;
        let commits = commits(ctx, upstream)?;
        let mut plan = ItemPlan::new("cutoff");
        if params.model.is_some() {
            // The date comes from the `models:` entry: it enters the key, not the entry's name.
            let date = date_of(params, ctx.pipeline).map_err(|(_, message, _)| {
                StepError::Input(format!("step `{}`: {message}", ctx.step.name))
            })?;
            plan = plan.params(serde_json::json!({ "cutoff": date }));
        }
        Ok(vec![plan.read_outputs([labels, commits])])
    }

    fn run(
        &self,
        ctx: &StepContext,
        _item: &ItemPlan,
        upstream: &Upstream,
    ) -> Result<ItemOutput, StepError> {
        let params: &CutoffParams = ctx.params()?;
        let cutoff = cutoff_of(ctx, params)?;
        let labels = oracle(ctx, upstream)?;
        let times: BTreeMap<(String, String), i64> = commits(ctx, upstream)?
            .decode_all::<CommitRecord>()?
            .into_iter()
            .map(|commit| ((commit.repo, commit.parent), commit.time))
            .collect();
        let keep: Option<BTreeSet<String>> = params.split.as_ref().map(|split| {
            ctx.pipeline
                .repos
                .iter()
                .filter(|repo| repo.split.as_deref() == Some(split))
                .map(|repo| repo.name.clone())
                .collect()
        });
        let mut summary = CutoffSummary {
            cutoff: cutoff.clone(),
            split: params.split.clone(),
            labels_from: labels.step.clone(),
            before: SideCount::default(),
            after: SideCount::default(),
            natural_rate: None,
            sides: BTreeMap::new(),
        };
        let mut after = Vec::new();
        for record in selection::truth_records(labels)? {
            let origin = parse_claim_id(&record.claim).ok_or_else(|| {
                StepError::Invariant(format!(
                    "step `{}`: claim id `{}` names no repository",
                    ctx.step.name, record.claim
                ))
            })?;
            if keep
                .as_ref()
                .is_some_and(|keep| !keep.contains(&origin.repository))
            {
                continue;
            }
            let time = times
                .get(&(origin.repository.clone(), origin.parent.clone()))
                .ok_or_else(|| {
                    StepError::Input(format!(
                        "step `{}`: claim `{}` comes from a commit the needed `rank-commits` \
                         step did not rank; need the rank step its claims were mined from",
                        ctx.step.name, record.claim
                    ))
                })?;
            let side = cutoff.side(*time);
            if record.label != Label::Discarded {
                let count = match side {
                    Side::Before => &mut summary.before,
                    Side::After => &mut summary.after,
                };
                count.claims += 1;
                count.flipped += u64::from(record.label == Label::Flipped);
                summary.sides.insert(record.claim.clone(), side);
            }
            if side == Side::After {
                after.push(record);
            }
        }
        summary.natural_rate =
            crate::stats::confusion::ratio(summary.after.flipped, summary.after.claims);
        let summary = selection::SelectionSummary::Cutoff(summary);
        let mut records = vec![serde_json::to_value(&summary).expect("a summary serializes")];
        records.extend(
            after
                .iter()
                .map(|record: &TruthRecord| serde_json::to_value(record).expect("serializes")),
        );
        Ok(ItemOutput {
            records: records.into(),
            blobs: Default::default(),
        })
    }

    fn publish(&self, ctx: &StepContext, items: &[ItemResult]) -> Result<(), StepError> {
        selection::publish_with_summary(ctx, items, selection::is_selection_summary, "cutoff")
    }
}

/// The summary record among a `cutoff` step's outputs.
pub fn summary_of(split: &crate::engine::StepOutput) -> Result<CutoffSummary, StepError> {
    match selection::labelled(split)?.summary {
        Some(selection::SelectionSummary::Cutoff(summary)) => Ok(summary),
        _ => Err(StepError::Invariant(format!(
            "step `{}` has no cutoff summary record",
            split.step
        ))),
    }
}

/// A problem with the date: the parameter it is about, what is wrong, what to do.
type DateProblem = (Option<String>, String, String);

/// The cutoff date the step names: its `date`, or its `model`'s `cutoff:`.
fn date_of(params: &CutoffParams, pipeline: &Pipeline) -> Result<String, DateProblem> {
    match (&params.date, &params.model) {
        (Some(date), None) => Ok(date.clone()),
        (None, Some(model)) => {
            let entry = pipeline.models.get(model.as_str()).ok_or_else(|| {
                (
                    Some("model".to_string()),
                    format!("`model: {model}` names no `models:` entry"),
                    "name an entry of `models:`, or give `date:`".to_string(),
                )
            })?;
            entry.cutoff.clone().ok_or_else(|| {
                (
                    Some("model".to_string()),
                    format!("the `models:` entry `{model}` has no `cutoff:`"),
                    format!("add `cutoff: YYYY-MM-DD` to `models: {model}`, or give `date:`"),
                )
            })
        }
        (Some(_), Some(_)) => Err((
            None,
            "both `date` and `model` give the cutoff".to_string(),
            "keep one of them".to_string(),
        )),
        (None, None) => Err((
            None,
            "no cutoff: neither `date` nor `model` is given".to_string(),
            "give `date: YYYY-MM-DD`, or `model:` naming a `models:` entry with a `cutoff:`"
                .to_string(),
        )),
    }
}

fn cutoff_of(ctx: &StepContext, params: &CutoffParams) -> Result<Cutoff, StepError> {
    let date = date_of(params, ctx.pipeline).map_err(|(_, message, hint)| {
        StepError::Input(format!("step `{}`: {message}; {hint}", ctx.step.name))
    })?;
    Cutoff::parse(&date)
        .map_err(|error| StepError::input(format!("step `{}`", ctx.step.name), error))
}

fn oracle<'a>(
    ctx: &StepContext,
    upstream: &'a Upstream,
) -> Result<&'a crate::engine::StepOutput, StepError> {
    upstream
        .first_with_role(|role| *role == Role::Labels)
        .ok_or_else(|| {
            StepError::Input(format!(
                "step `{}`: needs the `oracle` step whose labels it splits; add it to `needs:`",
                ctx.step.name
            ))
        })
}

fn commits<'a>(
    ctx: &StepContext,
    upstream: &'a Upstream,
) -> Result<&'a crate::engine::StepOutput, StepError> {
    upstream
        .first_with_role(|role| *role == Role::Commits)
        .ok_or_else(|| {
            StepError::Input(format!(
                "step `{}`: needs the `rank-commits` step whose commit times it reads; add it to \
             `needs:`",
                ctx.step.name
            ))
        })
}
