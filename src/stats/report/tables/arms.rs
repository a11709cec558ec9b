//! Table II: the arms on the evaluated split.

use super::{
    ARM_COLUMNS, ReportConfig, Section, Table, arm_row, context, interval_note, missing, names,
    present, selection_note,
};
use crate::stats::document::StatsDocument;

pub(super) fn arms(document: &StatsDocument, config: &ReportConfig) -> Section {
    let title = "Table II. Arms on the evaluated split".to_string();
    let shown = present(document, &config.arms);
    if shown.is_empty() {
        return Section::Omitted {
            title,
            needs: format!(
                "it needs at least one of the arm steps {}.",
                missing(document, &config.arms).join(", ")
            ),
        };
    }
    let mut notes = vec![interval_note(document)];
    notes.extend(selection_note(document));
    let absent = missing(document, &config.arms);
    if !absent.is_empty() {
        notes.push(format!("Not in this pipeline: {}.", absent.join(", ")));
    }
    Section::Table(Table {
        slug: "table2_arms".into(),
        title,
        context: context(document),
        columns: names(ARM_COLUMNS),
        rows: shown
            .iter()
            .map(|(step, stats)| arm_row(step, stats))
            .collect(),
        notes,
    })
}
