//! Table VI: the practitioner's view, precision reweighted to the natural flip rate.

use super::{ReportConfig, Section, Table, context, describe, missing, names, present};
use crate::stats::document::StatsDocument;
use crate::stats::report::value::Value;

pub(super) fn practitioner(document: &StatsDocument, config: &ReportConfig) -> Section {
    let title = "Table VI. What a practitioner buys".to_string();
    let shown = present(document, &config.practitioner);
    if shown.is_empty() {
        return Section::Omitted {
            title,
            needs: format!(
                "it needs at least one of the arm steps {}.",
                missing(document, &config.practitioner).join(", ")
            ),
        };
    }
    let natural = document.natural_rate.as_ref();
    let priced = shown.iter().any(|(_, stats)| stats.cost.is_some());
    let mut columns = names(&["arm", "what", "staleness", "budget", "precision"]);
    if let Some(rate) = natural {
        columns.push(format!("precision at natural rate {:.4}", rate.value));
    }
    if priced {
        columns.push("cost per claim".into());
    }
    let rows = shown
        .iter()
        .map(|(step, stats)| {
            let mut row = vec![
                Value::text(*step),
                Value::text(describe(step, stats)),
                Value::Rate(stats.staleness),
                Value::Rate(stats.budget),
                Value::Rate(stats.precision),
            ];
            if natural.is_some() {
                row.push(Value::Rate(stats.natural_precision));
            }
            if priced {
                row.push(Value::Dollars(
                    stats.cost.as_ref().map(|cost| cost.per_claim),
                ));
            }
            row
        })
        .collect();
    let mut notes = vec![
        "Staleness: the share of flipped claims served as held. Budget: the share of the store \
         re-verified (the fire rate)."
            .to_string(),
    ];
    if let Some(rate) = natural {
        notes.push(format!(
            "Natural flip rate {:.4} (source: {}) against the evaluated claims' flip rate {}: \
             precision reweighted so held claims weigh as they would at the natural rate.",
            rate.value,
            rate.source,
            Value::Rate(document.sample.base_rate).display()
        ));
    }
    Section::Table(Table {
        slug: "table6_practitioner".into(),
        title,
        context: context(document),
        columns,
        rows,
        notes,
    })
}
