//! The records of a JSON memory file, however it is laid out (one object per line, an array, an
//! object wrapping an array under `results`, `memories` or `edges`, or a single object), each with
//! its byte range and line in the file and its fields still as raw JSON text.
//!
//! Keeping the raw text is what lets write-back add a field to one record and leave every other
//! byte of the file as it was.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use serde_json::value::RawValue;

use super::error::SourceError;
use super::lines::LineIndex;

/// Keys under which exports wrap their array of records.
const WRAPPERS: &[&str] = &["results", "memories", "edges"];

/// A field present with a type its reader does not accept (the caller names the field and line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WrongType {
    /// What the field holds instead: `a number`, `a list`, …
    pub found: &'static str,
}

/// The JSON type of `value`, as a message names it.
fn kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "an object",
    }
}

/// One record.
pub struct Record<'a> {
    /// Its position among the file's records, from 0.
    pub index: usize,
    /// Its bytes in the file.
    pub range: Range<usize>,
    /// The 1-based line it starts on.
    pub line: u32,
    pub fields: BTreeMap<String, &'a RawValue>,
    text: &'a str,
}

impl<'a> Record<'a> {
    /// A string field: `Ok(None)` when absent or null, `Err` when of another type. A number is
    /// not read as its text: `"check": 5` would run `5` as a command, and `"id": 7` and
    /// `"id": 7.0` would be two spellings of one id, so the user is asked to quote it.
    pub fn string(&self, field: &str) -> Result<Option<String>, WrongType> {
        match self.value(field) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::String(text)) => Ok(Some(text)),
            Some(other) => Err(WrongType {
                found: kind(&other),
            }),
        }
    }

    /// A list of strings: `Ok(empty)` when absent or null, `Err` when of another type or when an
    /// item is not a string.
    pub fn strings(&self, field: &str) -> Result<Vec<String>, WrongType> {
        match self.value(field) {
            None | Some(serde_json::Value::Null) => Ok(Vec::new()),
            Some(serde_json::Value::Array(items)) => items
                .into_iter()
                .map(|item| match item {
                    serde_json::Value::String(text) => Ok(text),
                    other => Err(WrongType {
                        found: match kind(&other) {
                            "null" => "a list holding null",
                            "a boolean" => "a list holding a boolean",
                            "a number" => "a list holding a number",
                            "a list" => "a list holding a list",
                            _ => "a list holding an object",
                        },
                    }),
                })
                .collect(),
            Some(other) => Err(WrongType {
                found: kind(&other),
            }),
        }
    }

    /// The value of `field`, parsed (its raw text was checked as JSON when the record was read).
    fn value(&self, field: &str) -> Option<serde_json::Value> {
        self.fields
            .get(field)
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
    }

    /// Whether `field` is present with a value other than null.
    pub fn is_set(&self, field: &str) -> bool {
        self.fields
            .get(field)
            .is_some_and(|raw| raw.get().trim() != "null")
    }

    /// The bytes of `field`'s value in the file.
    pub fn value_range(&self, field: &str) -> Option<Range<usize>> {
        let raw = self.fields.get(field)?.get();
        let start = raw.as_ptr() as usize - self.text.as_ptr() as usize;
        Some(start..start + raw.len())
    }
}

/// The records of `text`; `label` names the file in errors.
pub fn records<'a>(label: &Path, text: &'a str) -> Result<Vec<Record<'a>>, SourceError> {
    let lines = LineIndex::new(text);
    let bad = |line: u32, source| SourceError::BadJson {
        path: label.to_path_buf(),
        line,
        source,
    };
    let trimmed = text.trim_start();
    let raws: Vec<&'a RawValue> = if trimmed.starts_with('[') {
        serde_json::from_str(text).map_err(|error| bad(error.line() as u32, error))?
    } else if let Ok(object) = serde_json::from_str::<BTreeMap<String, &'a RawValue>>(text) {
        match WRAPPERS.iter().find_map(|key| object.get(*key)) {
            Some(array) => serde_json::from_str(array.get()).map_err(|error| {
                let start = offset_in(text, array.get());
                bad(lines.line(start) + error.line() as u32 - 1, error)
            })?,
            None => {
                vec![serde_json::from_str(text).map_err(|error| bad(error.line() as u32, error))?]
            }
        }
    } else {
        return json_lines(text, &lines, label);
    };
    raws.into_iter()
        .enumerate()
        .map(|(index, raw)| {
            let start = offset_in(text, raw.get());
            let line = lines.line(start);
            let fields = serde_json::from_str(raw.get())
                .map_err(|error| bad(line + error.line() as u32 - 1, error))?;
            Ok(Record {
                index,
                range: start..start + raw.get().len(),
                line,
                fields,
                text,
            })
        })
        .collect()
}

fn json_lines<'a>(
    text: &'a str,
    lines: &LineIndex,
    label: &Path,
) -> Result<Vec<Record<'a>>, SourceError> {
    let mut records = Vec::new();
    let mut start = 0;
    for raw_line in text.split_inclusive('\n') {
        let content = raw_line.trim();
        if !content.is_empty() {
            let begin = start + (raw_line.len() - raw_line.trim_start().len());
            let line = lines.line(begin);
            let fields = serde_json::from_str(content).map_err(|source| SourceError::BadJson {
                path: label.to_path_buf(),
                line,
                source,
            })?;
            records.push(Record {
                index: records.len(),
                range: begin..begin + content.len(),
                line,
                fields,
                text,
            });
        }
        start += raw_line.len();
    }
    Ok(records)
}

fn offset_in(text: &str, part: &str) -> usize {
    part.as_ptr() as usize - text.as_ptr() as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(text: &str) -> Vec<(usize, u32, String)> {
        records(Path::new("m.json"), text)
            .unwrap()
            .iter()
            .map(|record| {
                (
                    record.index,
                    record.line,
                    text[record.range.clone()].to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn every_layout_yields_records_with_lines_and_exact_ranges() {
        assert_eq!(
            summary("{\"a\": 1}\n\n  {\"b\": 2}  \n"),
            [(0, 1, "{\"a\": 1}".into()), (1, 3, "{\"b\": 2}".into())]
        );
        assert_eq!(
            summary("[\n  {\"a\": 1},\n  {\"b\":\n 2}\n]"),
            [(0, 2, "{\"a\": 1}".into()), (1, 3, "{\"b\":\n 2}".into())]
        );
        assert_eq!(
            summary("{\"results\": [\n{\"a\": 1}]}"),
            [(0, 2, "{\"a\": 1}".into())]
        );
        assert_eq!(
            summary("{\n\"a\": 1\n}\n"),
            [(0, 1, "{\n\"a\": 1\n}".into())]
        );
    }

    #[test]
    fn bad_json_names_its_line() {
        let error = records(Path::new("m.jsonl"), "{\"a\": 1}\n{\"a\": }\n")
            .err()
            .unwrap();
        assert!(
            error.to_string().starts_with("parse m.jsonl:2: bad JSON"),
            "{error}"
        );
        let error = records(Path::new("m.json"), "[\n{\"a\": 1},\n{\"a\" 2}\n]")
            .err()
            .unwrap();
        assert!(
            error.to_string().starts_with("parse m.json:3: bad JSON"),
            "{error}"
        );
        let error = records(Path::new("m.json"), "[\n1\n]").err().unwrap();
        assert!(
            error.to_string().starts_with("parse m.json:2: bad JSON"),
            "{error}"
        );
    }

    #[test]
    fn fields_read_as_strings_lists_and_value_ranges() {
        let text = "{\"id\": 7, \"tags\": [\"x\"], \"gone\": null, \"n\": {}}";
        let all = records(Path::new("m.jsonl"), text).unwrap();
        let record = &all[0];
        assert_eq!(record.string("id"), Err(WrongType { found: "a number" }));
        assert_eq!(record.string("gone"), Ok(None));
        assert_eq!(record.string("n"), Err(WrongType { found: "an object" }));
        assert_eq!(record.strings("tags"), Ok(vec!["x".to_string()]));
        assert_eq!(record.strings("id"), Err(WrongType { found: "a number" }));
        assert!(!record.is_set("gone") && record.is_set("id"));
        assert_eq!(&text[record.value_range("gone").unwrap()], "null");
    }
}
