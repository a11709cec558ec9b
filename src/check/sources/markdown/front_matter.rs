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
        Ok(Value::Mapping(mapping)) => {
            let mut globs = Vec::new();
            for key in ["globs", "paths"] {
                if let Some(value) = mapping.get(key) {
                    globs.extend(globs_of_value(value).map_err(|found| {
                        (
                            line_of(front_matter, key),
                            format!("`{key}` must be a glob, a comma-separated string of globs or a list of them, not {found}"),
                        )
                    })?);
                }
            }
            Ok(globs)
        }
        Ok(Value::Null) => Ok(Vec::new()),
        Ok(_) => Err((
            0,
            "front matter must be a mapping of keys to values".to_string(),
        )),
        Err(_) => plain_globs(front_matter),
    }
}

/// The globs of one key's value; `Err` says what the value is instead. An empty key (`globs:`, as
/// Cursor writes a rule that applies everywhere) names none; a number or a flag is no glob and is
/// refused rather than dropped, since a rule whose anchors vanish silently is never checked.
fn globs_of_value(value: &Value) -> Result<Vec<String>, String> {
    match value {
        Value::Null => Ok(Vec::new()),
        Value::String(text) => Ok(split_list(text)),
        Value::Sequence(items) => {
            let mut globs = Vec::new();
            for item in items {
                match item {
                    Value::String(text) => globs.extend(split_list(text)),
                    other => return Err(format!("a list holding {}", kind(other))),
                }
            }
            Ok(globs)
        }
        other => Err(kind(other).to_string()),
    }
}

/// A YAML value's type, as a message names it.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

/// The line (from 0) of the front matter where `key` is set, for an error about its value.
fn line_of(front_matter: &str, key: &str) -> u32 {
    front_matter
        .lines()
        .position(|line| {
            line.strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
        })
        .unwrap_or(0) as u32
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
        assert!(globs("globs:\nalwaysApply: true\n").unwrap().is_empty());
    }

    #[test]
    fn globs_of_the_wrong_type_were_dropped_silently() {
        let (line, message) = globs("description: x\nglobs: 5\n").unwrap_err();
        assert_eq!(line, 1);
        assert!(message.contains("`globs` must be a glob") && message.ends_with("not a number"));
        let (line, message) =
            globs("alwaysApply: true\npaths:\n  - src/**\n  - true\n").unwrap_err();
        assert_eq!(line, 1);
        assert!(
            message.ends_with("not a list holding a boolean"),
            "{message}"
        );
    }
}
