//! Marking a flipped record of a JSON memory file: `invalidated_at` (the commit's time) and
//! `invalidated_by` (its id) on JSON Lines, mem0 and Copilot records; Graphiti's own `invalid_at`
//! (and `invalidated_by`) on an edge. The fields are inserted into the record's own text, in its
//! own layout (its line endings too), so no other byte of the file changes; a record already
//! marked is left alone. A record without an id of its own is found by its position, or, in a
//! file that changed since it was read, by the id its text was given.

use crate::check::claim::{MemoryClaim, SourceFormat};
use crate::check::sources::identity::ClaimIds;
use crate::check::sources::json_records::{Record, records};
use crate::check::sources::record_claims::RecordFormat;
use crate::check::sources::{copilot, graphiti, jsonl, mem0};

use super::edit::Edit;
use super::{Invalidation, WriteError};

/// The edits marking `claim`'s record in `text`, empty when it is already marked; `moved` when the
/// file changed since the claim was read.
pub fn field_edits(
    text: &str,
    claim: &MemoryClaim,
    invalidation: &Invalidation,
    moved: bool,
) -> Result<Vec<Edit>, WriteError> {
    let all = records(&claim.source.file, text).map_err(WriteError::Source)?;
    let record = find(&all, claim, moved).ok_or_else(|| WriteError::NotFound {
        path: claim.source.file.clone(),
        line: claim.source.line,
        id: claim.id.clone(),
    })?;
    let time_field = match claim.format {
        SourceFormat::Graphiti => "invalid_at",
        _ => "invalidated_at",
    };
    if record.is_set(time_field) || record.is_set("invalidated_by") {
        return Ok(Vec::new());
    }
    let fields = [
        (time_field, json_string(&invalidation.time)),
        ("invalidated_by", json_string(&invalidation.commit)),
    ];
    let raw = &text[record.range.clone()];
    let colon = if raw.contains("\": ") { "\": " } else { "\":" };
    let mut inserted = String::new();
    let mut edits = Vec::new();
    for (field, value) in fields {
        match record.value_range(field) {
            Some(range) => edits.push(Edit { range, text: value }),
            None => {
                inserted.push_str(&member_separator(
                    raw,
                    record.fields.is_empty() && inserted.is_empty(),
                ));
                inserted.push_str(&format!("\"{field}{colon}{value}"));
            }
        }
    }
    if !inserted.is_empty() {
        let at = record.range.start + body_of(raw).len();
        edits.push(Edit {
            range: at..at,
            text: inserted,
        });
    }
    Ok(edits)
}

/// The record a claim was read from: by its own id, or by its position (`#3`) while the file is
/// as it was read, else by the id the reader gave its text.
fn find<'a, 'r>(all: &'r [Record<'a>], claim: &MemoryClaim, moved: bool) -> Option<&'r Record<'a>> {
    let key = claim.record_key.as_deref()?;
    let format = record_format(claim.format)?;
    let own_id = |record: &Record| {
        format
            .id
            .and_then(|field| record.string(field).ok().flatten())
    };
    let Some(index) = key
        .strip_prefix('#')
        .and_then(|index| index.parse::<usize>().ok())
    else {
        return all
            .iter()
            .find(|record| own_id(record).as_deref() == Some(key));
    };
    if !moved {
        return all.get(index);
    }
    // As the reader counts: only records without an id of their own take a digest id.
    let mut ids = ClaimIds::new(&claim.source.file.to_string_lossy().replace('\\', "/"));
    all.iter()
        .filter(|record| own_id(record).is_none())
        .find(|record| {
            record
                .string(format.text)
                .ok()
                .flatten()
                .is_some_and(|text| ids.next(&text) == claim.id)
        })
}

/// How the reader of `format` reads its records (None for Markdown, which has none).
fn record_format(format: SourceFormat) -> Option<&'static RecordFormat> {
    match format {
        SourceFormat::Jsonl => Some(&jsonl::FORMAT),
        SourceFormat::CopilotJson => Some(&copilot::FORMAT),
        SourceFormat::Mem0 => Some(&mem0::FORMAT),
        SourceFormat::Graphiti => Some(&graphiti::FORMAT),
        SourceFormat::Markdown | SourceFormat::Mdc => None,
    }
}

/// What goes before a new member: a comma unless it is the first, then the record's own line
/// ending (`\r\n` where it has them) and the last member's indentation in a record laid over
/// several lines, else a space.
fn member_separator(raw: &str, first: bool) -> String {
    let comma = if first { "" } else { "," };
    let body = body_of(raw);
    match body.rfind('\n') {
        Some(newline) => {
            let line = &body[newline + 1..];
            let indent = &line[..line.len() - line.trim_start().len()];
            let line_end = match body[..newline].ends_with('\r') {
                true => "\r\n",
                false => "\n",
            };
            format!("{comma}{line_end}{indent}")
        }
        None => format!("{comma} "),
    }
}

/// A record's text up to its last member (without the closing brace and the space before it).
fn body_of(raw: &str) -> &str {
    raw.strip_suffix('}').unwrap_or(raw).trim_end()
}

fn json_string(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::claim::SourceSpan;
    use crate::check::write_back::edit::apply;

    fn invalidation() -> Invalidation {
        Invalidation {
            commit: "0123456789abcdef0123456789abcdef01234567".into(),
            time: "2023-11-14T22:13:20Z".into(),
        }
    }

    fn claim(format: SourceFormat, key: &str) -> MemoryClaim {
        MemoryClaim {
            id: key.into(),
            text: "t".into(),
            source: SourceSpan {
                file: "m.json".into(),
                line: 1,
            },
            format,
            anchors: Vec::new(),
            test: None,
            check: None,
            record_key: Some(key.into()),
            origin: None,
        }
    }

    fn marked(text: &str, claim: &MemoryClaim) -> String {
        apply(
            text,
            field_edits(text, claim, &invalidation(), false).unwrap(),
        )
    }

    #[test]
    fn one_line_records_get_fields_before_their_brace_and_only_once() {
        let text = "{\"id\": \"a\", \"text\": \"t\"}\n{\"id\": \"b\", \"text\": \"u\"}\n";
        let once = marked(text, &claim(SourceFormat::Jsonl, "b"));
        assert_eq!(
            once,
            "{\"id\": \"a\", \"text\": \"t\"}\n{\"id\": \"b\", \"text\": \"u\", \"invalidated_at\": \"2023-11-14T22:13:20Z\", \"invalidated_by\": \"0123456789abcdef0123456789abcdef01234567\"}\n"
        );
        assert_eq!(marked(&once, &claim(SourceFormat::Jsonl, "b")), once);
    }

    #[test]
    fn pretty_records_keep_their_layout_and_graphiti_fills_invalid_at() {
        let text = "[\n  {\n    \"uuid\": \"e1\",\n    \"fact\": \"f\",\n    \"invalid_at\": null\n  }\n]\n";
        assert_eq!(
            marked(text, &claim(SourceFormat::Graphiti, "e1")),
            "[\n  {\n    \"uuid\": \"e1\",\n    \"fact\": \"f\",\n    \"invalid_at\": \"2023-11-14T22:13:20Z\",\n    \"invalidated_by\": \"0123456789abcdef0123456789abcdef01234567\"\n  }\n]\n"
        );
        let copilot = "[{\"fact\":\"f\"},{\"fact\":\"g\"}]";
        assert_eq!(
            marked(copilot, &claim(SourceFormat::CopilotJson, "#1")),
            "[{\"fact\":\"f\"},{\"fact\":\"g\", \"invalidated_at\":\"2023-11-14T22:13:20Z\", \"invalidated_by\":\"0123456789abcdef0123456789abcdef01234567\"}]"
        );
    }

    #[test]
    fn pretty_crlf_json_got_lf_lines_now_keeps_crlf() {
        let text = "[\r\n  {\r\n    \"fact\": \"f\"\r\n  }\r\n]\r\n";
        let marked = marked(text, &claim(SourceFormat::CopilotJson, "#0"));
        assert_eq!(
            marked,
            "[\r\n  {\r\n    \"fact\": \"f\",\r\n    \"invalidated_at\": \"2023-11-14T22:13:20Z\",\r\n    \"invalidated_by\": \"0123456789abcdef0123456789abcdef01234567\"\r\n  }\r\n]\r\n"
        );
        assert!(!marked.replace("\r\n", "").contains('\n'), "{marked:?}");
    }

    #[test]
    fn a_positional_record_moved_by_an_edit_is_found_by_its_id() {
        let mut ids = ClaimIds::new("m.json");
        let id = ids.next("g");
        let moved = "[{\"fact\":\"new\"},{\"fact\":\"f\"},{\"fact\":\"g\"}]";
        let claim = MemoryClaim {
            id,
            ..claim(SourceFormat::CopilotJson, "#1")
        };
        let edits = field_edits(moved, &claim, &invalidation(), true).unwrap();
        assert!(
            apply(moved, edits).ends_with("{\"fact\":\"g\", \"invalidated_at\":\"2023-11-14T22:13:20Z\", \"invalidated_by\":\"0123456789abcdef0123456789abcdef01234567\"}]")
        );
    }
}
