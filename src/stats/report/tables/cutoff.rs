//! Table IX: one repository on both sides of a split or of a training cutoff.

use std::collections::{BTreeMap, BTreeSet};

use super::{ReportConfig, Section, Table, context, list};
use crate::stats::confusion::Confusion;
use crate::stats::cutoff::{CutoffComparison, SideSummary};
use crate::stats::document::StatsDocument;
use crate::stats::report::value::Value;

pub(super) fn cutoff(document: &StatsDocument, config: &ReportConfig) -> Vec<Section> {
    let title = "Table IX. One repository on both sides of a split";
    // Repositories listed under two names with the same source, evaluated together.
    let mut by_source: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
    for (name, info) in &document.repositories {
        if let Some(split) = info.split.as_deref()
            && document.by_repository.contains_key(name)
        {
            by_source
                .entry(info.source.as_str())
                .or_default()
                .push((name.as_str(), split));
        }
    }
    by_source.retain(|_, names| {
        names
            .iter()
            .map(|(_, split)| *split)
            .collect::<BTreeSet<_>>()
            .len()
            > 1
    });
    let arms: Vec<&String> = config
        .cutoff
        .iter()
        .filter(|arm| document.arms.contains_key(*arm))
        .collect();
    if by_source.is_empty() || arms.is_empty() {
        return vec![Section::Omitted {
            title: title.to_string(),
            needs: "it needs one repository (the same url or path) listed under two splits and \
                    scored together (no `split:` on the stats step), and one of the arms \
                    configured for it."
                .into(),
        }];
    }
    by_source
        .into_iter()
        .enumerate()
        .map(|(index, (source, repositories))| {
            let mut columns = vec!["arm".to_string()];
            for (name, split) in &repositories {
                columns.push(format!("{split} ({name}) precision"));
                columns.push(format!("{split} ({name}) recall"));
            }
            let rows = arms
                .iter()
                .map(|arm| {
                    let mut row = vec![Value::text(arm.as_str())];
                    for (name, _) in &repositories {
                        let confusion: Confusion = document.by_repository[*name]
                            .get(*arm)
                            .copied()
                            .unwrap_or_default();
                        row.push(Value::Rate(confusion.precision()));
                        row.push(Value::Rate(confusion.recall()));
                    }
                    row
                })
                .collect();
            let counts: Vec<String> = repositories
                .iter()
                .map(|(name, split)| {
                    let any = document.by_repository[*name].values().next().copied();
                    let confusion = any.unwrap_or_default();
                    format!(
                        "{split}: {} claims, {} flipped",
                        confusion.total(),
                        confusion.flipped()
                    )
                })
                .collect();
            Section::Table(Table {
                slug: format!("table9_fixed_repository_{}", index + 1),
                title: format!("{title}: `{source}`"),
                context: format!("{} · {}", context(document), counts.join("; ")),
                columns,
                rows,
                notes: vec![],
            })
        })
        .collect()
}

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
pub(super) fn across(document: &StatsDocument) -> Option<Vec<Section>> {
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
