//! The diagnostic sink and the typed reads every section of the pipeline shares.
//!
//! Each read reports a problem and returns `None` instead of stopping, so one pass finds every
//! problem in the file. Messages name the key and its owner ("`branch` of repository `x`"), the
//! type that was expected and the one found.

use std::path::Path;

use crate::pipeline::suggest;
use crate::pipeline::yaml::{Entry, Mark, Node, Value};
use crate::pipeline::{Diagnostic, DiagnosticKind};

/// Collects diagnostics for one file.
pub struct Checker<'a> {
    file: &'a Path,
    /// The project root: relative paths in the pipeline resolve against it.
    pub root: &'a Path,
    diagnostics: Vec<Diagnostic>,
}

/// A map's entries, first occurrence of each key only (duplicates are reported separately).
pub struct Fields<'n> {
    pub mark: Mark,
    entries: Vec<&'n Entry>,
}

impl<'n> Fields<'n> {
    /// Keeps the first entry of each key.
    pub fn of(mark: Mark, all: &'n [Entry]) -> Self {
        let mut entries: Vec<&Entry> = Vec::new();
        for entry in all {
            if !entries.iter().any(|seen| seen.key == entry.key) {
                entries.push(entry);
            }
        }
        Fields { mark, entries }
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<&'n Node> {
        self.entry(key).map(|entry| &entry.value)
    }

    /// The entry under `key`.
    pub fn entry(&self, key: &str) -> Option<&'n Entry> {
        self.entries.iter().copied().find(|entry| entry.key == key)
    }

    /// Every entry, in file order.
    pub fn entries(&self) -> impl Iterator<Item = &'n Entry> + '_ {
        self.entries.iter().copied()
    }
}

impl<'a> Checker<'a> {
    pub fn new(file: &'a Path, root: &'a Path) -> Self {
        Checker {
            file,
            root,
            diagnostics: Vec::new(),
        }
    }

    /// Records a problem at `mark`.
    pub fn error(&mut self, mark: Mark, message: impl Into<String>, hint: Option<String>) {
        self.error_of_kind(DiagnosticKind::Invalid, mark, message, hint);
    }

    /// Records a problem of a sort callers may treat apart at `mark`.
    pub fn error_of_kind(
        &mut self,
        kind: DiagnosticKind,
        mark: Mark,
        message: impl Into<String>,
        hint: Option<String>,
    ) {
        self.diagnostics.push(Diagnostic {
            file: self.file.to_path_buf(),
            line: mark.line,
            column: mark.column,
            message: message.into(),
            hint,
            kind,
        });
    }

    /// Every problem, in file order (problems at the same place keep the order they were found).
    pub fn finish(mut self) -> Vec<Diagnostic> {
        self.diagnostics
            .sort_by_key(|diagnostic| (diagnostic.line, diagnostic.column));
        self.diagnostics
    }

    /// How many problems have been found so far.
    pub fn count(&self) -> usize {
        self.diagnostics.len()
    }

    /// True when no problem has been found yet.
    pub fn is_clean(&self) -> bool {
        self.diagnostics.is_empty()
    }

    /// Reports a value of the wrong type, with a hint on how to write the expected one.
    pub fn wrong_type(&mut self, node: &Node, label: &str, expected: &str) {
        let hint = match (&node.value, expected) {
            (Value::Null, _) => "the value is empty; write one after the colon".to_string(),
            (Value::Integer(_) | Value::Float(_) | Value::Bool(_), "a string") => {
                "put it in quotes to make it a string".to_string()
            }
            (Value::String(_), "an integer") => {
                "write a whole number without quotes, e.g. `10`".to_string()
            }
            (Value::String(_), "a finite number") => {
                "write a number without quotes, e.g. `0.25`".to_string()
            }
            (Value::Float(_), "a finite number") => {
                "JSON cannot hold `.nan` or `.inf`; write a finite number".to_string()
            }
            (Value::String(_), "`true` or `false`") => {
                "write `true` or `false` without quotes".to_string()
            }
            (_, "a list of strings") => "write a list, e.g. `[first, second]`".to_string(),
            (_, "a map") => "write `key: value` pairs, e.g. `{runs: 10}`".to_string(),
            (_, "a map from names to lists of strings") => {
                "write one list per name, e.g. `{name: [first, second]}`".to_string()
            }
            _ => format!("write {expected} here"),
        };
        let found = match &node.value {
            Value::Float(value) if !value.is_finite() => "a value that is not finite",
            other => other.kind(),
        };
        self.error(
            node.mark,
            format!("{label} must be {expected}, found {found}"),
            Some(hint),
        );
    }

    /// The node as a map.
    pub fn map<'n>(&mut self, node: &'n Node, label: &str) -> Option<Fields<'n>> {
        match &node.value {
            Value::Map(entries) => Some(Fields::of(node.mark, entries)),
            _ => {
                self.wrong_type(node, label, "a map");
                None
            }
        }
    }

    /// The node as a list.
    pub fn list<'n>(&mut self, node: &'n Node, label: &str) -> Option<&'n [Node]> {
        match &node.value {
            Value::List(items) => Some(items),
            _ => {
                self.wrong_type(node, label, "a list");
                None
            }
        }
    }

    /// The node as a string.
    pub fn string(&mut self, node: &Node, label: &str) -> Option<String> {
        match &node.value {
            Value::String(text) => Some(text.clone()),
            _ => {
                self.wrong_type(node, label, "a string");
                None
            }
        }
    }

    /// The node as an integer.
    pub fn integer(&mut self, node: &Node, label: &str) -> Option<i64> {
        match &node.value {
            Value::Integer(value) => Some(*value),
            _ => {
                self.wrong_type(node, label, "an integer");
                None
            }
        }
    }

    /// The node as a finite number (integers included).
    pub fn number(&mut self, node: &Node, label: &str) -> Option<f64> {
        match &node.value {
            // Prices and rates are far below 2^53, where the conversion would round.
            Value::Integer(value) => Some(*value as f64),
            Value::Float(value) if value.is_finite() => Some(*value),
            _ => {
                self.wrong_type(node, label, "a finite number");
                None
            }
        }
    }

    /// The node as a list of strings; reports every item that is not one.
    pub fn string_list(&mut self, node: &Node, label: &str) -> Option<Vec<String>> {
        let Value::List(items) = &node.value else {
            self.wrong_type(node, label, "a list of strings");
            return None;
        };
        let mut strings = Vec::new();
        let mut clean = true;
        for item in items {
            match self.string(item, &format!("each item of {label}")) {
                Some(text) => strings.push(text),
                None => clean = false,
            }
        }
        clean.then_some(strings)
    }

    /// Reports every key of `fields` that is not in `allowed`, with the nearest valid key.
    pub fn unknown_keys(&mut self, fields: &Fields, allowed: &[&str], owner: &str) {
        for entry in fields.entries() {
            if !allowed.contains(&entry.key.as_str()) {
                self.error(
                    entry.key_mark,
                    format!("unknown key `{}` in {owner}", entry.key),
                    suggest::hint(&entry.key, allowed, "valid keys"),
                );
            }
        }
    }

    /// The value under a key that must be present.
    pub fn required<'n>(
        &mut self,
        fields: &Fields<'n>,
        key: &str,
        owner: &str,
        at: Mark,
        hint: &str,
    ) -> Option<&'n Node> {
        let node = fields.get(key);
        if node.is_none() {
            self.error(
                at,
                format!("{owner} is missing the required key `{key}`"),
                Some(hint.to_string()),
            );
        }
        node
    }

    /// Checks that a name can become a file name.
    pub fn file_name(&mut self, name: &str, mark: Mark, noun: &str) -> bool {
        if is_file_name(name) {
            return true;
        }
        self.error(
            mark,
            format!("{noun} name `{name}` is not allowed"),
            Some(
                "names become file names: use letters, digits, `_`, `.` and `-`, not starting \
                 with `.` or `-`"
                    .to_string(),
            ),
        );
        false
    }
}

/// True for names matching `[A-Za-z0-9_][A-Za-z0-9_.-]*`.
pub fn is_file_name(name: &str) -> bool {
    let mut characters = name.chars();
    characters
        .next()
        .is_some_and(|first| first.is_ascii_alphanumeric() || first == '_')
        && characters.all(|character| {
            character.is_ascii_alphanumeric() || matches!(character, '_' | '.' | '-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_follow_the_pattern() {
        for good in ["rank", "a6_risk", "_x", "0", "v1.2-b"] {
            assert!(is_file_name(good), "{good}");
        }
        for bad in ["", ".hidden", "-x", "a b", "a/b", "ü"] {
            assert!(!is_file_name(bad), "{bad}");
        }
    }
}
