//! Table IV: the question asked (behaviour or claim) against the information given (diff alone or with the claim).

use super::{ReportConfig, Section, Table, comparison_note, context, missing, names, present};
use crate::stats::document::{ArmStats, StatsDocument};
use crate::stats::report::value::Value;

pub(super) fn two_by_two(document: &StatsDocument, config: &ReportConfig) -> Section {
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
