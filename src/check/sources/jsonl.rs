//! claimflow's own JSON Lines claims: `id`, `text`, and optionally `anchors` (`path` or
//! `path::symbol`), `test` (a pytest node id or a test function's source) and `check` (a shell
//! command). Anchors are taken as declared, never guessed from the text; other fields are ignored
//! here and kept byte for byte by write-back.

use crate::check::claim::MemoryClaim;

use super::anchors;
use super::error::SourceError;
use super::input::Input;
use super::record_claims::{self, RecordFormat};

/// How its records are read (also what write-back finds them by).
pub const FORMAT: RecordFormat = RecordFormat {
    text: "text",
    id: Some("id"),
};

pub fn read(input: &Input) -> Result<Vec<MemoryClaim>, SourceError> {
    record_claims::read(input, &FORMAT, |record, claim| {
        claim.anchors = record
            .strings("anchors")
            .map_err(|wrong| input.bad_field(record.line, "anchors", "a list of strings", wrong))?
            .iter()
            .map(|anchor| anchors::of_declared(anchor))
            .collect();
        claim.test = record
            .string("test")
            .map_err(|wrong| input.bad_field(record.line, "test", "a string", wrong))?;
        claim.check = record
            .string("check")
            .map_err(|wrong| input.bad_field(record.line, "check", "a string", wrong))?;
        Ok(true)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::claim::{Anchor, SourceFormat};

    fn read_text(text: &str) -> Result<Vec<MemoryClaim>, SourceError> {
        read(&Input::of_text("claims.jsonl", text, SourceFormat::Jsonl))
    }

    #[test]
    fn records_keep_ids_lines_anchors_test_and_check() {
        let text = concat!(
            "{\"id\": \"c1\", \"text\": \"parse_url returns a tuple\", \"anchors\": [\"src/url.py::parse_url\", \"src/url.py\"], \"test\": \"tests/test_url.py::test_tuple\", \"extra\": 1}\n",
            "\n",
            "{\"text\": \"`make` builds\", \"check\": \"make -n\"}\n",
        );
        let claims = read_text(text).unwrap();
        assert_eq!(claims.len(), 2);
        assert_eq!((claims[0].id.as_str(), claims[0].source.line), ("c1", 1));
        assert_eq!(
            claims[0].anchors,
            [
                Anchor::Symbol {
                    path: "src/url.py".into(),
                    name: "parse_url".into()
                },
                Anchor::File {
                    path: "src/url.py".into()
                }
            ]
        );
        assert_eq!(
            claims[0].test.as_deref(),
            Some("tests/test_url.py::test_tuple")
        );
        assert_eq!(claims[0].record_key.as_deref(), Some("c1"));
        assert_eq!(claims[1].source.line, 3);
        assert!(claims[1].id.starts_with("m-"));
        assert_eq!(claims[1].check.as_deref(), Some("make -n"));
        assert_eq!(claims[1].record_key.as_deref(), Some("#1"));
    }

    #[test]
    fn generated_ids_survive_edits_elsewhere() {
        let first = read_text("{\"text\": \"a is b\"}\n").unwrap();
        let second = read_text("{\"text\": \"new one\"}\n{\"text\": \"a is b\"}\n").unwrap();
        assert_eq!(first[0].id, second[1].id);
    }

    #[test]
    fn malformed_records_name_their_line() {
        let message = |text: &str| read_text(text).unwrap_err().to_string();
        assert!(
            message("{\"id\": \"a\", \"text\": \"x\"}\n{\"id\": \"b\"}\n")
                .starts_with("parse claims.jsonl:2: the record has no string field `text`")
        );
        assert!(
            message("{\"text\": \"x\", \"anchors\": \"a.py\"}\n")
                .starts_with("parse claims.jsonl:1: field `anchors` must be a list of strings")
        );
        assert!(
            message("{\"id\": \"a\", \"text\": \"x\"}\n{\"id\": \"a\", \"text\": \"y\"}\n")
                .contains("already used on line 1")
        );
        assert!(
            message("{\"text\": \"x\"}\n{oops}\n").starts_with("parse claims.jsonl:2: bad JSON")
        );
    }

    #[test]
    fn a_number_as_text_id_or_check_was_turned_into_a_string() {
        let message = |text: &str| read_text(text).unwrap_err().to_string();
        assert_eq!(
            message("{\"text\": \"x\"}\n{\"text\": \"y\", \"check\": 5}\n"),
            "parse claims.jsonl:2: field `check` must be a string, not a number (write it as a string, in quotes)"
        );
        assert!(
            message("{\"id\": 7, \"text\": \"x\"}\n")
                .starts_with("parse claims.jsonl:1: field `id` must be a string, not a number")
        );
        assert!(
            message("{\"text\": 42}\n")
                .starts_with("parse claims.jsonl:1: field `text` must be a string, not a number")
        );
        assert!(
            message("{\"text\": \"x\", \"test\": true}\n")
                .starts_with("parse claims.jsonl:1: field `test` must be a string, not a boolean")
        );
        assert!(
            message("{\"text\": \"x\", \"anchors\": [\"a.py\", 3]}\n").starts_with(
                "parse claims.jsonl:1: field `anchors` must be a list of strings, not a list holding a number"
            )
        );
    }
}
