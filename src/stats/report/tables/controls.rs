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
            let arm_fire_rate = document
                .arms
                .get(&control.of)
                .and_then(|stats| stats.fire_rate);
            vec![
                Value::text(step),
                Value::text(&control.of),
                Value::text(control.by.as_deref().unwrap_or("wraps the arm")),
                Value::Rate(control.metrics.fire_rate),
                Value::Rate(arm_fire_rate),
                Value::Rate(control.agreement),
                Value::RateInterval(control.metrics.precision, control.metrics.precision_ci),
                Value::Rate(control.metrics.coverage),
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
            "fire rate",
            "arm's fire rate",
            "agreement with arm",
            "precision [95% CI]",
            "coverage",
        ]),
        rows,
        notes: vec![
            "The fire rate is the control's, on the manipulated claims (each claim shown \
             another commit's diff, or its paraphrased test); the arm's fire rate is on the real \
             pairs. An arm that reads the claim's dependence on the diff fires far less on \
             shuffled pairs."
                .into(),
        ],
    })
}
