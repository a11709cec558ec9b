//! What each table of the report holds, after the paper's Tables I–IX.
//!
//! Arms are named by step. Which arms a table compares is configurable ([`ReportConfig`], the
//! `report` step's `with:`), with the shipped pipelines' names as defaults. A table whose arms or
//! controls are not all in `stats.json` is a [`Section::Omitted`]: one line saying what would fill
//! it, never a table of blanks.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::value::Value;
use crate::stats::confusion::Confusion;
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
    /// declares that strategy in `document`, when exactly one does: tables pick arms by what
    /// they are, whatever the steps are called.
    pub fn declared(document: &StatsDocument) -> Self {
        let mut steps: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (step, stats) in &document.arms {
            if let Some(strategy) = &stats.step.strategy {
                steps.entry(strategy).or_default().push(step);
            }
        }
        let resolve = |name: &mut String| {
            if let Some([step]) = steps.get(name.as_str()).map(Vec::as_slice) {
                *name = (*step).to_string();
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
        corpus(document),
        rankings(document),
        arms(document, config),
        pairs(document, config),
        testmon(document, config),
        two_by_two(document, config),
    ];
    sections.extend(loro(document));
    sections.push(practitioner(document, config));
    sections.push(prose(document, config));
    sections.push(ladder(document, config));
    sections.extend(spend(document));
    sections.extend(replicates(document));
    match super::controls::cutoff(document) {
        Some(across) => sections.extend(across),
        None => sections.extend(cutoff(document, config)),
    }
    sections.push(controls(document));
    sections.extend(super::controls::rename_class(document));
    sections
}

fn corpus(document: &StatsDocument) -> Section {
    let title = "Table I. The mined corpus by repository".to_string();
    if document.corpus.is_empty() {
        return Section::Omitted {
            title,
            needs: "it needs repositories in the pipeline and the oracle's records.".into(),
        };
    }
    let ranked = document.corpus.iter().any(|row| row.commits.is_some());
    let mut columns = names(&["repository", "split"]);
    if ranked {
        columns.push("commits ranked".into());
    }
    columns.extend(names(&[
        "commits with claims",
        "claims",
        "flipped",
        "held",
        "discarded",
        "flip rate",
    ]));
    let mut total = crate::stats::corpus::RepositoryCorpus::default();
    let mut rows = Vec::new();
    for row in &document.corpus {
        let mut cells = vec![
            Value::text(&row.repository),
            Value::text(row.split.as_deref().unwrap_or("")),
        ];
        if ranked {
            cells.push(Value::Count(row.commits.unwrap_or(0)));
        }
        cells.extend([
            Value::Count(row.claim_commits),
            Value::Count(row.claims),
            Value::Count(row.flipped),
            Value::Count(row.held),
            Value::Count(row.discarded),
            Value::Rate(row.flip_rate()),
        ]);
        rows.push(cells);
        *total.commits.get_or_insert(0) += row.commits.unwrap_or(0);
        total.claim_commits += row.claim_commits;
        total.claims += row.claims;
        total.flipped += row.flipped;
        total.held += row.held;
        total.discarded += row.discarded;
    }
    let mut cells = vec![Value::text("total"), Value::text("")];
    if ranked {
        cells.push(Value::Count(total.commits.unwrap_or(0)));
    }
    cells.extend([
        Value::Count(total.claim_commits),
        Value::Count(total.claims),
        Value::Count(total.flipped),
        Value::Count(total.held),
        Value::Count(total.discarded),
        Value::Rate(total.flip_rate()),
    ]);
    rows.push(cells);
    let empty: Vec<&str> = document
        .corpus
        .iter()
        .filter(|row| row.flipped == 0)
        .map(|row| row.repository.as_str())
        .collect();
    let with_flips = document.corpus.len() - empty.len();
    let mut notes = vec![format!(
        "{with_flips} of {} repositories produced any flips.",
        document.corpus.len()
    )];
    if !empty.is_empty() {
        notes.push(format!("Repositories with no flips: {}.", empty.join(", ")));
    }
    Section::Table(Table {
        slug: "table1_corpus".into(),
        title,
        context: format!(
            "Split: every split (the whole mined corpus) · n = {} labelled claims ({} flipped, {} \
             discarded) · flip rate {}",
            total.flipped + total.held,
            total.flipped,
            total.discarded,
            Value::Rate(total.flip_rate()).display()
        ),
        columns,
        rows,
        notes,
    })
}

fn rankings(document: &StatsDocument) -> Section {
    let title = "Flip density by ranking".to_string();
    let Some(comparison) = &document.rankings else {
        return Section::Omitted {
            title,
            needs: "it needs two commit rankings mined and labelled side by side, named in the \
                    stats step's `rankings:` (e.g. `rankings: [rank, rank_kw]`)."
                .into(),
        };
    };
    let mut rows: Vec<Vec<Value>> = comparison
        .steps
        .iter()
        .map(|ranking| {
            vec![
                Value::text(&ranking.step),
                Value::text(&ranking.by),
                Value::text(&ranking.labels_from),
                Value::Count(ranking.commits),
                Value::Count(ranking.commits_labelled),
                Value::Count(ranking.claims),
                Value::Count(ranking.flipped),
                Value::Count(ranking.held),
                Value::Count(ranking.discarded),
                Value::RateInterval(ranking.flips_per_commit, ranking.flips_per_commit_ci),
                Value::RateInterval(ranking.flip_rate, ranking.flip_rate_ci),
                Value::RateInterval(ranking.flip_commit_share, ranking.flip_commit_share_ci),
            ]
        })
        .collect();
    let mut overlaps = Vec::new();
    for difference in &comparison.differences {
        let blank = || Value::text("");
        rows.push(vec![
            Value::text(format!("{} − {}", difference.ranking, difference.other)),
            Value::text("difference"),
            blank(),
            blank(),
            blank(),
            blank(),
            blank(),
            blank(),
            blank(),
            Value::GapInterval(difference.flips_per_commit, difference.flips_per_commit_ci),
            Value::GapInterval(difference.flip_rate, difference.flip_rate_ci),
            Value::GapInterval(
                difference.flip_commit_share,
                difference.flip_commit_share_ci,
            ),
        ]);
        overlaps.push(format!(
            "`{}` and `{}` both picked {} commit{}; each ranking counts {}.",
            difference.ranking,
            difference.other,
            difference.shared_commits,
            if difference.shared_commits == 1 {
                ""
            } else {
                "s"
            },
            if difference.shared_commits == 1 {
                "it"
            } else {
                "them"
            }
        ));
    }
    let settings = &document.bootstrap;
    let mut notes = vec![
        "Flips per commit: flipped claims per commit ranked (commits that gave no claims count). \
         Flip rate: flipped claims per labelled (flipped or held) claim; discarded claims are \
         excluded. With a flip: the share of commits ranked with at least one flipped claim."
            .to_string(),
    ];
    notes.extend(overlaps);
    notes.push(format!(
        "Intervals: {:.0}% bootstrap percentile, {} resamples of the {} commits any ranking \
         picked (a commit drawn with all its claims, for every ranking that picked it), seed {}. \
         A difference is the earlier ranking minus the later, paired on shared commits.",
        settings.confidence * 100.0,
        settings.resamples,
        comparison.commits,
        settings.seed
    ));
    Section::Table(Table {
        slug: "flip_density_by_ranking".into(),
        title,
        context: format!(
            "Split: {} · {} distinct commits ranked by {} rankings",
            split_name(document),
            comparison.commits,
            comparison.steps.len()
        ),
        columns: names(&[
            "ranking",
            "by",
            "labels from",
            "commits ranked",
            "commits labelled",
            "claims labelled",
            "flipped",
            "held",
            "discarded",
            "flips per commit [95% CI]",
            "flip rate [95% CI]",
            "with a flip [95% CI]",
        ]),
        rows,
        notes,
    })
}

fn arm_row(step: &str, stats: &ArmStats) -> Vec<Value> {
    vec![
        Value::text(step),
        Value::text(describe(step, stats)),
        Value::RateInterval(stats.precision, stats.precision_ci),
        Value::RateInterval(stats.recall, stats.recall_ci),
        Value::Rate(stats.fire_rate),
        Value::Rate(stats.coverage),
        Value::Count(stats.tp),
        Value::Count(stats.fp),
        Value::Count(stats.false_negatives),
        Value::Count(stats.tn),
    ]
}

const ARM_COLUMNS: &[&str] = &[
    "arm",
    "what",
    "precision [95% CI]",
    "recall [95% CI]",
    "fire rate",
    "coverage",
    "tp",
    "fp",
    "fn",
    "tn",
];

fn interval_note(document: &StatsDocument) -> String {
    let settings = &document.bootstrap;
    format!(
        "Intervals: {:.0}% bootstrap percentile, {} resamples of {} {}s, seed {}. A missing verdict \
         (`none`) is charged as a hold; coverage is the share of claims with a verdict.",
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

fn arms(document: &StatsDocument, config: &ReportConfig) -> Section {
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

fn pairs(document: &StatsDocument, config: &ReportConfig) -> Section {
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

fn testmon(document: &StatsDocument, config: &ReportConfig) -> Section {
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
            vec![
                Value::text(step),
                Value::text(describe(step, stats)),
                Value::RateInterval(stats.precision, stats.precision_ci),
                Value::RateInterval(stats.recall, stats.recall_ci),
                Value::Rate(stats.coverage),
                Value::Rate(stats.staleness),
                Value::Rate(stats.budget),
            ]
        })
        .collect();
    let mut notes = vec![
        "Staleness: flipped claims served as held. Budget: the share of claims re-verified. \
         Claims without a verdict are charged as holds."
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
            "staleness",
            "budget",
        ]),
        rows,
        notes,
    })
}

fn two_by_two(document: &StatsDocument, config: &ReportConfig) -> Section {
    let title = "Table IV. The question, not the evidence".to_string();
    let claim_arms = present(document, &config.claim_question);
    let mut absent = missing(document, [&config.diff_only, &config.diff_with_claim]);
    if claim_arms.is_empty() {
        absent.push(format!(
            "one of {}",
            config
                .claim_question
                .iter()
                .map(|arm| format!("`{arm}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !absent.is_empty() {
        return Section::Omitted {
            title,
            needs: format!(
                "it needs the behaviour question on the diff alone and with the claim, and the \
                 claim question: missing {}.",
                absent.join(", ")
            ),
        };
    }
    let diff_only = &document.arms[&config.diff_only];
    let diff_with_claim = &document.arms[&config.diff_with_claim];
    let row = |step: &str, stats: &ArmStats, question: &str, information: &str| {
        vec![
            Value::text(step),
            Value::text(question),
            Value::text(information),
            Value::RateInterval(stats.precision, stats.precision_ci),
            Value::RateInterval(stats.recall, stats.recall_ci),
            Value::Rate(stats.fire_rate),
        ]
    };
    let mut rows = vec![
        row(
            &config.diff_only,
            diff_only,
            "does the diff preserve behaviour?",
            "diff",
        ),
        row(
            &config.diff_with_claim,
            diff_with_claim,
            "does the diff preserve behaviour?",
            "claim + diff",
        ),
    ];
    let difference = |first: Option<f64>, second: Option<f64>| Some(first? - second?);
    let mut notes = vec![format!(
        "Information (`{}` − `{}`, same question, claim added): precision {}.",
        config.diff_with_claim,
        config.diff_only,
        Value::Gap(difference(diff_with_claim.precision, diff_only.precision)).display()
    )];
    for (step, stats) in &claim_arms {
        rows.push(row(
            step,
            stats,
            "does this claim still hold?",
            "claim + diff",
        ));
        notes.push(format!(
            "Question (`{step}` − `{}`, same information, claim question): precision {}.",
            config.diff_with_claim,
            Value::Gap(difference(stats.precision, diff_with_claim.precision)).display()
        ));
        notes.extend(comparison_note(document, step, &config.diff_with_claim));
    }
    notes.push(
        "The claim question cannot be asked of the diff alone, so the 2×2 has three cells."
            .to_string(),
    );
    Section::Table(Table {
        slug: "table4_question_information".into(),
        title,
        context: context(document),
        columns: names(&[
            "arm",
            "question",
            "information",
            "precision [95% CI]",
            "recall [95% CI]",
            "fire rate",
        ]),
        rows,
        notes,
    })
}

fn loro(document: &StatsDocument) -> Vec<Section> {
    let title = "Table V. Leave-one-repository-out".to_string();
    if document.loro.is_empty() {
        return vec![Section::Omitted {
            title,
            needs: "it needs the stats step's `compare` pairs (default `a6_risk` against `a4`) \
                    to name two arms in the pipeline."
                .into(),
        }];
    }
    document
        .loro
        .iter()
        .map(|analysis| {
            let mut rows = vec![vec![
                Value::text("(none)"),
                Value::Count(0),
                Value::Count(0),
                Value::Rate(document.arms[&analysis.arm].precision),
                Value::Rate(document.arms[&analysis.other].precision),
                Value::Gap(analysis.gap),
            ]];
            rows.extend(analysis.rows.iter().map(|row| {
                vec![
                    Value::text(&row.repository),
                    Value::Count(row.claims),
                    Value::Count(row.flips),
                    Value::Rate(row.precision),
                    Value::Rate(row.other_precision),
                    Value::Gap(row.gap),
                ]
            }));
            let mut notes = Vec::new();
            if let (Some(repository), Some(gap)) = (&analysis.smallest, analysis.smallest_gap) {
                notes.push(format!(
                    "The smallest gap, {}, is left when `{repository}` is removed.",
                    Value::Gap(Some(gap)).display()
                ));
            }
            Section::Table(Table {
                slug: format!("table5_loro_{}_{}", analysis.arm, analysis.other),
                title: format!(
                    "{title}: precision of `{}` minus `{}`",
                    analysis.arm, analysis.other
                ),
                context: context(document),
                columns: vec![
                    "repository left out".into(),
                    "claims removed".into(),
                    "flips removed".into(),
                    format!("{} precision", analysis.arm),
                    format!("{} precision", analysis.other),
                    "gap".into(),
                ],
                rows,
                notes,
            })
        })
        .collect()
}

fn practitioner(document: &StatsDocument, config: &ReportConfig) -> Section {
    let title = "Table VI. What a practitioner buys".to_string();
    let shown = present(document, &config.practitioner);
    if shown.is_empty() {
        return Section::Omitted {
            title,
            needs: format!(
                "it needs at least one of the arm steps {}.",
                missing(document, &config.practitioner).join(", ")
            ),
        };
    }
    let natural = document.natural_rate.as_ref();
    let priced = shown.iter().any(|(_, stats)| stats.cost.is_some());
    let mut columns = names(&["arm", "what", "staleness", "budget", "precision"]);
    if let Some(rate) = natural {
        columns.push(format!("precision at natural rate {:.4}", rate.value));
    }
    if priced {
        columns.push("cost per claim".into());
    }
    let rows = shown
        .iter()
        .map(|(step, stats)| {
            let mut row = vec![
                Value::text(*step),
                Value::text(describe(step, stats)),
                Value::Rate(stats.staleness),
                Value::Rate(stats.budget),
                Value::Rate(stats.precision),
            ];
            if natural.is_some() {
                row.push(Value::Rate(stats.natural_precision));
            }
            if priced {
                row.push(Value::Dollars(
                    stats.cost.as_ref().map(|cost| cost.per_claim),
                ));
            }
            row
        })
        .collect();
    let mut notes = vec![
        "Staleness: the share of flipped claims served as held. Budget: the share of the store \
         re-verified (the fire rate)."
            .to_string(),
    ];
    if let Some(rate) = natural {
        notes.push(format!(
            "Natural flip rate {:.4} (source: {}) against the evaluated claims' flip rate {}: \
             precision reweighted so held claims weigh as they would at the natural rate.",
            rate.value,
            rate.source,
            Value::Rate(document.sample.base_rate).display()
        ));
    }
    Section::Table(Table {
        slug: "table6_practitioner".into(),
        title,
        context: context(document),
        columns,
        rows,
        notes,
    })
}

fn prose(document: &StatsDocument, config: &ReportConfig) -> Section {
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
        .map(|(step, stats)| {
            vec![
                Value::text(step),
                Value::text(describe(step, stats)),
                Value::RateInterval(stats.precision, stats.precision_ci),
                Value::RateInterval(stats.recall, stats.recall_ci),
                Value::Rate(stats.coverage),
            ]
        })
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

/// What each model arm spent: tokens each way, dollars in all and per evaluated claim. Left out
/// when no arm recorded tokens.
fn spend(document: &StatsDocument) -> Option<Section> {
    let rows: Vec<Vec<Value>> = document
        .arms
        .iter()
        .filter(|(_, stats)| stats.step.model.is_some())
        .filter_map(|(step, stats)| {
            let cost = stats.cost.as_ref()?;
            Some(vec![
                Value::text(step),
                Value::text(stats.step.model_id.clone().unwrap_or_default()),
                Value::Count(cost.tokens_in),
                Value::Count(cost.tokens_out),
                Value::Dollars(Some(cost.total)),
                Value::Dollars(Some(cost.per_claim)),
            ])
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    Some(Section::Table(Table {
        slug: "model_spend".into(),
        title: "Model spend".into(),
        context: context(document),
        columns: names(&[
            "arm",
            "model",
            "tokens in",
            "tokens out",
            "cost",
            "cost per claim",
        ]),
        rows,
        notes: vec![
            "Tokens as the API reported them, over the evaluated claims (an A5 call is charged to \
             the first claim of its commit); cost at the entry's `price_per_mtok`."
                .to_string(),
        ],
    }))
}

/// Run-to-run variance: the pairwise agreement of each model arm's replicates. Left out when no
/// arm asked for replicates.
fn replicates(document: &StatsDocument) -> Option<Section> {
    let rows: Vec<Vec<Value>> = document
        .arms
        .iter()
        .filter_map(|(step, stats)| {
            let agreement = stats.step.replicates.as_ref()?;
            let compared: u64 = agreement.pairs.iter().map(|pair| pair.compared).sum();
            let without: u64 = agreement
                .pairs
                .iter()
                .map(|pair| pair.without_verdict)
                .sum();
            Some(vec![
                Value::text(step),
                Value::Count(agreement.runs.len() as u64),
                Value::Rate(agreement.pooled),
                Value::Rate(agreement.lowest),
                Value::Count(compared),
                Value::Count(without),
            ])
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    Some(Section::Table(Table {
        slug: "replicate_agreement".into(),
        title: "Run-to-run agreement".into(),
        context: context(document),
        columns: names(&[
            "arm",
            "replicates",
            "agreement (pooled)",
            "lowest pair",
            "claim pairs compared",
            "pairs without a verdict",
        ]),
        rows,
        notes: vec![
            "Every two replicates of an arm (the same calls asked again under another sample \
             index) compared claim by claim where both gave a verdict; pooled over the pairs."
                .to_string(),
        ],
    }))
}

fn ladder(document: &StatsDocument, config: &ReportConfig) -> Section {
    let title = "Table VIII. Model ladder".to_string();
    let candidates: Vec<String> = match &config.ladder {
        Some(arms) => arms.clone(),
        None => document
            .arms
            .iter()
            .filter(|(_, stats)| stats.step.model.is_some())
            .map(|(step, _)| step.clone())
            .collect(),
    };
    let mut shown: Vec<(&str, &ArmStats)> = present(document, &candidates)
        .into_iter()
        .filter(|(_, stats)| stats.step.model.is_some())
        .collect();
    let models: BTreeSet<&str> = shown
        .iter()
        .filter_map(|(_, stats)| stats.step.model.as_deref())
        .collect();
    if models.is_empty() {
        return Section::Omitted {
            title,
            needs: "it needs model arms (`with: {model: …}`); a list `model: [a, b]` makes a rung \
                    per `models:` entry."
                .into(),
        };
    }
    shown.sort_by(|left, right| {
        let price = |stats: &ArmStats| stats.step.price_input.unwrap_or(f64::INFINITY);
        (describe(left.0, left.1)
            .split(" (")
            .next()
            .map(str::to_string))
        .cmp(
            &describe(right.0, right.1)
                .split(" (")
                .next()
                .map(str::to_string),
        )
        .then(price(left.1).total_cmp(&price(right.1)))
        .then(left.0.cmp(right.0))
    });
    let frontier: BTreeSet<&str> = document.frontier.iter().map(String::as_str).collect();
    let rows = shown
        .iter()
        .map(|(step, stats)| {
            vec![
                Value::text(*step),
                Value::text(match (&stats.step.model, &stats.step.model_id) {
                    (Some(entry), Some(id)) => format!("{entry} ({id})"),
                    (entry, _) => entry.clone().unwrap_or_default(),
                }),
                Value::Dollars(stats.step.price_input),
                Value::Dollars(stats.step.price_output),
                Value::RateInterval(stats.precision, stats.precision_ci),
                Value::RateInterval(stats.recall, stats.recall_ci),
                Value::Rate(stats.fire_rate),
                Value::Dollars(stats.cost.as_ref().map(|cost| cost.per_claim)),
                Value::text(if frontier.contains(step) { "yes" } else { "no" }),
            ]
        })
        .collect();
    Section::Table(Table {
        slug: "table8_models".into(),
        title,
        context: context(document),
        columns: names(&[
            "arm",
            "model",
            "$/M input",
            "$/M output",
            "precision [95% CI]",
            "recall [95% CI]",
            "fire rate",
            "cost per claim",
            "on cost frontier",
        ]),
        rows,
        notes: {
            let mut notes = vec![
                "On the cost frontier: no arm is at most as expensive and at least as precise."
                    .to_string(),
            ];
            if models.len() == 1 {
                notes.push(
                    "One model: a list `model: [a, b]` on the arm steps adds a rung per \
                     `models:` entry."
                        .to_string(),
                );
            }
            notes
        },
    })
}

fn cutoff(document: &StatsDocument, config: &ReportConfig) -> Vec<Section> {
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

fn controls(document: &StatsDocument) -> Section {
    let title = "Controls".to_string();
    if document.controls.is_empty() {
        return Section::Omitted {
            title,
            needs: "they need an arm run on a `shuffle` step's pairs (the shuffled-diff null) \
                    or on a `paraphrase` step's claims, or a step that wraps an arm \
                    (`with: {arm: <step>}`)."
                .into(),
        };
    }
    let rows = document
        .controls
        .iter()
        .map(|(step, control)| {
            let arm_fire_rate = document
                .arms
                .get(&control.of)
                .and_then(|stats| stats.fire_rate);
            vec![
                Value::text(step),
                Value::text(&control.of),
                Value::text(control.by.as_deref().unwrap_or("wraps the arm")),
                Value::Rate(control.metrics.fire_rate),
                Value::Rate(arm_fire_rate),
                Value::Rate(control.agreement),
                Value::RateInterval(control.metrics.precision, control.metrics.precision_ci),
                Value::Rate(control.metrics.coverage),
            ]
        })
        .collect();
    Section::Table(Table {
        slug: "controls".into(),
        title,
        context: context(document),
        columns: names(&[
            "control",
            "of arm",
            "manipulation",
            "fire rate",
            "arm's fire rate",
            "agreement with arm",
            "precision [95% CI]",
            "coverage",
        ]),
        rows,
        notes: vec![
            "The fire rate is the control's, on the manipulated claims (each claim shown \
             another commit's diff, or its paraphrased test); the arm's fire rate is on the real \
             pairs. An arm that reads the claim's dependence on the diff fires far less on \
             shuffled pairs."
                .into(),
        ],
    })
}
