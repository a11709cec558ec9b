//! Table VII: the claim-relative arm on prose renderings of the claims.

use super::{
    ReportConfig, Section, Table, comparison_note, context, missing, names, present, scored_row,
};
use crate::stats::document::StatsDocument;
use crate::stats::report::value::Value;

pub(super) fn prose(document: &StatsDocument, config: &ReportConfig) -> Section {
    let title = "Table VII. Prose claims".to_string();
    let absent = missing(document, [&config.prose, &config.prose_reference]);
    if !absent.is_empty() {
        return Section::Omitted {
            title,
            needs: format!(
                "it needs the prose arm and the arm it mirrors: missing {}.",
                absent.join(", ")
            ),
        };
    }
    let mut order = vec![config.prose.clone(), config.prose_reference.clone()];
    order.extend(config.prose_baselines.iter().cloned());
    let rows = present(document, &order)
        .into_iter()
        .map(|(step, stats)| scored_row(step, stats, [Value::Rate(stats.coverage)]))
        .collect();
    let notes = order[1..]
        .iter()
        .filter_map(|other| comparison_note(document, &config.prose, other))
        .collect();
    Section::Table(Table {
        slug: "table7_prose".into(),
        title,
        context: context(document),
        columns: names(&[
            "arm",
            "what",
            "precision [95% CI]",
            "recall [95% CI]",
            "coverage",
        ]),
        rows,
        notes,
    })
}
