//! Table VIII: the model ladder.

use std::collections::BTreeSet;

use super::{ReportConfig, Section, Table, context, describe, names, present};
use crate::stats::document::{ArmStats, StatsDocument};
use crate::stats::report::value::Value;

pub(super) fn ladder(document: &StatsDocument, config: &ReportConfig) -> Section {
    let title = "Table VIII. Model ladder".to_string();
    let candidates: Vec<String> = match &config.ladder {
        Some(arms) => arms.clone(),
        None => document
            .arms
            .iter()
            .filter(|(_, stats)| stats.step.model.is_some())
            .map(|(step, _)| step.clone())
            .collect(),
    };
    let mut shown: Vec<(&str, &ArmStats)> = present(document, &candidates)
        .into_iter()
        .filter(|(_, stats)| stats.step.model.is_some())
        .collect();
    let models: BTreeSet<&str> = shown
        .iter()
        .filter_map(|(_, stats)| stats.step.model.as_deref())
        .collect();
    if models.is_empty() {
        return Section::Omitted {
            title,
            needs: "it needs model arms (`with: {model: …}`); a list `model: [a, b]` makes a rung \
                    per `models:` entry."
                .into(),
        };
    }
    shown.sort_by(|left, right| {
        let price = |stats: &ArmStats| stats.step.price_input.unwrap_or(f64::INFINITY);
        (describe(left.0, left.1)
            .split(" (")
            .next()
            .map(str::to_string))
        .cmp(
            &describe(right.0, right.1)
                .split(" (")
                .next()
                .map(str::to_string),
        )
        .then(price(left.1).total_cmp(&price(right.1)))
        .then(left.0.cmp(right.0))
    });
    let frontier: BTreeSet<&str> = document.frontier.iter().map(String::as_str).collect();
    let rows = shown
        .iter()
        .map(|(step, stats)| {
            vec![
                Value::text(*step),
                Value::text(match (&stats.step.model, &stats.step.model_id) {
                    (Some(entry), Some(id)) => format!("{entry} ({id})"),
                    (entry, _) => entry.clone().unwrap_or_default(),
                }),
                Value::Dollars(stats.step.price_input),
                Value::Dollars(stats.step.price_output),
                Value::RateInterval(stats.precision, stats.precision_ci),
                Value::RateInterval(stats.recall, stats.recall_ci),
                Value::Rate(stats.fire_rate),
                Value::Dollars(stats.cost.as_ref().map(|cost| cost.per_claim)),
                Value::text(if frontier.contains(step) { "yes" } else { "no" }),
            ]
        })
        .collect();
    Section::Table(Table {
        slug: "table8_models".into(),
        title,
        context: context(document),
        columns: names(&[
            "arm",
            "model",
            "$/M input",
            "$/M output",
            "precision [95% CI]",
            "recall [95% CI]",
            "fire rate",
            "cost per claim",
            "on cost frontier",
        ]),
        rows,
        notes: {
            let mut notes = vec![
                "On the cost frontier: no arm is at most as expensive and at least as precise."
                    .to_string(),
            ];
            if models.len() == 1 {
                notes.push(
                    "One model: a list `model: [a, b]` on the arm steps adds a rung per \
                     `models:` entry."
                        .to_string(),
                );
            }
            notes
        },
    })
}
