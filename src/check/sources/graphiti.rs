//! Graphiti edges: `{uuid, fact, invalid_at, …}` as an array, `{"edges": [...]}` or JSON Lines. An
//! edge whose `invalid_at` is already set has been invalidated and is not a claim any more.

use crate::check::claim::MemoryClaim;

use super::anchors;
use super::error::SourceError;
use super::input::Input;
use super::record_claims::{self, RecordFormat};
use super::repository::LazyIndex;

/// How its records are read (also what write-back finds them by).
pub const FORMAT: RecordFormat = RecordFormat {
    text: "fact",
    id: Some("uuid"),
};

pub fn read(input: &Input, names: &LazyIndex) -> Result<Vec<MemoryClaim>, SourceError> {
    record_claims::read(input, &FORMAT, |record, claim| {
        if record.is_set("invalid_at") {
            return Ok(false);
        }
        claim.anchors = anchors::of_prose(names.get()?, &claim.text);
        Ok(true)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::claim::{Anchor, SourceFormat};
    use crate::check::sources::repository::RepositoryIndex;

    fn read_text(text: &str) -> Result<Vec<MemoryClaim>, SourceError> {
        let names = LazyIndex::with_index(RepositoryIndex::of_sources(&[("src/url.py", "")]));
        let input = Input::of_text("edges.jsonl", text, SourceFormat::Graphiti);
        read(&input, &names)
    }

    #[test]
    fn invalidated_edges_are_skipped_and_live_ones_keep_their_uuid() {
        let text = concat!(
            "{\"uuid\": \"e1\", \"fact\": \"`src/url.py` parses URLs\", \"invalid_at\": null}\n",
            "{\"uuid\": \"e2\", \"fact\": \"old fact\", \"invalid_at\": \"2026-01-01T00:00:00Z\"}\n",
            "{\"uuid\": \"e3\", \"fact\": \"another\"}\n",
        );
        let claims = read_text(text).unwrap();
        assert_eq!(
            claims
                .iter()
                .map(|claim| (claim.id.as_str(), claim.source.line))
                .collect::<Vec<_>>(),
            [("e1", 1), ("e3", 3)]
        );
        assert_eq!(
            claims[0].anchors,
            [Anchor::File {
                path: "src/url.py".into()
            }]
        );
    }

    #[test]
    fn an_edge_without_fact_names_its_line() {
        let error =
            read_text("{\"uuid\": \"e1\", \"fact\": \"x\"}\n{\"uuid\": \"e2\", \"name\": \"y\"}\n")
                .unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("parse edges.jsonl:2: the record has no string field `fact`"),
            "{error}"
        );
    }
}
