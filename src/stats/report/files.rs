//! Every file the report step writes, rendered in memory: `report.md`, `tables/<slug>.csv` and
//! `figures/<name>.svg`, by path relative to the results directory.

use std::collections::BTreeMap;

use super::tables::{ReportConfig, Section, build};
use super::{csv, markdown};
use crate::stats::document::{ArmStats, StatsDocument};
use crate::stats::figures::{self, FigureError};

/// The files of the report, by relative path.
pub fn render(
    title: &str,
    document: &StatsDocument,
    config: &ReportConfig,
) -> Result<BTreeMap<String, Vec<u8>>, FigureError> {
    let sections = build(document, config);
    let mut files = BTreeMap::new();
    for section in &sections {
        if let Section::Table(table) = section {
            files.insert(
                format!("tables/{}.csv", table.slug),
                csv::render(table).into_bytes(),
            );
        }
    }

    let mut preamble = vec![preamble(document)];
    let pick = |names: &[String]| -> Vec<(&str, &ArmStats)> {
        names
            .iter()
            .filter_map(|name| {
                document
                    .arms
                    .get_key_value(name)
                    .map(|(name, stats)| (name.as_str(), stats))
            })
            .collect()
    };
    let mut figure_lines = Vec::new();
    let shown = pick(&config.arms);
    if !shown.is_empty() {
        files.insert(
            "figures/arms.svg".into(),
            figures::arms(document, &shown)?.into_bytes(),
        );
        figure_lines.push("![Precision and recall per arm](figures/arms.svg)".to_string());
    }
    let four_cells = sections.iter().any(|section| {
        matches!(section, Section::Table(table) if table.slug == "table4_question_information")
    });
    if four_cells {
        let mut order = vec![config.diff_only.clone(), config.diff_with_claim.clone()];
        order.extend(config.claim_question.iter().cloned());
        files.insert(
            "figures/question_information.svg".into(),
            figures::question_information(document, &pick(&order))?.into_bytes(),
        );
        figure_lines.push(
            "![Precision by question and information](figures/question_information.svg)"
                .to_string(),
        );
    }
    let priced = figures::priced(document);
    if !priced.is_empty() {
        files.insert(
            "figures/cost.svg".into(),
            figures::cost(&priced, &document.frontier)?.into_bytes(),
        );
        figure_lines.push("![Cost per claim against precision](figures/cost.svg)".to_string());
    }
    if !figure_lines.is_empty() {
        preamble.push(String::new());
        preamble.push(figure_lines.join("\n"));
    }
    files.insert(
        "report.md".into(),
        markdown::render(title, &preamble, &sections).into_bytes(),
    );
    Ok(files)
}

fn preamble(document: &StatsDocument) -> String {
    let sample = &document.sample;
    let mut line = format!(
        "Labels from step `{}`; {} labelled claims from {} repositories and {} commits.",
        sample.labels_from, sample.claims, sample.repositories, sample.commits
    );
    if let Some(rate) = &document.natural_rate {
        line.push_str(&format!(
            " Natural flip rate {:.4} ({}).",
            rate.value, rate.source
        ));
    }
    line
}
