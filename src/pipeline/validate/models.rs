//! The `models:` section: the language models arms call, their prices and request slots.
//!
//! A key must never enter a pipeline file, so `api_key_env` holds the *name* of a variable; a value
//! that looks like a key is rejected without echoing it (messages end up in logs).

use super::checker::{Checker, Fields};
use crate::pipeline::suggest;
use crate::pipeline::yaml::{Mark, Node, Value};
use crate::pipeline::{ModelSpec, Price};

/// The keys a model entry may have.
const KEYS: &[&str] = &[
    "provider",
    "model",
    "base_url",
    "api_key_env",
    "price_per_mtok",
    "concurrency",
];

/// The APIs claimflow can talk to.
const PROVIDERS: &[&str] = &["openai", "anthropic", "gemini", "llama-server"];

/// Request slots per model when the pipeline does not say.
const DEFAULT_CONCURRENCY: usize = 4;

/// What the section yielded.
#[derive(Debug, Default)]
pub struct Checked {
    /// The valid entries, in file order.
    pub specs: Vec<(String, ModelSpec)>,
    /// Every name declared, valid entry or not.
    pub names: Vec<String>,
}

/// Checks the `models:` map.
pub fn check(checker: &mut Checker, node: &Node) -> Checked {
    let mut checked = Checked::default();
    let Some(models) = checker.map(node, "`models`") else {
        return checked;
    };
    for entry in models.entries() {
        checked.names.push(entry.key.clone());
        let owner = format!("model `{}`", entry.key);
        let Some(fields) = checker.map(&entry.value, &owner) else {
            continue;
        };
        if let Some(spec) = model(checker, &fields, &owner, entry.key_mark) {
            checked.specs.push((entry.key.clone(), spec));
        }
    }
    checked
}

fn model(checker: &mut Checker, fields: &Fields, owner: &str, at: Mark) -> Option<ModelSpec> {
    checker.unknown_keys(fields, KEYS, owner);
    let provider = checker
        .required(
            fields,
            "provider",
            owner,
            at,
            &format!(
                "add `provider:`, one of {}",
                suggest::quoted_list(PROVIDERS)
            ),
        )
        .and_then(|node| {
            let provider = checker.string(node, &format!("`provider` of {owner}"))?;
            if PROVIDERS.contains(&provider.as_str()) {
                return Some(provider);
            }
            let hint = match suggest::nearest(&provider, PROVIDERS.iter().copied()) {
                Some(near) => format!("did you mean `{near}`?"),
                None => format!(
                    "known providers: {} (`openai` speaks to any OpenAI-compatible server)",
                    suggest::quoted_list(PROVIDERS)
                ),
            };
            checker.error(
                node.mark,
                format!("unknown provider `{provider}` in {owner}"),
                Some(hint),
            );
            None
        });
    let model = checker
        .required(
            fields,
            "model",
            owner,
            at,
            "add `model:` with the provider's model id",
        )
        .and_then(|node| checker.string(node, &format!("`model` of {owner}")));
    let base_url = optional(fields.get("base_url").map(|node| {
        let url = checker.string(node, &format!("`base_url` of {owner}"))?;
        if url.starts_with("http://") || url.starts_with("https://") {
            return Some(url);
        }
        checker.error(
            node.mark,
            format!("`base_url` of {owner} must be an http:// or https:// address"),
            Some("e.g. `base_url: http://localhost:8080/v1`".to_string()),
        );
        None
    }));
    let api_key_env = optional(
        fields
            .get("api_key_env")
            .map(|node| api_key_env(checker, node, owner)),
    );
    let price = optional(
        fields
            .get("price_per_mtok")
            .map(|node| price(checker, node, owner)),
    );
    let concurrency = optional(fields.get("concurrency").map(|node| {
        let value = checker.integer(node, &format!("`concurrency` of {owner}"))?;
        match usize::try_from(value) {
            Ok(slots) if slots >= 1 => Some(slots),
            _ => {
                checker.error(
                    node.mark,
                    format!("`concurrency` of {owner} must be at least 1, found {value}"),
                    Some("it is the number of requests sent to this model at once".to_string()),
                );
                None
            }
        }
    }));
    Some(ModelSpec {
        provider: provider?,
        model: model?,
        base_url: base_url?,
        api_key_env: api_key_env?,
        price_per_mtok: price?,
        concurrency: concurrency?.unwrap_or(DEFAULT_CONCURRENCY),
    })
}

/// An optional value: absent is fine (`Some(None)`), present but invalid is not (`None`).
fn optional<T>(value: Option<Option<T>>) -> Option<Option<T>> {
    match value {
        None => Some(None),
        Some(Some(value)) => Some(Some(value)),
        Some(None) => None,
    }
}

fn api_key_env(checker: &mut Checker, node: &Node, owner: &str) -> Option<String> {
    let Value::String(name) = &node.value else {
        checker.wrong_type(node, &format!("`api_key_env` of {owner}"), "a string");
        return None;
    };
    let hint = "write the variable's name, e.g. `api_key_env: CLAIMFLOW_API_KEY`, and export the \
                key in that variable";
    if looks_like_a_key(name) {
        checker.error(
            node.mark,
            format!(
                "`api_key_env` of {owner} looks like an API key itself, not the name of an \
                 environment variable"
            ),
            Some(format!(
                "{hint}; if this is a real key, remove it from the file and revoke it"
            )),
        );
        return None;
    }
    if !is_variable_name(name) {
        // The value is not echoed: it may be a key in a shape we do not recognise.
        checker.error(
            node.mark,
            format!(
                "`api_key_env` of {owner} must be an environment variable name (letters, digits \
                 and `_`)"
            ),
            Some(hint.to_string()),
        );
        return None;
    }
    Some(name.clone())
}

/// True for `[A-Za-z_][A-Za-z0-9_]*`.
fn is_variable_name(name: &str) -> bool {
    let mut characters = name.chars();
    characters
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && characters.all(|character| character.is_ascii_alphanumeric() || character == '_')
}

/// Known key prefixes, or a long mixed string of lowercase letters and digits: variable names are
/// conventionally upper case, keys are random.
fn looks_like_a_key(value: &str) -> bool {
    const PREFIXES: &[&str] = &["sk-", "sk_", "AIza", "xai-", "gsk_", "hf_", "ghp_", "pk-"];
    let has_lower = value
        .chars()
        .any(|character| character.is_ascii_lowercase());
    let has_digit = value.chars().any(|character| character.is_ascii_digit());
    PREFIXES.iter().any(|prefix| value.starts_with(prefix))
        || (value.len() >= 20 && has_lower && has_digit)
}

fn price(checker: &mut Checker, node: &Node, owner: &str) -> Option<Price> {
    let label = format!("`price_per_mtok` of {owner}");
    let fields = checker.map(node, &label)?;
    checker.unknown_keys(&fields, &["input", "output"], &label);
    let mut read = |key: &str| {
        let node = checker.required(
            &fields,
            key,
            &label,
            fields.mark,
            "give dollars per million tokens as `{input: 0.25, output: 1.0}`",
        )?;
        let value = checker.number(node, &format!("`{key}` of {label}"))?;
        if value < 0.0 {
            checker.error(
                node.mark,
                format!("`{key}` of {label} must not be negative"),
                Some("write the price in dollars per million tokens; `0` for a free model".into()),
            );
            return None;
        }
        Some(value)
    };
    let input = read("input");
    let output = read("output");
    Some(Price {
        input: input?,
        output: output?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variable_names_are_not_keys() {
        for name in [
            "CLAIMFLOW_API_KEY",
            "OPENAI_API_KEY",
            "my_key",
            "GEMINI_API_KEY_2",
        ] {
            assert!(!looks_like_a_key(name), "{name}");
            assert!(is_variable_name(name), "{name}");
        }
    }

    #[test]
    fn keys_are_recognised() {
        for key in [
            "sk-proj-abc",
            "AIzaSyA1b2C3d4E5f6G7h8I9j0",
            "a8f3k2j9d8s7f6g5h4j3k2l1",
        ] {
            assert!(looks_like_a_key(key), "{key}");
        }
    }
}
