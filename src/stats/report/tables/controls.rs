//! The controls: each control's fire rate and agreement next to its arm's.

use super::{Section, Table, context, names};
use crate::stats::document::StatsDocument;
use crate::stats::report::value::Value;

pub(super) fn controls(document: &StatsDocument) -> Section {
    let title = "Controls".to_string();
    if document.controls.is_empty() {
        return Section::Omitted {
            title,
            needs: "they need an arm run on a `shuffle` step's pairs (the shuffled-diff null) \
                    or on a `paraphrase` step's claims, or a step that wraps an arm \
                    (`with: {arm: <step>}`)."
                .into(),
        };
    }
    let rows = document
        .controls
        .iter()
        .map(|(step, control)| {
            let arm = document.arms.get(&control.of);
            let same = control.arm_on_same_claims.as_ref();
            let arm_fire_rate = match same {
                Some(same) => same.fire_rate,
                None => arm.and_then(|stats| stats.fire_rate),
            };
            let run_to_run = arm
                .and_then(|stats| stats.step.replicates.as_ref())
                .and_then(|agreement| agreement.pooled);
            vec![
                Value::text(step),
                Value::text(&control.of),
                Value::text(control.by.as_deref().unwrap_or("wraps the arm")),
                Value::Rate(control.metrics.coverage),
                Value::Count(control.compared),
                Value::Rate(control.metrics.fire_rate),
                Value::Rate(arm_fire_rate),
                Value::Rate(control.agreement),
                Value::Rate(run_to_run),
                Value::RateInterval(control.metrics.precision, control.metrics.precision_ci),
                Value::RateInterval(
                    same.and_then(|same| same.precision),
                    same.and_then(|same| same.precision_ci),
                ),
            ]
        })
        .collect();
    Section::Table(Table {
        slug: "controls".into(),
        title,
        context: context(document),
        columns: names(&[
            "control",
            "of arm",
            "manipulation",
            "coverage",
            "claims both judged",
            "fire rate",
            "arm's fire rate",
            "agreement with arm",
            "arm's run-to-run agreement",
            "precision [95% CI]",
            "arm's precision [95% CI]",
        ]),
        rows,
        notes: vec![
            "The fire rate is the control's, on the manipulated claims (each claim shown \
             another commit's diff, or its paraphrased test); the arm's fire rate and precision \
             are the arm's on the real claims the control judged (a paraphrase refused with why \
             has no verdict, and its claim counts for neither). An arm that reads the claim's \
             dependence on the diff fires far less on shuffled pairs."
                .into(),
            "Agreement with the arm counts the claims both judged. Read it against the arm's \
             run-to-run agreement: the same calls asked again (`replicates: k` on a model arm); \
             unknown when the arm was not replicated. An arm that reads no model gives the same \
             verdicts on every run."
                .into(),
        ],
    })
}
