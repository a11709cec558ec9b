//! Run-to-run agreement of replicated arms.

use super::{Section, Table, context, names};
use crate::stats::document::StatsDocument;
use crate::stats::report::value::Value;

/// Run-to-run variance: the pairwise agreement of each model arm's replicates. Left out when no
/// arm asked for replicates.
pub(super) fn replicates(document: &StatsDocument) -> Option<Section> {
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
