//! What each table of the report holds, after the paper's Tables I–IX.
//!
//! Arms are named by step. Which arms a table compares is configurable ([`ReportConfig`], the
//! `report` step's `with:`), with the shipped pipelines' names as defaults. A table whose arms or
//! controls are not all in `stats.json` is a [`Section::Omitted`]: one line saying what would fill
//! it, never a table of blanks.

mod arms;
mod controls;
mod corpus;
mod cutoff;
mod ladder;
mod loro;
mod pairs;
mod practitioner;
mod prose;
mod rankings;
mod rename_class;
mod replicates;
mod spend;
mod testmon;
mod two_by_two;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::value::Value;
use crate::stats::document::{ArmStats, StatsDocument};
use crate::stats::mcnemar::McNemar;

/// Which arms each table compares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReportConfig {
    /// Table II: the arms on the evaluated split.
    pub arms: Vec<String>,
    /// Paired McNemar comparisons to list, `[arm, other]`.
    pub pairs: Vec<(String, String)>,
    /// Table III: testmon and the arm it is set against.
    pub testmon: Vec<String>,
    /// Table IV: the behaviour question on the diff alone (A5).
    pub diff_only: String,
    /// Table IV: the behaviour question shown the claim too (A5C).
    pub diff_with_claim: String,
    /// Table IV: the claim question (A6 base, A6 risk).
    pub claim_question: Vec<String>,
    /// Table VI: the arms in the practitioner's view.
    pub practitioner: Vec<String>,
    /// Table VII: the arm run on prose renderings of the claims.
    pub prose: String,
    /// Table VII: the same arm on the code form.
    pub prose_reference: String,
    /// Table VII: the baselines prose is compared with.
    pub prose_baselines: Vec<String>,
    /// Table VIII: the model arms; by default every arm that names a model.
    pub ladder: Option<Vec<String>>,
    /// Table IX: the arms compared on a repository present in two splits.
    pub cutoff: Vec<String>,
}

fn names(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| name.to_string()).collect()
}

impl Default for ReportConfig {
    fn default() -> Self {
        let pair = |first: &str, second: &str| (first.to_string(), second.to_string());
        ReportConfig {
            arms: names(&["a0", "a1", "a3", "a4", "a4b", "a5", "a6_risk"]),
            pairs: vec![
                pair("a6_risk", "a4"),
                pair("a6_risk", "a4b"),
                pair("a6_risk", "a5c"),
                pair("a6_risk", "prose"),
                pair("a4", "a3"),
            ],
            testmon: names(&["a4b", "a6_risk"]),
            diff_only: "a5".into(),
            diff_with_claim: "a5c".into(),
            claim_question: names(&["a6_base", "a6_risk"]),
            practitioner: names(&["a0", "a3", "a4", "a4b", "a5", "a6_risk"]),
            prose: "prose".into(),
            prose_reference: "a6_risk".into(),
            prose_baselines: names(&["a4b", "a4", "a5"]),
            ladder: None,
            cutoff: names(&["a4", "a4b", "a6_risk"]),
        }
    }
}

impl ReportConfig {
    /// The paper's layout with each strategy id (`a4`, `a6_risk`) replaced by the arm step that
    /// declares that strategy in `document`: the one judging every claim when exactly one does,
    /// else the one judging a selection when exactly one does. Tables pick arms by what they are,
    /// whatever the steps are called.
    pub fn declared(document: &StatsDocument) -> Self {
        let mut steps: BTreeMap<&str, Vec<(&str, bool)>> = BTreeMap::new();
        for (step, stats) in &document.arms {
            if let Some(strategy) = &stats.step.strategy {
                let selected = stats.step.judged_selection.is_some();
                steps.entry(strategy).or_default().push((step, selected));
            }
        }
        let resolve = |name: &mut String| {
            let Some(candidates) = steps.get(name.as_str()) else {
                return;
            };
            for selected in [false, true] {
                let mut matching = candidates.iter().filter(|(_, judged)| *judged == selected);
                if let (Some((step, _)), None) = (matching.next(), matching.next()) {
                    *name = (*step).to_string();
                    return;
                }
            }
        };
        let mut config = ReportConfig::default();
        for name in config
            .arms
            .iter_mut()
            .chain(config.testmon.iter_mut())
            .chain(config.claim_question.iter_mut())
            .chain(config.practitioner.iter_mut())
            .chain(config.prose_baselines.iter_mut())
            .chain(config.cutoff.iter_mut())
            .chain(
                config
                    .pairs
                    .iter_mut()
                    .flat_map(|(first, second)| [first, second]),
            )
            .chain([
                &mut config.diff_only,
                &mut config.diff_with_claim,
                &mut config.prose,
                &mut config.prose_reference,
            ])
        {
            resolve(name);
        }
        config
    }
}

/// A rendered table.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// The file name of its CSV (`tables/<slug>.csv`).
    pub slug: String,
    pub title: String,
    /// Split, n and base rate.
    pub context: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
    /// Lines under the table.
    pub notes: Vec<String>,
}

/// One section of the report.
#[derive(Debug, Clone, PartialEq)]
pub enum Section {
    Table(Table),
    /// A table whose arms are not in the pipeline: what would fill it.
    Omitted {
        title: String,
        needs: String,
    },
}

/// What an arm is, for people, when the step has a shipped name.
pub fn describe(step: &str, stats: &ArmStats) -> String {
    let known = match step {
        "a0" => Some("always invalidate"),
        "a1" => Some("never invalidate"),
        "a3" => Some("file anchoring"),
        "a4" => Some("symbol anchoring"),
        "a4b" => Some("pytest-testmon"),
        "a5" => Some("semantic equivalence, diff only"),
        "a5c" => Some("semantic equivalence shown the claim"),
        "a6_base" => Some("claim-relative, base prompt"),
        "a6_risk" => Some("claim-relative, risk prompt"),
        "prose" => Some("claim-relative on prose claims"),
        _ => None,
    };
    let mut text = known.map_or_else(|| stats.step.kind.clone(), str::to_string);
    if let Some(model) = &stats.step.model {
        text.push_str(&format!(" ({model})"));
    }
    text
}

fn split_name(document: &StatsDocument) -> String {
    document
        .split
        .clone()
        .unwrap_or_else(|| "all labelled claims".to_string())
}

/// The line under every table title: split, n and base rate.
fn context(document: &StatsDocument) -> String {
    let sample = &document.sample;
    format!(
        "Split: {} · n = {} labelled claims ({} flipped, {} held; {} discarded and excluded) · \
         base rate {}",
        split_name(document),
        sample.claims,
        sample.flipped,
        sample.held,
        sample.discarded,
        Value::Rate(sample.base_rate).display()
    )
}

fn missing<'a>(
    document: &StatsDocument,
    arms: impl IntoIterator<Item = &'a String>,
) -> Vec<String> {
    arms.into_iter()
        .filter(|arm| !document.arms.contains_key(*arm))
        .map(|arm| format!("`{arm}`"))
        .collect()
}

fn present<'a>(document: &'a StatsDocument, arms: &[String]) -> Vec<(&'a str, &'a ArmStats)> {
    arms.iter()
        .filter_map(|arm| {
            document
                .arms
                .get_key_value(arm)
                .map(|(name, stats)| (name.as_str(), stats))
        })
        .collect()
}

/// The comparison of `arm` against `other`, in that orientation.
pub fn comparison(document: &StatsDocument, arm: &str, other: &str) -> Option<McNemar> {
    document.comparisons.iter().find_map(|found| {
        if found.arm == arm && found.other == other {
            Some(found.clone())
        } else if found.arm == other && found.other == arm {
            Some(McNemar {
                arm: arm.to_string(),
                other: other.to_string(),
                b: found.c,
                c: found.b,
                p: found.p,
            })
        } else {
            None
        }
    })
}

fn comparison_note(document: &StatsDocument, arm: &str, other: &str) -> Option<String> {
    let found = comparison(document, arm, other)?;
    Some(format!(
        "Paired McNemar, `{arm}` against `{other}`: `{arm}` is correct where `{other}` is wrong \
         on {} claims, the reverse on {}, p = {}.",
        found.b,
        found.c,
        Value::P(found.p).display()
    ))
}

/// Every section of the report, in the paper's order.
pub fn build(document: &StatsDocument, config: &ReportConfig) -> Vec<Section> {
    let mut sections = vec![
        corpus::corpus(document),
        rankings::rankings(document),
        arms::arms(document, config),
        pairs::pairs(document, config),
        testmon::testmon(document, config),
        two_by_two::two_by_two(document, config),
    ];
    sections.extend(loro::loro(document));
    sections.push(practitioner::practitioner(document, config));
    sections.push(prose::prose(document, config));
    sections.push(ladder::ladder(document, config));
    sections.extend(spend::spend(document));
    sections.extend(replicates::replicates(document));
    match cutoff::across(document) {
        Some(across) => sections.extend(across),
        None => sections.extend(cutoff::cutoff(document, config)),
    }
    sections.push(controls::controls(document));
    sections.extend(rename_class::rename_class(document));
    sections
}

/// The cells every arm table starts with: the arm, what it is, precision and recall with their
/// intervals; `rest` follows them.
fn scored_row(step: &str, stats: &ArmStats, rest: impl IntoIterator<Item = Value>) -> Vec<Value> {
    let mut row = vec![
        Value::text(step),
        Value::text(describe(step, stats)),
        Value::RateInterval(stats.precision, stats.precision_ci),
        Value::RateInterval(stats.recall, stats.recall_ci),
    ];
    row.extend(rest);
    row
}

fn arm_row(step: &str, stats: &ArmStats) -> Vec<Value> {
    scored_row(
        step,
        stats,
        [
            Value::Rate(stats.fire_rate),
            Value::Rate(stats.coverage),
            Value::Rate(stats.recall_judged),
            Value::Count(stats.tp),
            Value::Count(stats.fp),
            Value::Count(stats.false_negatives),
            Value::Count(stats.tn),
        ],
    )
}

const ARM_COLUMNS: &[&str] = &[
    "arm",
    "what",
    "precision [95% CI]",
    "recall [95% CI]",
    "fire rate",
    "coverage",
    "recall (judged)",
    "tp",
    "fp",
    "fn",
    "tn",
];

fn interval_note(document: &StatsDocument) -> String {
    let settings = &document.bootstrap;
    format!(
        "Intervals: {:.0}% bootstrap percentile, {} resamples of {} {}s, seed {}. A missing verdict \
         (`none`) is charged as a hold; coverage is the share of claims with a verdict, recall \
         (judged) the recall over those claims.",
        settings.confidence * 100.0,
        settings.resamples,
        settings.clusters,
        serde_json::to_value(settings.resample)
            .ok()
            .and_then(|value| value.as_str().map(str::to_string))
            .unwrap_or_default(),
        settings.seed
    )
}

/// Which arms judged only a sample, and its size: their coverage counts the rest as unjudged.
fn selection_note(document: &StatsDocument) -> Option<String> {
    let mut by_selection: BTreeMap<(&str, usize), Vec<&str>> = BTreeMap::new();
    for (step, stats) in &document.arms {
        if let Some(selection) = &stats.step.judged_selection {
            by_selection
                .entry((selection.step.as_str(), selection.claims))
                .or_default()
                .push(step);
        }
    }
    if by_selection.is_empty() {
        return None;
    }
    let parts: Vec<String> = by_selection
        .iter()
        .map(|((selection, claims), arms)| {
            let arms: Vec<String> = arms.iter().map(|arm| format!("`{arm}`")).collect();
            format!(
                "{} judged only the {claims} claims of the sample `{selection}`",
                arms.join(", ")
            )
        })
        .collect();
    Some(format!(
        "{}; the other claims have no verdict of theirs, which their coverage shows.",
        parts.join("; ")
    ))
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}
