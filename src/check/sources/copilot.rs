//! Copilot-style memory records: `{subject, fact, citations: ["path:line", …], …}`, as an array or
//! JSON Lines. Each citation anchors its file, and the Python definition holding the cited line;
//! the fact's code spans and code-like words anchor too. Records have no id of their own (one
//! named `id` is used when present), so a record is keyed by its position in the file.

use crate::check::claim::MemoryClaim;

use super::anchors;
use super::error::SourceError;
use super::input::{Input, push_unique};
use super::record_claims::{self, RecordFormat};
use super::repository::LazyIndex;

/// How its records are read (also what write-back finds them by).
pub const FORMAT: RecordFormat = RecordFormat {
    text: "fact",
    id: Some("id"),
};

pub fn read(input: &Input, names: &LazyIndex) -> Result<Vec<MemoryClaim>, SourceError> {
    record_claims::read(input, &FORMAT, |record, claim| {
        let index = names.get()?;
        let citations = record.strings("citations").map_err(|wrong| {
            input.bad_field(
                record.line,
                "citations",
                "a list of \"path:line\" strings",
                wrong,
            )
        })?;
        for citation in &citations {
            for anchor in anchors::of_citation(index, citation) {
                push_unique(&mut claim.anchors, anchor);
            }
        }
        for anchor in anchors::of_prose(index, &claim.text) {
            push_unique(&mut claim.anchors, anchor);
        }
        Ok(true)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::claim::{Anchor, SourceFormat};
    use crate::check::sources::repository::RepositoryIndex;

    const URL: &str = "import re\n\n\ndef parse_url(text):\n    return text\n";

    fn read_text(text: &str) -> Result<Vec<MemoryClaim>, SourceError> {
        let names = LazyIndex::with_index(RepositoryIndex::of_sources(&[("src/url.py", URL)]));
        let input = Input::of_text(".github/memory.json", text, SourceFormat::CopilotJson);
        read(&input, &names)
    }

    #[test]
    fn citations_anchor_files_and_the_cited_definition() {
        let text = "[\n  {\n    \"subject\": \"urls\",\n    \"fact\": \"URLs are parsed by one function\",\n    \"citations\": [\"src/url.py:5\", \"README.md:1\"]\n  },\n  {\"subject\": \"x\", \"fact\": \"Tabs\"}\n]\n";
        let claims = read_text(text).unwrap();
        assert_eq!(
            claims
                .iter()
                .map(|claim| claim.source.line)
                .collect::<Vec<_>>(),
            [2, 7]
        );
        assert_eq!(
            claims[0].anchors,
            [
                Anchor::File {
                    path: "src/url.py".into()
                },
                Anchor::Symbol {
                    path: "src/url.py".into(),
                    name: "parse_url".into()
                },
                Anchor::File {
                    path: "README.md".into()
                },
            ]
        );
        assert_eq!(claims[1].record_key.as_deref(), Some("#1"));
        assert!(claims[0].id.starts_with("m-"));
    }

    #[test]
    fn malformed_citations_name_their_line() {
        let error = read_text("{\"fact\": \"a\", \"citations\": \"src/url.py:1\"}\n").unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("parse .github/memory.json:1: field `citations`"),
            "{error}"
        );
    }
}
