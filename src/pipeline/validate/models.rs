//! The `models:` section: the language models arms call, how they are sampled, their prices,
//! request slots, rate limits and timeouts, each checked at its line and column.
//!
//! A key must never enter a pipeline file, so `api_key_env` holds the *name* of a variable; a value
//! that looks like a key is rejected without echoing it (messages end up in logs).

use super::checker::{Checker, Fields};
use crate::pipeline::Provider;
use crate::pipeline::suggest;
use crate::pipeline::yaml::{Mark, Node, Value};
use crate::pipeline::{ModelSpec, Price};

/// The keys a model entry may have.
const KEYS: &[&str] = &[
    "provider",
    "model",
    "base_url",
    "api_key_env",
    "temperature",
    "max_output_tokens",
    "structured_output",
    "price_per_mtok",
    "concurrency",
    "requests_per_minute",
    "tokens_per_minute",
    "timeout",
    "retries",
    "cutoff",
    "fallback",
];

/// What the section yielded.
#[derive(Debug, Default)]
pub struct Checked {
    /// The valid entries, in file order, each entry whose key is not set already replaced by its
    /// `fallback:` (see [`resolve_fallbacks`]).
    pub specs: Vec<(String, ModelSpec)>,
    /// Every name declared, valid entry or not.
    pub names: Vec<String>,
}

/// Checks the `models:` map, then puts each entry's `fallback:` in its place when the variable
/// its `api_key_env` names is unset or empty in this process's environment.
pub fn check(checker: &mut Checker, node: &Node) -> Checked {
    let mut checked = Checked::default();
    let Some(models) = checker.map(node, "`models`") else {
        return checked;
    };
    let mut fallbacks: Vec<(String, String, Mark)> = Vec::new();
    for entry in models.entries() {
        checked.names.push(entry.key.clone());
        let owner = format!("model `{}`", entry.key);
        let Some(fields) = checker.map(&entry.value, &owner) else {
            continue;
        };
        if let Some(node) = fields.get("fallback")
            && let Value::String(target) = &node.value
        {
            fallbacks.push((entry.key.clone(), target.clone(), node.mark));
        }
        if let Some(spec) = model(checker, &fields, &owner, entry.key_mark) {
            checked.specs.push((entry.key.clone(), spec));
        }
    }
    check_fallbacks(checker, &checked.names, &fallbacks);
    if checker.is_clean() {
        resolve_fallbacks(&mut checked.specs, &|variable| {
            std::env::var_os(variable).is_some_and(|value| !value.is_empty())
        });
    }
    checked
}

/// Every `fallback:` names another declared entry, and following them never comes back.
fn check_fallbacks(checker: &mut Checker, names: &[String], fallbacks: &[(String, String, Mark)]) {
    let target = |name: &str| {
        fallbacks
            .iter()
            .find(|(owner, _, _)| owner == name)
            .map(|(_, target, _)| target.as_str())
    };
    for (owner, fallback, mark) in fallbacks {
        if fallback == owner {
            checker.error(
                *mark,
                format!("model `{owner}` falls back to itself"),
                Some(
                    "name another `models:` entry, e.g. a local `{provider: llama-server}`".into(),
                ),
            );
            continue;
        }
        if !names.iter().any(|name| name == fallback) {
            let hint = match suggest::nearest(fallback, names.iter().map(String::as_str)) {
                Some(near) => format!("did you mean `{near}`?"),
                None => format!(
                    "declare it under `models:`, e.g. `{fallback}: {{provider: llama-server}}`"
                ),
            };
            checker.error(
                *mark,
                format!("`fallback` of model `{owner}` names no model `{fallback}`"),
                Some(hint),
            );
            continue;
        }
        // Follow the chain from the fallback: reaching `owner` again is a cycle.
        let mut chain = vec![owner.as_str(), fallback.as_str()];
        let mut next = target(fallback);
        while let Some(name) = next {
            if name == owner {
                chain.push(name);
                checker.error(
                    *mark,
                    format!(
                        "model fallbacks go round in a cycle: {}",
                        chain.join(" -> ")
                    ),
                    Some("end the chain at an entry with no `fallback:`".into()),
                );
                break;
            }
            if chain.contains(&name) {
                break; // a cycle further on, reported at its own entry
            }
            chain.push(name);
            next = target(name);
        }
    }
}

/// Replaces every entry whose key variable is not set (`is_set` false) and that has a `fallback:`
/// by the entry it falls back to (followed until an entry whose key is set, or that needs none),
/// marked with the line the run prints about it; the replaced entry's `cutoff:`, if it has one,
/// stays. The fallbacks were checked: no cycle.
pub fn resolve_fallbacks(specs: &mut [(String, ModelSpec)], is_set: &dyn Fn(&str) -> bool) {
    let original: Vec<(String, ModelSpec)> = specs.to_vec();
    let find = |name: &str| {
        original
            .iter()
            .find(|(entry, _)| entry == name)
            .map(|(_, spec)| spec)
    };
    fn missing_key<'s>(spec: &'s ModelSpec, is_set: &dyn Fn(&str) -> bool) -> Option<&'s str> {
        spec.api_key_env
            .as_deref()
            .filter(|variable| !is_set(variable))
    }
    for (name, spec) in specs.iter_mut() {
        let Some(variable) = missing_key(spec, is_set).map(str::to_string) else {
            continue;
        };
        if spec.fallback.is_none() {
            continue;
        }
        let wanted = spec.model.clone();
        let mut used = spec.fallback.clone().expect("checked above");
        let mut effective = match find(&used) {
            Some(found) => found.clone(),
            None => continue,
        };
        for _ in 0..original.len() {
            match (missing_key(&effective, is_set), effective.fallback.clone()) {
                (Some(_), Some(next)) => match find(&next) {
                    Some(found) => {
                        used = next;
                        effective = found.clone();
                    }
                    None => break,
                },
                _ => break,
            }
        }
        // The post-cutoff split is drawn at the training cutoff of the model the pipeline is
        // written for: a stand-in answers over that same split, whether or not a key is set.
        if spec.cutoff.is_some() {
            effective.cutoff = spec.cutoff.clone();
        }
        effective.stands_in = Some(format!(
            "model {name}: {variable} is not set; using {used} ({}, {}) — set {variable} to use {wanted}",
            effective.provider, effective.model
        ));
        *spec = effective;
    }
}

fn model(checker: &mut Checker, fields: &Fields, owner: &str, at: Mark) -> Option<ModelSpec> {
    checker.unknown_keys(fields, KEYS, owner);
    let names = Provider::names();
    let provider = checker
        .required(
            fields,
            "provider",
            owner,
            at,
            &format!("add `provider:`, one of {}", suggest::quoted_list(&names)),
        )
        .and_then(|node| {
            let provider = checker.string(node, &format!("`provider` of {owner}"))?;
            if let Some(provider) = Provider::parse(&provider) {
                return Some(provider);
            }
            let hint = match suggest::nearest(&provider, names.iter().copied()) {
                Some(near) => format!("did you mean `{near}`?"),
                None => format!(
                    "known providers: {} (`openai` speaks to any OpenAI-compatible server)",
                    suggest::quoted_list(&names)
                ),
            };
            checker.error(
                node.mark,
                format!("unknown provider `{provider}` in {owner}"),
                Some(hint),
            );
            None
        });
    let model = match (fields.get("model"), provider) {
        // The local model claimflow provisions answers to its own id.
        (None, Some(Provider::LlamaServer)) => Some(crate::local_model::MODEL_ID.to_string()),
        _ => checker
            .required(
                fields,
                "model",
                owner,
                at,
                "add `model:` with the provider's model id",
            )
            .and_then(|node| checker.string(node, &format!("`model` of {owner}"))),
    };
    let base_url = optional(fields.get("base_url").map(|node| {
        let url = checker.string(node, &format!("`base_url` of {owner}"))?;
        if url.starts_with("http://") || url.starts_with("https://") {
            return Some(url.trim_end_matches('/').to_string());
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
    let temperature = optional(fields.get("temperature").map(|node| {
        let value = checker.number(node, &format!("`temperature` of {owner}"))?;
        in_range(
            checker,
            node,
            &format!("`temperature` of {owner}"),
            value,
            0.0..=2.0,
            "0 answers the same prompt the same way; the paper samples at 0",
        )
    }));
    let max_output_tokens = optional(fields.get("max_output_tokens").map(|node| {
        count(
            checker,
            node,
            &format!("`max_output_tokens` of {owner}"),
            1..=1_000_000,
            "the most tokens one answer may have, e.g. `512`",
        )
    }));
    let structured_output = optional(fields.get("structured_output").map(|node| {
        if let Value::Bool(value) = node.value {
            return Some(value);
        }
        checker.wrong_type(
            node,
            &format!("`structured_output` of {owner}"),
            "`true` or `false`",
        );
        None
    }));
    let price = optional(
        fields
            .get("price_per_mtok")
            .map(|node| price(checker, node, owner)),
    );
    let concurrency = optional(fields.get("concurrency").map(|node| {
        count(
            checker,
            node,
            &format!("`concurrency` of {owner}"),
            1..=4096,
            "it is the number of requests sent to this model at once",
        )
    }));
    let requests_per_minute = optional(fields.get("requests_per_minute").map(|node| {
        count(
            checker,
            node,
            &format!("`requests_per_minute` of {owner}"),
            1..=10_000_000,
            "the provider's request limit per minute, e.g. `500`; leave it out for no limit",
        )
    }));
    let tokens_per_minute = optional(fields.get("tokens_per_minute").map(|node| {
        count(
            checker,
            node,
            &format!("`tokens_per_minute` of {owner}"),
            1..=u64::MAX / 2,
            "the provider's token limit per minute, e.g. `200000`; leave it out for no limit",
        )
    }));
    let timeout = optional(fields.get("timeout").map(|node| {
        let label = format!("`timeout` of {owner}");
        let value = checker.number(node, &label)?;
        in_range(
            checker,
            node,
            &label,
            value,
            0.001..=86_400.0,
            "seconds one request may take, e.g. `120`",
        )
    }));
    let retries = optional(fields.get("retries").map(|node| {
        count(
            checker,
            node,
            &format!("`retries` of {owner}"),
            0..=20,
            "transport retries of one request (429, 5xx, timeouts), e.g. `6`",
        )
    }));
    let cutoff = optional(
        fields
            .get("cutoff")
            .map(|node| cutoff(checker, node, owner)),
    );
    let fallback = optional(fields.get("fallback").map(|node| {
        let target = checker.string(node, &format!("`fallback` of {owner}"))?;
        if fields.get("api_key_env").is_none() {
            checker.error(
                node.mark,
                format!("`fallback` of {owner} is used only when its key is not set, and it names no `api_key_env`"),
                Some("add `api_key_env: <VARIABLE>`, or remove `fallback:`".into()),
            );
            return None;
        }
        Some(target)
    }));
    let defaults = ModelSpec::new(provider?, model?);
    let base_url = base_url?;
    // The local server decodes one request at a time (more slots are slower on few cores): more
    // in flight would only queue there, each waiting out the others' time against its timeout.
    let embedded = defaults.provider == Provider::LlamaServer && base_url.is_none();
    let default_concurrency = if embedded { 1 } else { defaults.concurrency };
    // A request to the local server that outlasts its timeout is not lost in transit: the machine
    // is busy, and a retry costs the same time again. Its default waits longer.
    let default_timeout = if embedded {
        ModelSpec::EMBEDDED_TIMEOUT
    } else {
        defaults.timeout
    };
    // The local model costs nothing per token.
    let default_price = embedded.then_some(Price {
        input: 0.0,
        output: 0.0,
    });
    Some(ModelSpec {
        base_url,
        api_key_env: api_key_env?,
        temperature: temperature?.unwrap_or(defaults.temperature),
        max_output_tokens: max_output_tokens?.unwrap_or(defaults.max_output_tokens),
        structured_output: structured_output?.unwrap_or(defaults.structured_output),
        price_per_mtok: price?.or(default_price),
        concurrency: concurrency?.unwrap_or(default_concurrency),
        requests_per_minute: requests_per_minute?,
        tokens_per_minute: tokens_per_minute?,
        timeout: timeout?.unwrap_or(default_timeout),
        retries: retries?.unwrap_or(defaults.retries),
        cutoff: cutoff?,
        fallback: fallback?,
        ..defaults
    })
}

/// A whole number in `range`, converted to the type the spec holds.
fn count<T>(
    checker: &mut Checker,
    node: &Node,
    label: &str,
    range: std::ops::RangeInclusive<T>,
    hint: &str,
) -> Option<T>
where
    T: TryFrom<i64> + PartialOrd + std::fmt::Display + Copy,
{
    let value = checker.integer(node, label)?;
    match T::try_from(value) {
        Ok(converted) if range.contains(&converted) => Some(converted),
        _ => {
            checker.error(
                node.mark,
                format!(
                    "{label} must be between {} and {}, found {value}",
                    range.start(),
                    range.end()
                ),
                Some(hint.to_string()),
            );
            None
        }
    }
}

/// A number in `range`.
fn in_range(
    checker: &mut Checker,
    node: &Node,
    label: &str,
    value: f64,
    range: std::ops::RangeInclusive<f64>,
    hint: &str,
) -> Option<f64> {
    if range.contains(&value) {
        return Some(value);
    }
    checker.error(
        node.mark,
        format!(
            "{label} must be between {} and {}, found {value}",
            range.start(),
            range.end()
        ),
        Some(hint.to_string()),
    );
    None
}

/// A training cutoff written `YYYY-MM-DD`.
fn cutoff(checker: &mut Checker, node: &Node, owner: &str) -> Option<String> {
    let label = format!("`cutoff` of {owner}");
    let text = checker.string(node, &label)?;
    if is_date(&text) {
        return Some(text);
    }
    checker.error(
        node.mark,
        format!("{label} must be a date written YYYY-MM-DD, found `{text}`"),
        Some(
            "write the model's training cutoff as published, e.g. `cutoff: 2024-06-01`".to_string(),
        ),
    );
    None
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

/// True for a real calendar date written `YYYY-MM-DD`.
fn is_date(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    let [year, month, day] = parts.as_slice() else {
        return false;
    };
    let digits = |part: &str, width: usize| {
        part.len() == width && part.bytes().all(|byte| byte.is_ascii_digit())
    };
    if !(digits(year, 4) && digits(month, 2) && digits(day, 2)) {
        return false;
    }
    let (year, month, day): (u32, u32, u32) = match (year.parse(), month.parse(), day.parse()) {
        (Ok(year), Ok(month), Ok(day)) => (year, month, day),
        _ => return false,
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

#[cfg(test)]
mod tests {
    #[test]
    fn dates_are_calendar_dates() {
        for good in ["2024-06-01", "2024-02-29", "1999-12-31"] {
            assert!(is_date(good), "{good}");
        }
        for bad in [
            "2023-02-29",
            "2024-13-01",
            "2024-6-1",
            "June 2024",
            "2024-06-01T00",
        ] {
            assert!(!is_date(bad), "{bad}");
        }
    }

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
    fn the_embedded_local_model_defaults_to_one_request_at_a_time_a_longer_timeout_and_no_price() {
        let text = "version: 1\nname: local\nrepos:\n  - {name: demo, url: \"https://example.com/demo.git\", branch: main}\nsteps:\n  rank: {uses: rank-commits}\nmodels:\n  local: {provider: llama-server}\n  served: {provider: llama-server, base_url: \"http://127.0.0.1:8080/v1\"}\n  tuned: {provider: llama-server, timeout: 30, concurrency: 2}\n";
        let registry = crate::steps::Registry::builtin();
        let pipeline = crate::pipeline::load_str(
            text,
            std::path::Path::new("local.yaml"),
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")),
            &registry,
        )
        .unwrap_or_else(|problems| panic!("{problems}"));
        let spec = |name: &str| pipeline.models[name].clone();
        assert_eq!(spec("local").timeout, ModelSpec::EMBEDDED_TIMEOUT);
        assert_eq!(spec("local").concurrency, 1);
        assert_eq!(
            spec("local").price_per_mtok.map(|price| price.input),
            Some(0.0)
        );
        // A server the user runs is any OpenAI-compatible server.
        assert_eq!(spec("served").timeout, ModelSpec::DEFAULT_TIMEOUT);
        assert_eq!(spec("served").concurrency, ModelSpec::DEFAULT_CONCURRENCY);
        // What the pipeline says wins.
        assert_eq!(spec("tuned").timeout, 30.0);
        assert_eq!(spec("tuned").concurrency, 2);
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

#[cfg(test)]
mod fallback_tests {
    use super::*;

    fn entry(
        name: &str,
        provider: Provider,
        key: Option<&str>,
        fallback: Option<&str>,
    ) -> (String, ModelSpec) {
        let mut spec = ModelSpec::new(provider, format!("{name}-model"));
        spec.api_key_env = key.map(str::to_string);
        spec.fallback = fallback.map(str::to_string);
        (name.to_string(), spec)
    }

    fn entries() -> Vec<(String, ModelSpec)> {
        vec![
            entry("judge", Provider::Openai, Some("JUDGE_KEY"), Some("middle")),
            entry(
                "middle",
                Provider::Anthropic,
                Some("MIDDLE_KEY"),
                Some("local"),
            ),
            entry("local", Provider::LlamaServer, None, None),
        ]
    }

    #[test]
    fn an_entry_whose_key_is_set_stays_itself() {
        let mut specs = entries();
        resolve_fallbacks(&mut specs, &|_| true);
        assert_eq!(specs, entries());
        assert!(specs.iter().all(|(_, spec)| spec.stands_in.is_none()));
    }

    #[test]
    fn an_entry_without_its_key_becomes_its_fallback_followed_to_one_that_can_run() {
        let mut specs = entries();
        resolve_fallbacks(&mut specs, &|variable| variable == "MIDDLE_KEY");
        assert_eq!(specs[0].1.provider, Provider::Anthropic);
        assert_eq!(specs[0].1.model, "middle-model");
        assert_eq!(
            specs[0].1.stands_in.as_deref(),
            Some(
                "model judge: JUDGE_KEY is not set; using middle (anthropic, middle-model) — set \
                 JUDGE_KEY to use judge-model"
            )
        );
        assert!(specs[1].1.stands_in.is_none());

        let mut specs = entries();
        resolve_fallbacks(&mut specs, &|_| false);
        for index in [0, 1] {
            assert_eq!(specs[index].1.provider, Provider::LlamaServer);
            assert!(
                specs[index]
                    .1
                    .stands_in
                    .as_deref()
                    .unwrap()
                    .contains("using local (llama-server, local-model)")
            );
        }
        assert!(specs[2].1.stands_in.is_none());
    }

    /// Regression: `pipelines/post-cutoff.yaml` splits at `judge`'s cutoff, and with no key set
    /// `judge` became the local model's entry, which has none: the pipeline did not load
    /// ("the `models:` entry `judge` has no `cutoff:`") although the file gives it.
    #[test]
    fn a_stand_in_keeps_the_training_cutoff_of_the_entry_it_replaces() {
        let mut specs = entries();
        specs[0].1.cutoff = Some("2024-05-31".into());
        specs[2].1.cutoff = Some("2024-11-01".into());
        resolve_fallbacks(&mut specs, &|_| false);
        assert_eq!(specs[0].1.provider, Provider::LlamaServer);
        assert_eq!(specs[0].1.cutoff.as_deref(), Some("2024-05-31"));
        // `middle` gives none: it takes its stand-in's own.
        assert_eq!(specs[1].1.cutoff.as_deref(), Some("2024-11-01"));
        assert_eq!(specs[2].1.cutoff.as_deref(), Some("2024-11-01"));
    }
}
