//! The report's sections for the splits and controls: the fixed-repository comparison across a
//! training cutoff (Table IX) and the rename class.

use super::tables::{Section, Table};
use super::value::Value;
use crate::controls::cutoff::{CutoffComparison, SideSummary};
use crate::stats::document::StatsDocument;

fn side_context(label: &str, side: &SideSummary) -> String {
    format!(
        "{label}: {} claims, {} flipped (flip rate {})",
        side.claims,
        side.flipped,
        Value::Rate(side.flip_rate).display()
    )
}

fn comparison_table(
    slug: String,
    title: String,
    context: String,
    before: &SideSummary,
    after: &SideSummary,
    notes: Vec<String>,
) -> Table {
    let arms: Vec<&String> = before.arms.keys().collect();
    let rows = arms
        .iter()
        .map(|arm| {
            let cell = |side: &SideSummary| {
                side.arms
                    .get(*arm)
                    .map_or([Value::Rate(None), Value::Rate(None)], |stats| {
                        [
                            Value::RateInterval(stats.precision, stats.precision_ci),
                            Value::RateInterval(stats.recall, stats.recall_ci),
                        ]
                    })
            };
            let mut row = vec![Value::text(arm.as_str())];
            row.extend(cell(before));
            row.extend(cell(after));
            row
        })
        .collect();
    Table {
        slug,
        title,
        context,
        columns: [
            "arm",
            "before: precision [95% CI]",
            "before: recall [95% CI]",
            "after: precision [95% CI]",
            "after: recall [95% CI]",
        ]
        .map(str::to_string)
        .to_vec(),
        rows,
        notes,
    }
}

fn ordering_note(comparison: &CutoffComparison) -> String {
    let ordering = &comparison.ordering;
    if !ordering.reordered {
        return format!(
            "The arms keep their order by precision across the cutoff ({}).",
            ordering.before.join(" > ")
        );
    }
    let carriers = if ordering.carried_by.is_empty() {
        "no single repository's removal restores the order".to_string()
    } else {
        format!(
            "removing {} restores it, so the reordering is a repository effect, not a date effect",
            ordering.carried_by.join(", ")
        )
    };
    format!(
        "By precision the arms order {} before the cutoff and {} after it; {carriers}.",
        ordering.before.join(" > "),
        ordering.after.join(" > ")
    )
}

/// Table IX from a `cutoff` step: all repositories, then each repository on both sides.
pub fn cutoff(document: &StatsDocument) -> Option<Vec<Section>> {
    let comparison = document.cutoff.as_ref()?;
    let date = &comparison.cutoff.text;
    let mut notes = vec![ordering_note(comparison)];
    if !comparison.only_before.is_empty() || !comparison.only_after.is_empty() {
        notes.push(format!(
            "Only before the cutoff: {}. Only after it: {}.",
            list(&comparison.only_before),
            list(&comparison.only_after)
        ));
    }
    let mut sections = vec![Section::Table(comparison_table(
        "table9_cutoff_all".into(),
        format!("Table IX. Before and after the training cutoff {date}: every repository"),
        format!(
            "{} · {}",
            side_context("before", &comparison.before),
            side_context("after", &comparison.after)
        ),
        &comparison.before,
        &comparison.after,
        notes,
    ))];
    if comparison.repositories.is_empty() {
        sections.push(Section::Omitted {
            title: format!("Table IX. One repository on both sides of the cutoff {date}"),
            needs: "it needs a repository with labelled claims both before and after the cutoff."
                .into(),
        });
    }
    for across in &comparison.repositories {
        sections.push(Section::Table(comparison_table(
            format!("table9_cutoff_{}", across.repository),
            format!(
                "Table IX. `{}` on both sides of the training cutoff {date}",
                across.repository
            ),
            format!(
                "{} · {}",
                side_context("before", &across.before),
                side_context("after", &across.after)
            ),
            &across.before,
            &across.after,
            vec![
                "The repository is held fixed: what moves between the columns is the date alone."
                    .into(),
            ],
        )));
    }
    Some(sections)
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// Recall on flips caused by a pure rename of a referenced symbol, per split.
pub fn rename_class(document: &StatsDocument) -> Option<Section> {
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
