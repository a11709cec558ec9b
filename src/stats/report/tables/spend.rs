//! Model spend: calls, tokens and cost per arm.

use super::{Section, Table, context, names};
use crate::stats::document::StatsDocument;
use crate::stats::report::value::Value;

/// What each model arm spent: tokens each way, dollars in all and per evaluated claim. Left out
/// when no arm recorded tokens.
pub(super) fn spend(document: &StatsDocument) -> Option<Section> {
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
