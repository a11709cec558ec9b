//! mem0 exports: records `{id, memory, …}`, as an array, as `{"results": [...]}` (what its
//! `get_all` returns) or as JSON Lines. The memory's code spans and code-like words become anchors.

use crate::check::claim::MemoryClaim;

use super::anchors;
use super::error::SourceError;
use super::input::Input;
use super::record_claims::{self, RecordFormat};
use super::repository::LazyIndex;

/// How its records are read (also what write-back finds them by).
pub const FORMAT: RecordFormat = RecordFormat {
    text: "memory",
    id: Some("id"),
};

pub fn read(input: &Input, names: &LazyIndex) -> Result<Vec<MemoryClaim>, SourceError> {
    record_claims::read(input, &FORMAT, |_, claim| {
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
        let names = LazyIndex::with_index(RepositoryIndex::of_sources(&[(
            "src/url.py",
            "def parse_url(t):\n    return t\n",
        )]));
        let input = Input::of_text("mem0.json", text, SourceFormat::Mem0);
        read(&input, &names)
    }

    #[test]
    fn wrapped_results_keep_ids_lines_and_anchors() {
        let text = "{\"results\": [\n  {\"id\": \"9f1\", \"memory\": \"parse_url returns a tuple\", \"user_id\": \"u\"},\n  {\"id\": \"9f2\", \"memory\": \"Prefers tabs\"}\n]}\n";
        let claims = read_text(text).unwrap();
        assert_eq!(
            claims
                .iter()
                .map(|claim| (claim.id.as_str(), claim.source.line))
                .collect::<Vec<_>>(),
            [("9f1", 2), ("9f2", 3)]
        );
        assert_eq!(
            claims[0].anchors,
            [Anchor::Symbol {
                path: "src/url.py".into(),
                name: "parse_url".into()
            }]
        );
        assert!(claims[1].anchors.is_empty());
    }

    #[test]
    fn a_record_without_memory_names_its_line() {
        let error =
            read_text("{\"id\": \"1\", \"memory\": \"a\"}\n{\"id\": \"2\", \"text\": \"b\"}\n")
                .unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("parse mem0.json:2: the record has no string field `memory`"),
            "{error}"
        );
    }
}
