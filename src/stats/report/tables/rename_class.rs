//! The rename class: claims whose flip comes from a pure rename of a symbol they reference.

use super::{Section, Table, list};
use crate::stats::document::StatsDocument;
use crate::stats::report::value::Value;

/// Recall on flips caused by a pure rename of a referenced symbol, per split.
pub(super) fn rename_class(document: &StatsDocument) -> Option<Section> {
    let stats = document.rename_class.as_ref()?;
    let title = "Rename class".to_string();
    let arms: Vec<&String> = stats
        .splits
        .first()
        .map(|split| split.detected.keys().collect())
        .unwrap_or_default();
    let mut rows = Vec::new();
    for split in &stats.splits {
        let n = split.flipped.len() as u64;
        for arm in &arms {
            let detected = split.detected.get(*arm).copied().unwrap_or(0);
            rows.push(vec![
                Value::text(&split.split),
                Value::text(arm.as_str()),
                Value::Count(n),
                Value::Count(detected),
                if split.evaluable {
                    Value::Rate(split.recall.get(*arm).copied().flatten())
                } else {
                    Value::text(format!("not evaluable (n = {n})"))
                },
            ]);
        }
    }
    let mut notes = vec![format!(
        "A claim is in the class when its test references a symbol its commit removed and added \
         back, body unchanged, under another name, and it flipped; a recall is given only from \
         {} such claims on.",
        stats.min_evaluable
    )];
    for split in &stats.splits {
        notes.push(format!(
            "{}: {} flipped ({}), {} held claims reference a renamed symbol too.",
            split.split,
            split.flipped.len(),
            list(&split.flipped),
            split.held
        ));
    }
    if stats.splits.is_empty() {
        notes.push("No claim references a purely renamed symbol: the class is empty.".into());
    }
    Some(Section::Table(Table {
        slug: "rename_class".into(),
        title,
        context: "Per split, over every labelled claim of the oracle".into(),
        columns: ["split", "arm", "flipped in class", "detected", "recall"]
            .map(str::to_string)
            .to_vec(),
        rows,
        notes,
    }))
}
