//! The front matter of a Cursor rule (`description`, `globs`, `alwaysApply`) or a Claude rule
//! (`paths`): the file globs it applies to become file anchors of every claim in the file.
//!
//! Cursor writes `globs: *.py, src/**` unquoted, which YAML reads as an alias and rejects, so
//! front matter that YAML refuses is read again as plain `key: value` lines; only text that is
//! neither is an error.

use serde_yaml::Value;

/// The globs a front matter names (`globs` or `paths`, a comma-separated string or a list).
/// `Err` carries the offending line (relative to the front matter's first line) and why.
pub fn globs(front_matter: &str) -> Result<Vec<String>, (u32, String)> {
    match serde_yaml::from_str::<Value>(front_matter) {
        Ok(Value::Mapping(mapping)) => Ok(["globs", "paths"]
            .iter()
            .filter_map(|key| mapping.get(*key))
            .flat_map(globs_of_value)
            .collect()),
        Ok(Value::Null) => Ok(Vec::new()),
        Ok(_) => Err((
            0,
            "front matter must be a mapping of keys to values".to_string(),
        )),
        Err(_) => plain_globs(front_matter),
    }
}

fn globs_of_value(value: &Value) -> Vec<String> {
    match value {
        Value::String(text) => split_list(text),
        Value::Sequence(items) => items
            .iter()
            .filter_map(Value::as_str)
            .flat_map(split_list)
            .collect(),
        _ => Vec::new(),
    }
}

/// `key: value` lines, with `- item` lines continuing the previous key's list.
fn plain_globs(front_matter: &str) -> Result<Vec<String>, (u32, String)> {
    let mut globs = Vec::new();
    let mut key = String::new();
    for (number, line) in front_matter.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let value = if let Some(item) = trimmed.strip_prefix("- ") {
            item
        } else if let Some((name, value)) = trimmed.split_once(':') {
            key = name.trim().to_string();
            value
        } else {
            return Err((
                number as u32,
                format!("`{trimmed}` is neither `key: value` nor `- item`"),
            ));
        };
        if key == "globs" || key == "paths" {
            globs.extend(split_list(value.trim().trim_matches(['"', '\''])));
        }
    }
    Ok(globs)
}

fn split_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(|glob| glob.trim().trim_matches(['"', '\'']).to_string())
        .filter(|glob| !glob.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_come_from_yaml_lists_strings_and_cursors_unquoted_form() {
        assert_eq!(
            globs("description: x\nglobs: src/**/*.py, tests/*.py\n").unwrap(),
            ["src/**/*.py", "tests/*.py"]
        );
        assert_eq!(
            globs("paths:\n  - \"src/**\"\n  - lib/*.py\n").unwrap(),
            ["src/**", "lib/*.py"]
        );
        assert_eq!(
            globs("globs: *.py, *.pyi\nalwaysApply: false\n").unwrap(),
            ["*.py", "*.pyi"]
        );
        assert!(globs("alwaysApply: true\n").unwrap().is_empty());
        assert_eq!(
            globs("globs: [unclosed\nnot yaml at all\n").unwrap_err().0,
            1
        );
    }
}
