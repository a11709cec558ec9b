//! Duplicate keys, anywhere in the file.
//!
//! YAML loaders keep one of two equal keys and drop the other without a word, so a second step
//! called `rank` would silently replace the first. The positioned tree keeps both; this walk reports
//! every later occurrence, naming the line of the first.

use super::checker::Checker;
use crate::pipeline::yaml::{Node, Value};

/// Reports every duplicate key in every map under `node`; `path` names where `node` sits.
pub fn check(checker: &mut Checker, node: &Node, path: &str) {
    match &node.value {
        Value::Map(entries) => {
            for (index, entry) in entries.iter().enumerate() {
                if let Some(first) = entries[..index]
                    .iter()
                    .find(|earlier| earlier.key == entry.key)
                {
                    let line = first.key_mark.line;
                    let (message, hint) = match path {
                        "steps" => (
                            format!(
                                "step `{}` is declared twice (first at line {line})",
                                entry.key
                            ),
                            "step names must be unique; rename or remove one of them",
                        ),
                        "models" => (
                            format!(
                                "model `{}` is declared twice (first at line {line})",
                                entry.key
                            ),
                            "model names must be unique; rename or remove one of them",
                        ),
                        _ => (
                            format!(
                                "duplicate key `{}` in {} (first at line {line})",
                                entry.key,
                                describe(path)
                            ),
                            "YAML would keep only one of them; remove or merge the other",
                        ),
                    };
                    checker.error(entry.key_mark, message, Some(hint.to_string()));
                }
                check(checker, &entry.value, &join(path, &entry.key));
            }
        }
        Value::List(items) => {
            for (index, item) in items.iter().enumerate() {
                check(checker, item, &format!("{path}[{index}]"));
            }
        }
        _ => {}
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn describe(path: &str) -> String {
    if path.is_empty() {
        "the top level".to_string()
    } else {
        format!("`{path}`")
    }
}
