//! The `cascade` step kind: the arms of a pipeline composed the way `claimflow check` runs them,
//! cheapest first, so that `stats` scores the cascade beside the arms it is made of.
//!
//! ```yaml
//! cascade: {uses: cascade, needs: [a4_sampled, a6_risk], with: {stages: [a4_sampled, a6_risk]}}
//! ```
//! `stages` names needed arm steps in order. Every stage but the last only clears: a claim it
//! judges held is held, decided there, at that stage's cost; what it judges flipped or cannot
//! judge passes on (static anchoring over-fires: impact is not invalidation). The last stage
//! decides what reaches it, and a claim it gives no verdict stays without one. The claims scored
//! are the last stage's (a model arm judges a sample); each prediction carries the tokens and
//! cost of the calls the cascade would have made, so only the claims the cheaper stages left are
//! charged the model's call.
//!
//! The model stage's answers are the model arm step's own (the same calls, keyed the same way as
//! `check`'s model stage keys them), so scoring the cascade asks no model again. On mined claims
//! `check`'s execution stage would be the oracle itself, so a pipeline's cascade uses the static
//! and model stages.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::engine::{
    ItemOutput, ItemPlan, ItemResult, ParamsDecl, PipelineProblem, Role, StepContext, StepError,
    StepKind, StepName, Upstream,
};
use crate::pipeline::{Pipeline, StepSpec};
use crate::records::{PredictionRecord, Verdict};

/// The parameters of `uses: cascade`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CascadeParams {
    /// The arm steps, cheapest first (each in `needs`): all but the last clear claims they judge
    /// held; the last decides the rest.
    #[schemars(length(min = 2))]
    pub stages: Vec<StepName>,
}

/// The `cascade` step kind.
pub struct CascadeStep;

/// The predictions a needed arm step made, whatever its kind (a model arm's from its reduction).
fn predictions_of(
    ctx: &StepContext,
    upstream: &Upstream,
    step: &str,
) -> Result<Vec<PredictionRecord>, StepError> {
    let output = upstream.steps.get(step).ok_or_else(|| {
        StepError::Input(format!(
            "step `{}`: stage `{step}` must be one of its `needs`",
            ctx.step.name
        ))
    })?;
    super::scored::predictions(output)
}

/// The cascade's prediction for each claim of the last stage.
fn compose(stages: &[(String, Vec<PredictionRecord>)]) -> Vec<PredictionRecord> {
    let Some(((last_name, last), earlier)) = stages.split_last() else {
        return Vec::new();
    };
    let earlier: Vec<(&String, BTreeMap<&str, &PredictionRecord>)> = earlier
        .iter()
        .map(|(name, predictions)| {
            let by_claim = predictions
                .iter()
                .map(|prediction| (prediction.claim.as_str(), prediction))
                .collect();
            (name, by_claim)
        })
        .collect();
    let mut composed = Vec::new();
    for final_prediction in last {
        let mut passed = Vec::new();
        let mut cleared = None;
        for (name, by_claim) in &earlier {
            match by_claim.get(final_prediction.claim.as_str()) {
                Some(prediction) if prediction.verdict == Verdict::Held => {
                    cleared = Some((*name, *prediction));
                    break;
                }
                Some(prediction) => {
                    passed.push(json!({"stage": name, "verdict": prediction.verdict}))
                }
                None => passed.push(json!({"stage": name, "verdict": "not judged"})),
            }
        }
        composed.push(match cleared {
            Some((name, prediction)) => PredictionRecord {
                claim: final_prediction.claim.clone(),
                verdict: Verdict::Held,
                evidence: json!({"decided_by": name, "passed_on": passed, "evidence": prediction.evidence}),
                tokens_in: Some(prediction.tokens_in.unwrap_or(0)),
                tokens_out: Some(prediction.tokens_out.unwrap_or(0)),
                cost: Some(prediction.cost.unwrap_or(0.0)),
            },
            None => PredictionRecord {
                claim: final_prediction.claim.clone(),
                verdict: final_prediction.verdict,
                evidence: json!({
                    "decided_by": (final_prediction.verdict != Verdict::None).then_some(last_name),
                    "passed_on": passed,
                    "evidence": final_prediction.evidence,
                }),
                tokens_in: final_prediction.tokens_in,
                tokens_out: final_prediction.tokens_out,
                cost: final_prediction.cost,
            },
        });
    }
    composed
}

impl StepKind for CascadeStep {
    fn name(&self) -> &'static str {
        "cascade"
    }

    fn version(&self) -> u32 {
        1
    }

    fn about(&self) -> &'static str {
        "arms composed cheapest first as `claimflow check` runs them: earlier stages clear, the last decides"
    }

    fn params(&self) -> ParamsDecl {
        ParamsDecl::of::<CascadeParams>()
    }

    fn role(&self, _step: &StepSpec) -> Role {
        Role::Predictions {
            strategy: "cascade".to_string(),
            model: None,
        }
    }

    fn check_pipeline(&self, step: &StepSpec, pipeline: &Pipeline) -> Vec<PipelineProblem> {
        let Some(params) = step.params.get::<CascadeParams>() else {
            return Vec::new();
        };
        let mut problems = Vec::new();
        for (index, stage) in params.stages.iter().enumerate() {
            let predicts = pipeline
                .step(stage.as_str())
                .is_some_and(|spec| matches!(spec.role, Role::Predictions { .. }));
            if !predicts {
                problems.push(PipelineProblem {
                    param: Some("stages".to_string()),
                    index: Some(index),
                    message: format!(
                        "stage `{}` of step `{}` is not an arm step (its records are not predictions)",
                        stage.as_str(),
                        step.name
                    ),
                    hint: "name arm steps (`uses: arm` or `uses: llm-arm`), cheapest first".to_string(),
                });
            }
        }
        problems
    }

    fn items(&self, ctx: &StepContext, upstream: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        let params: &CascadeParams = ctx.params()?;
        let outputs = params
            .stages
            .iter()
            .filter_map(|stage| upstream.steps.get(stage.as_str()).map(AsRef::as_ref));
        Ok(vec![ItemPlan::new("cascade").read_outputs(outputs)])
    }

    fn run(
        &self,
        ctx: &StepContext,
        _item: &ItemPlan,
        upstream: &Upstream,
    ) -> Result<ItemOutput, StepError> {
        let params: &CascadeParams = ctx.params()?;
        let mut stages = Vec::new();
        for stage in &params.stages {
            stages.push((
                stage.to_string(),
                predictions_of(ctx, upstream, stage.as_str())?,
            ));
        }
        Ok(ItemOutput::records(compose(&stages)))
    }

    fn publish(&self, ctx: &StepContext, items: &[ItemResult]) -> Result<(), StepError> {
        let mut predictions = Vec::new();
        for item in items {
            predictions.extend(item.output.decode::<PredictionRecord>()?);
        }
        ctx.write_jsonl(&format!("predictions/{}.jsonl", ctx.step.name), predictions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prediction(claim: &str, verdict: Verdict, cost: Option<f64>) -> PredictionRecord {
        PredictionRecord {
            claim: claim.into(),
            verdict,
            evidence: json!({}),
            tokens_in: cost.map(|_| 100),
            tokens_out: cost.map(|_| 5),
            cost,
        }
    }

    #[test]
    fn earlier_stages_clear_and_the_last_decides_and_is_charged_only_for_what_it_decides() {
        let a4 = vec![
            prediction("held-by-a4", Verdict::Held, None),
            prediction("touched", Verdict::Flipped, None),
            prediction("unparsed", Verdict::None, None),
        ];
        let model = vec![
            prediction("held-by-a4", Verdict::Flipped, Some(0.5)),
            prediction("touched", Verdict::Flipped, Some(0.5)),
            prediction("unparsed", Verdict::None, Some(0.5)),
            prediction("not-in-a4", Verdict::Held, Some(0.5)),
        ];
        let composed = compose(&[("a4".into(), a4), ("a6_risk".into(), model)]);
        let got: Vec<(&str, Verdict, Option<f64>)> = composed
            .iter()
            .map(|p| (p.claim.as_str(), p.verdict, p.cost))
            .collect();
        assert_eq!(
            got,
            vec![
                ("held-by-a4", Verdict::Held, Some(0.0)),
                ("touched", Verdict::Flipped, Some(0.5)),
                ("unparsed", Verdict::None, Some(0.5)),
                ("not-in-a4", Verdict::Held, Some(0.5)),
            ]
        );
        assert_eq!(composed[0].evidence["decided_by"], "a4");
        assert_eq!(composed[1].evidence["decided_by"], "a6_risk");
        assert_eq!(composed[2].evidence["decided_by"], json!(null));
    }
}
