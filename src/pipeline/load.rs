//! Loading a pipeline file: YAML with positions, checked against the DSL and the step kinds' params.

use std::path::Path;

use super::yaml;
use super::{Diagnostic, Diagnostics, Pipeline};
use crate::steps::Registry;

/// Loads and validates the pipeline at `file`; relative paths resolve against `root`.
pub fn load(file: &Path, root: &Path, registry: &Registry) -> Result<Pipeline, Diagnostics> {
    let text = std::fs::read_to_string(root.join(file)).map_err(|error| {
        Diagnostics(vec![Diagnostic {
            file: file.to_path_buf(),
            line: 1,
            column: 1,
            message: format!("cannot read the pipeline: {error}"),
            hint: Some(
                "check the path; it resolves against the directory claimflow runs in, or -C DIR"
                    .into(),
            ),
        }])
    })?;
    load_str(&text, file, root, registry)
}

/// Validates pipeline text that claims to come from `file`.
pub fn load_str(
    text: &str,
    file: &Path,
    root: &Path,
    registry: &Registry,
) -> Result<Pipeline, Diagnostics> {
    let document = yaml::parse(text).map_err(|error| {
        Diagnostics(vec![Diagnostic {
            file: file.to_path_buf(),
            line: error.mark.line,
            column: error.mark.column,
            message: format!("invalid YAML: {}", error.message),
            hint: Some(
                "check the indentation and quoting here; a value containing `: ` or starting \
                 with `[`, `{`, `*` or `&` needs quotes"
                    .into(),
            ),
        }])
    })?;
    super::validate::validate(&document, file, root, registry).map_err(Diagnostics)
}
