//! Table I: the mined corpus by repository.

use super::{Section, Table, names};
use crate::stats::document::StatsDocument;
use crate::stats::report::value::Value;

pub(super) fn corpus(document: &StatsDocument) -> Section {
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
