//! Loading a pipeline file: YAML with positions, checked against the DSL and the step kinds' params.

use std::path::Path;

use super::yaml;
use super::{Diagnostic, Diagnostics, Pipeline};
use crate::pipeline::Kinds;

/// Loads and validates the pipeline at `file`; relative paths resolve against `root`.
pub fn load(file: &Path, root: &Path, registry: &dyn Kinds) -> Result<Pipeline, Diagnostics> {
    let text = std::fs::read_to_string(root.join(file)).map_err(|error| {
        let hint = if error.kind() == std::io::ErrorKind::InvalidData {
            "save the pipeline as UTF-8 text"
        } else {
            "check the path; it resolves against the directory claimflow runs in, or -C DIR"
        };
        Diagnostics(vec![Diagnostic {
            file: file.to_path_buf(),
            line: 1,
            column: 1,
            message: format!("cannot read the pipeline: {error}"),
            hint: Some(hint.into()),
            kind: Default::default(),
        }])
    })?;
    load_str(&text, file, root, registry)
}

/// Validates pipeline text that claims to come from `file`.
pub fn load_str(
    text: &str,
    file: &Path,
    root: &Path,
    registry: &dyn Kinds,
) -> Result<Pipeline, Diagnostics> {
    // Editors on some systems start UTF-8 files with a byte-order mark; it is not part of a key.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let document = yaml::parse(text).map_err(|error| {
        Diagnostics(vec![Diagnostic {
            file: file.to_path_buf(),
            line: error.mark.line,
            column: error.mark.column,
            message: format!("invalid YAML: {}", error.message),
            hint: Some(syntax_hint(&error.message).into()),
            kind: Default::default(),
        }])
    })?;
    super::validate::validate(&document, file, root, registry).map_err(Diagnostics)
}

/// What usually causes a YAML parser's complaint, in the user's terms.
fn syntax_hint(message: &str) -> &'static str {
    if message.contains("tab") {
        "indent with spaces; YAML does not allow tabs for indentation"
    } else if message.contains("anchor") {
        "define the anchor with `&name` before referring to it with `*name`"
    } else {
        "check the indentation and quoting here; a value containing `: `, ` #`, `{` or `}`, or \
         starting with `[`, `*`, `&` or `!`, needs quotes"
    }
}
