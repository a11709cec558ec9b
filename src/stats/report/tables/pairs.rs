//! Paired McNemar comparisons between arms.

use super::{ReportConfig, Section, Table, comparison, context, names};
use crate::stats::document::StatsDocument;
use crate::stats::report::value::Value;

pub(super) fn pairs(document: &StatsDocument, config: &ReportConfig) -> Section {
    let title = "Paired comparisons (exact McNemar on per-claim correctness)".to_string();
    let rows: Vec<Vec<Value>> = config
        .pairs
        .iter()
        .filter_map(|(arm, other)| comparison(document, arm, other))
        .map(|found| {
            vec![
                Value::text(&found.arm),
                Value::text(&found.other),
                Value::Count(found.b),
                Value::Count(found.c),
                Value::P(found.p),
            ]
        })
        .collect();
    if rows.is_empty() {
        let wanted: Vec<String> = config
            .pairs
            .iter()
            .map(|(arm, other)| format!("`{arm}`/`{other}`"))
            .collect();
        return Section::Omitted {
            title,
            needs: format!(
                "they need both arms of one of the pairs {} in the pipeline.",
                wanted.join(", ")
            ),
        };
    }
    Section::Table(Table {
        slug: "comparisons".into(),
        title,
        context: context(document),
        columns: names(&[
            "arm",
            "other",
            "b (arm right, other wrong)",
            "c (reverse)",
            "p",
        ]),
        rows,
        notes: vec![],
    })
}
