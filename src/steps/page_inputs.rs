//! The results page's inputs (see [`crate::view`]), gathered from the outputs of the steps the `report` step needs: the claims
//! of `mine-claims` steps, the commits of `rank-commits` steps, the labels of `oracle` steps, the
//! predictions of every arm and control, and the source-only diffs the model arms were shown
//! (computed again from the repositories, with the same function and limit, so they are what
//! the models read). A step the report does not need is not shown.

use std::collections::BTreeMap;

use crate::engine::{Role, StepContext, StepError, StepOutput, Upstream};
use crate::mining::{DEFAULT_DIFF_LIMIT, TestFileRules, source_diff};
use crate::records::{ClaimRecord, CommitRecord, PredictionRecord, TruthRecord};
use crate::view::model::{ArmView, DiffKey, Inputs, Provenance, ReportParts};

use super::llm_arm::LlmArmParams;

/// What one scored step said about its claims: its predictions, the replicates of its calls and
/// their agreement.
#[derive(Debug, Clone, Default)]
pub struct ArmPredictions {
    pub predictions: Vec<PredictionRecord>,
    /// Replicates 1.. of its calls.
    pub replicates: Vec<Vec<PredictionRecord>>,
    pub agreement: Option<serde_json::Value>,
}

/// The predictions, replicates and replicate agreement of scored step `output`: the one place the
/// page reads an arm's verdicts, from the step's output as [`super::scored`] reads it (a model
/// arm's from its cached reduction), never from the results directory.
pub fn arm_predictions(output: &StepOutput) -> Result<ArmPredictions, StepError> {
    let scored = super::scored::scored(output)?;
    Ok(ArmPredictions {
        predictions: scored.predictions,
        replicates: scored.replicates,
        agreement: scored
            .agreement
            .map(|agreement| serde_json::to_value(agreement).expect("agreement serializes")),
    })
}

/// Every record of every needed step with `role`, decoded as `T`, in step-name order.
fn records_of<T: serde::de::DeserializeOwned>(
    upstream: &Upstream,
    role: Role,
) -> Result<Vec<T>, StepError> {
    let mut all = Vec::new();
    for output in upstream.with_role(|candidate| *candidate == role) {
        all.extend(output.decode_all::<T>()?);
    }
    Ok(all)
}

/// The characters of diff a scored step's model was shown, for a model arm.
fn diff_limit(ctx: &StepContext, step: &str) -> Option<usize> {
    let params = ctx.pipeline.step(step)?.params.get::<LlmArmParams>()?;
    Some(params.diff_limit.unwrap_or(DEFAULT_DIFF_LIMIT))
}

/// Each needed model arm's diff limit, by step.
pub fn diff_limits(ctx: &StepContext, upstream: &Upstream) -> BTreeMap<String, usize> {
    upstream
        .with_role(Role::is_scored)
        .filter_map(|output| Some((output.step.clone(), diff_limit(ctx, &output.step)?)))
        .collect()
}

/// The arms and controls among the needed steps.
fn arms(ctx: &StepContext, upstream: &Upstream) -> Result<Vec<ArmView>, StepError> {
    let mut arms = Vec::new();
    for output in upstream.with_role(Role::is_scored) {
        let read = arm_predictions(output)?;
        arms.push(ArmView {
            step: output.step.clone(),
            kind: output.kind.clone(),
            strategy: output.role.strategy().map(str::to_string),
            model: output.role.model().map(str::to_string),
            control_of: output.role.control_of().map(str::to_string),
            control: output.role.control().map(str::to_string),
            diff_limit: diff_limit(ctx, &output.step),
            predictions: read.predictions,
            replicates: read.replicates,
            agreement: read.agreement,
        });
    }
    Ok(arms)
}

/// The source-only diff of every claim's commit, cut at each limit a model arm used (at the
/// default limit when no model arm is needed, as a model would be shown it).
fn diffs(
    ctx: &StepContext,
    claims: &[ClaimRecord],
    arms: &[ArmView],
) -> Result<BTreeMap<DiffKey, String>, StepError> {
    let mut limits: Vec<usize> = arms.iter().filter_map(|arm| arm.diff_limit).collect();
    if limits.is_empty() {
        limits.push(DEFAULT_DIFF_LIMIT);
    }
    limits.sort_unstable();
    limits.dedup();
    let mut by_repository: BTreeMap<&str, BTreeMap<&str, &str>> = BTreeMap::new();
    for claim in claims {
        by_repository
            .entry(claim.repo.as_str())
            .or_default()
            .insert(claim.commit.as_str(), claim.parent.as_str());
    }
    let mut diffs = BTreeMap::new();
    for (name, commits) in by_repository {
        let failed = |error: Box<dyn std::error::Error + Send + Sync>| {
            StepError::failed(
                format!("step `{}`: the diffs of repository `{name}`", ctx.step.name),
                error,
            )
        };
        let spec = ctx.pipeline.repo(name).ok_or_else(|| {
            StepError::Invariant(format!(
                "step `{}`: a claim names repository `{name}`, which the pipeline does not declare",
                ctx.step.name
            ))
        })?;
        let rules =
            TestFileRules::for_repository(spec, &[]).map_err(|error| failed(error.into()))?;
        let repository = crate::mining::repository::locate(spec, ctx.workdir)
            .and_then(|prepared| prepared.open())
            .map_err(|error| failed(error.into()))?;
        for (commit, parent) in commits {
            let oid = |text: &str| git2::Oid::from_str(text).map_err(|error| failed(error.into()));
            for limit in &limits {
                let diff = source_diff(&repository, oid(parent)?, oid(commit)?, &rules, *limit)
                    .map_err(|error| failed(error.into()))?;
                let key = DiffKey {
                    repository: name.to_string(),
                    commit: commit.to_string(),
                    limit: *limit,
                };
                diffs.insert(key, diff.text);
            }
        }
    }
    Ok(diffs)
}

/// Where the results come from: the pipeline file's digest, its models, and the newest commit of
/// the corpus as the date.
fn provenance(ctx: &StepContext, commits: &[CommitRecord]) -> Provenance {
    Provenance {
        version: env!("CARGO_PKG_VERSION").to_string(),
        pipeline: ctx.pipeline.name.clone(),
        pipeline_digest: pipeline_digest(ctx),
        models: ctx
            .pipeline
            .models
            .iter()
            .map(|(name, spec)| (name.clone(), format!("{} {}", spec.provider, spec.model)))
            .collect(),
        latest_commit: commits.iter().map(|commit| commit.time).max(),
    }
}

/// The digest of the pipeline file (a pipeline built in memory has none to read: it says so).
pub fn pipeline_digest(ctx: &StepContext) -> String {
    match std::fs::read(&ctx.pipeline.file) {
        Ok(bytes) => crate::cache::Digest::of(&bytes).to_string(),
        // No path in the text: it enters the page's key.
        Err(error) => format!(
            "unknown: the pipeline file could not be read ({})",
            error.kind()
        ),
    }
}

/// Everything the page shows, from the outputs of the steps the report needs.
pub fn inputs(
    ctx: &StepContext,
    upstream: &Upstream,
    title: &str,
    report: ReportParts,
) -> Result<Inputs, StepError> {
    let commits: Vec<CommitRecord> = records_of(upstream, Role::Commits)?;
    let claims: Vec<ClaimRecord> = records_of(upstream, Role::Claims)?;
    let truth: Vec<TruthRecord> = records_of(upstream, Role::Labels)?;
    let arms = arms(ctx, upstream)?;
    let diffs = diffs(ctx, &claims, &arms)?;
    Ok(Inputs {
        title: title.to_string(),
        provenance: provenance(ctx, &commits),
        repositories: ctx
            .pipeline
            .repos
            .iter()
            .map(|repo| (repo.name.clone(), repo.split.clone()))
            .collect(),
        commits,
        claims,
        truth,
        arms,
        diffs,
        report,
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use super::*;
    use crate::cache::{Digest, Store};
    use crate::engine::{ItemOutput, ItemPlan, ItemResult};

    #[test]
    fn a_model_arms_verdicts_are_its_reduction_with_its_replicates_and_its_diff_limit() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("prompts")).unwrap();
        std::fs::write(root.path().join("prompts/a6.txt"), "judge").unwrap();
        let yaml = "version: 1\nname: t\nmodels:\n  judge: {provider: llama-server}\nsteps:\n  \
                    rank: {uses: rank-commits}\n  claims: {uses: mine-claims, needs: [rank]}\n  \
                    a6: {uses: llm-arm, needs: [claims], with: {question: a6_risk, prompt: prompts/a6.txt, \
                    model: judge, replicates: 2, diff_limit: 500}}\n";
        let registry = crate::steps::Registry::builtin();
        let pipeline =
            crate::pipeline::load_str(yaml, Path::new("pipeline.yaml"), root.path(), &registry)
                .unwrap_or_else(|problems| panic!("{problems}"));
        let store = Store::open(root.path().join("cache")).unwrap();
        let step = pipeline.step("a6").unwrap();
        let ctx = StepContext::new(&pipeline, step, &store);
        let prediction = |verdict| PredictionRecord {
            claim: "demo@abc::tests/test_a.py::test_a".into(),
            verdict,
            evidence: serde_json::json!({"answer": "VERDICT: FLIPPED"}),
            tokens_in: Some(10),
            tokens_out: Some(2),
            cost: Some(0.0),
        };
        // The step's items are its calls, not predictions: its verdicts are its reduction.
        let call = ItemOutput::records([serde_json::json!({"provider": "llama-server"})]);
        let scored = crate::steps::scored::Scored {
            predictions: vec![prediction(crate::records::Verdict::Flipped)],
            replicates: vec![vec![prediction(crate::records::Verdict::Held)]],
            ..Default::default()
        };
        let output = StepOutput {
            step: "a6".into(),
            kind: "llm-arm".into(),
            role: step.role.clone(),
            items: vec![ItemResult {
                plan: ItemPlan::new("demo@abc::tests/test_a.py::test_a"),
                digest: Digest::of(b"call"),
                output: Arc::new(call),
                cached: false,
                in_place: false,
            }],
            reduced: Some(crate::engine::Reduced {
                digest: Digest::of(b"reduced"),
                output: Arc::new(ItemOutput::records([scored])),
            }),
        };
        // Nothing in the results directory is read.
        assert!(!pipeline.results.exists());
        let read = arm_predictions(&output).unwrap();
        assert_eq!(
            read.predictions,
            [prediction(crate::records::Verdict::Flipped)]
        );
        assert_eq!(
            read.replicates,
            [vec![prediction(crate::records::Verdict::Held)]]
        );
        assert_eq!(diff_limit(&ctx, "a6"), Some(500));
    }
}
