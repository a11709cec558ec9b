//! Which reader a file needs: from its extension (`.md`, `.mdc`), else from its content — a JSON
//! file's first record says which memory format it is (`uuid` + `fact`: Graphiti; `memory`: mem0;
//! `fact`: Copilot-style; `text`: claimflow's JSON Lines).

use std::path::Path;

use crate::check::claim::SourceFormat;

use super::error::SourceError;
use super::json_records::records;

/// The format of the file at `path` with content `text`; `label` names it in errors.
pub fn detect(path: &Path, label: &Path, text: &str) -> Result<SourceFormat, SourceError> {
    let extension = path
        .extension()
        .map(|extension| extension.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    match extension.as_str() {
        "mdc" => return Ok(SourceFormat::Mdc),
        "md" | "markdown" | "mdx" => return Ok(SourceFormat::Markdown),
        "json" | "jsonl" | "ndjson" => {}
        _ if !text.trim_start().starts_with(['{', '[']) => return Ok(SourceFormat::Markdown),
        _ => {}
    }
    let all = records(label, text)?;
    let Some(first) = all.first() else {
        return Ok(SourceFormat::Jsonl);
    };
    let has = |field: &str| first.fields.contains_key(field);
    if has("uuid") && has("fact") {
        Ok(SourceFormat::Graphiti)
    } else if has("memory") {
        Ok(SourceFormat::Mem0)
    } else if has("fact") {
        Ok(SourceFormat::CopilotJson)
    } else if has("text") {
        Ok(SourceFormat::Jsonl)
    } else {
        Err(SourceError::UnknownFormat {
            path: label.to_path_buf(),
            why: format!(
                "its first record, on line {}, has none of `text`, `fact`, `memory`",
                first.line
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detected(name: &str, text: &str) -> Result<SourceFormat, SourceError> {
        detect(Path::new(name), Path::new(name), text)
    }

    #[test]
    fn formats_follow_extension_then_first_record() {
        assert_eq!(detected("CLAUDE.md", "{").unwrap(), SourceFormat::Markdown);
        assert_eq!(detected("python.mdc", "").unwrap(), SourceFormat::Mdc);
        assert_eq!(
            detected("NOTES", "- `a` b").unwrap(),
            SourceFormat::Markdown
        );
        assert_eq!(
            detected("c.jsonl", "{\"id\": \"1\", \"text\": \"t\"}").unwrap(),
            SourceFormat::Jsonl
        );
        assert_eq!(
            detected("m.json", "{\"results\": [{\"id\": 1, \"memory\": \"m\"}]}").unwrap(),
            SourceFormat::Mem0
        );
        assert_eq!(
            detected("e.json", "[{\"uuid\": \"u\", \"fact\": \"f\"}]").unwrap(),
            SourceFormat::Graphiti
        );
        assert_eq!(
            detected("export", "[{\"subject\": \"s\", \"fact\": \"f\"}]").unwrap(),
            SourceFormat::CopilotJson
        );
        assert_eq!(detected("empty.json", "").unwrap(), SourceFormat::Jsonl);
        let unknown = detected("x.json", "\n{\"name\": 1}")
            .unwrap_err()
            .to_string();
        assert!(
            unknown.contains("on line 2") && unknown.contains("name it with --source-format"),
            "{unknown}"
        );
    }
}
