//! Table V: leave one repository out.

use super::{Section, Table, context};
use crate::stats::document::StatsDocument;
use crate::stats::report::value::Value;

pub(super) fn loro(document: &StatsDocument) -> Vec<Section> {
    let title = "Table V. Leave-one-repository-out".to_string();
    if document.loro.is_empty() {
        return vec![Section::Omitted {
            title,
            needs: "it needs the stats step's `compare` pairs (default `a6_risk` against `a4`) \
                    to name two arms in the pipeline."
                .into(),
        }];
    }
    document
        .loro
        .iter()
        .map(|analysis| {
            let mut rows = vec![vec![
                Value::text("(none)"),
                Value::Count(0),
                Value::Count(0),
                Value::Rate(document.arms[&analysis.arm].precision),
                Value::Rate(document.arms[&analysis.other].precision),
                Value::Gap(analysis.gap),
            ]];
            rows.extend(analysis.rows.iter().map(|row| {
                vec![
                    Value::text(&row.repository),
                    Value::Count(row.claims),
                    Value::Count(row.flips),
                    Value::Rate(row.precision),
                    Value::Rate(row.other_precision),
                    Value::Gap(row.gap),
                ]
            }));
            let mut notes = Vec::new();
            if let (Some(repository), Some(gap)) = (&analysis.smallest, analysis.smallest_gap) {
                notes.push(format!(
                    "The smallest gap, {}, is left when `{repository}` is removed.",
                    Value::Gap(Some(gap)).display()
                ));
            }
            Section::Table(Table {
                slug: format!("table5_loro_{}_{}", analysis.arm, analysis.other),
                title: format!(
                    "{title}: precision of `{}` minus `{}`",
                    analysis.arm, analysis.other
                ),
                context: context(document),
                columns: vec![
                    "repository left out".into(),
                    "claims removed".into(),
                    "flips removed".into(),
                    format!("{} precision", analysis.arm),
                    format!("{} precision", analysis.other),
                    "gap".into(),
                ],
                rows,
                notes,
            })
        })
        .collect()
}
