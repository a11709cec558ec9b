//! Every file the report step writes, rendered in memory: `report.md`, `tables/<slug>.csv` and
//! `figures/<name>.svg`, by path relative to the results directory.

use std::collections::BTreeMap;

use super::tables::{ReportConfig, Section, build};
use super::{csv, markdown};
use crate::stats::document::{ArmStats, StatsDocument};
use crate::stats::figures::{self, FigureError};

/// Where the post-cutoff split's report goes, beside the whole set's.
pub const POST_CUTOFF_DIR: &str = "post-cutoff";

/// The files of the report, by relative path. When the statistics hold a post-cutoff split, every
/// table is rendered again on it into `post-cutoff/` (its own `report.md`, tables and figures),
/// and the report says so under its title.
pub fn render(
    title: &str,
    document: &StatsDocument,
    config: &ReportConfig,
) -> Result<BTreeMap<String, Vec<u8>>, FigureError> {
    let sections = build(document, config);
    let mut lead = Vec::new();
    let mut files = BTreeMap::new();
    if let Some(post) = &document.post_cutoff {
        lead.push(format!(
            "Every table again on the claims whose child commit is after the training cutoff {} \
             (the split of step `{}`): [{POST_CUTOFF_DIR}/report.md]({POST_CUTOFF_DIR}/report.md).",
            post.cutoff.text, post.step
        ));
        // The rankings and the comparison across the cutoff are about the whole set.
        let sections: Vec<Section> = build(&post.document, config)
            .into_iter()
            .filter(|section| !about_the_whole_set(section))
            .collect();
        let post_title = format!("{title}: after the training cutoff {}", post.cutoff.text);
        let lead = vec![format!(
            "The claims of the report one directory up whose child commit is dated after {} \
             (step `{}`), every table again.",
            post.cutoff.text, post.step
        )];
        for (path, bytes) in render_sections(&post_title, &lead, &post.document, config, &sections)?
        {
            files.insert(format!("{POST_CUTOFF_DIR}/{path}"), bytes);
        }
    }
    files.extend(render_sections(title, &lead, document, config, &sections)?);
    Ok(files)
}

/// A section that describes the whole set against its parts: left out of a split's report.
fn about_the_whole_set(section: &Section) -> bool {
    let title = match section {
        Section::Table(table) => table.title.as_str(),
        Section::Omitted { title, .. } => title.as_str(),
    };
    title.starts_with("Flip density by ranking") || title.starts_with("Table IX")
}

/// `report.md` with `sections` under `lead`, its tables' CSVs and its figures.
fn render_sections(
    title: &str,
    lead: &[String],
    document: &StatsDocument,
    config: &ReportConfig,
    sections: &[Section],
) -> Result<BTreeMap<String, Vec<u8>>, FigureError> {
    let mut files = BTreeMap::new();
    for section in sections {
        if let Section::Table(table) = section {
            files.insert(
                format!("tables/{}.csv", table.slug),
                csv::render(table).into_bytes(),
            );
        }
    }

    let mut preamble = vec![preamble(document)];
    preamble.extend(lead.iter().cloned());
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
            figures::cost(document, &priced, &document.frontier)?.into_bytes(),
        );
        figure_lines.push("![Cost per claim against precision](figures/cost.svg)".to_string());
    }
    if !figure_lines.is_empty() {
        preamble.push(String::new());
        preamble.push(figure_lines.join("\n"));
    }
    files.insert(
        "report.md".into(),
        markdown::render(title, &preamble, sections).into_bytes(),
    );
    Ok(files)
}

/// The line under the title: where the labels come from, how many, the natural rate.
pub fn preamble(document: &StatsDocument) -> String {
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
