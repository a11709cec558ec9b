//! Table III: pytest-testmon against the arm it is set against.

use super::{
    ReportConfig, Section, Table, comparison_note, context, missing, names, present, scored_row,
};
use crate::stats::document::StatsDocument;
use crate::stats::report::value::Value;

pub(super) fn testmon(document: &StatsDocument, config: &ReportConfig) -> Section {
    let title = "Table III. Against a real test-selection tool".to_string();
    let absent = missing(document, &config.testmon);
    if !absent.is_empty() || config.testmon.is_empty() {
        return Section::Omitted {
            title,
            needs: format!("it needs the arm steps {}.", absent.join(", ")),
        };
    }
    let rows = present(document, &config.testmon)
        .into_iter()
        .map(|(step, stats)| {
            scored_row(
                step,
                stats,
                [
                    Value::Rate(stats.coverage),
                    Value::Rate(stats.recall_judged),
                    Value::Rate(stats.staleness),
                    Value::Rate(stats.budget),
                ],
            )
        })
        .collect();
    let mut notes = vec![
        "Staleness: flipped claims served as held. Budget: the share of claims re-verified. \
         Claims without a verdict are charged as holds; recall (judged) is the recall over the \
         claims with one."
            .to_string(),
    ];
    if let [first, second, ..] = config.testmon.as_slice() {
        notes.extend(comparison_note(document, second, first));
    }
    Section::Table(Table {
        slug: "table3_testmon".into(),
        title,
        context: context(document),
        columns: names(&[
            "arm",
            "what",
            "precision [95% CI]",
            "recall [95% CI]",
            "coverage",
            "recall (judged)",
            "staleness",
            "budget",
        ]),
        rows,
        notes,
    })
}
