//! Converting YAML values to JSON, the form step kinds read their parameters in.
//!
//! Maps become sorted JSON objects (so the value is canonical for keys), integers stay integers
//! and floats stay floats; a value JSON cannot hold (`.nan`, `.inf`) is reported, not rounded.

use std::collections::BTreeMap;

use super::checker::{Checker, Fields};
use crate::pipeline::yaml::{Node, Value};

/// The node as JSON; reports values JSON cannot hold.
pub fn to_json(checker: &mut Checker, node: &Node, label: &str) -> Option<serde_json::Value> {
    Some(match &node.value {
        Value::Null => serde_json::Value::Null,
        Value::Bool(value) => serde_json::Value::Bool(*value),
        Value::Integer(value) => serde_json::Value::from(*value),
        Value::Float(value) => match serde_json::Number::from_f64(*value) {
            Some(number) => serde_json::Value::Number(number),
            None => {
                checker.wrong_type(node, label, "a finite number");
                return None;
            }
        },
        Value::String(text) => serde_json::Value::String(text.clone()),
        Value::List(items) => {
            let mut values = Vec::with_capacity(items.len());
            let mut clean = true;
            for item in items {
                match to_json(checker, item, label) {
                    Some(value) => values.push(value),
                    None => clean = false,
                }
            }
            if !clean {
                return None;
            }
            serde_json::Value::Array(values)
        }
        Value::Map(entries) => {
            // Duplicate keys are reported once by the duplicates walk; the first one counts here.
            let fields = Fields::of(node.mark, entries);
            let mut sorted = BTreeMap::new();
            let mut clean = true;
            for entry in fields.entries() {
                match to_json(checker, &entry.value, label) {
                    Some(value) => {
                        sorted.insert(entry.key.clone(), value);
                    }
                    None => clean = false,
                }
            }
            if !clean {
                return None;
            }
            serde_json::Value::Object(sorted.into_iter().collect())
        }
    })
}
