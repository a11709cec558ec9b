//! The `models:` section: the language models arms call, how they are sampled, their prices,
//! request slots, rate limits and timeouts. Each entry is checked against [`ModelEntry`] (keys,
//! types, ranges, the `fallback:` it names), then here for what a schema cannot say: an address
//! that is not http, a key where its variable's name belongs, a cutoff that is no date, fallbacks
//! that go round in a cycle; then the entry becomes a [`ModelSpec`] with its defaults.
//!
//! A key must never enter a pipeline file, so `api_key_env` holds the *name* of a variable; a value
//! that looks like a key is rejected without echoing it (messages end up in logs).

use super::checker::{Checker, Fields};
use super::params::Context;
use super::section;
use crate::pipeline::sections::ModelEntry;
use crate::pipeline::yaml::{Mark, Node, Value};
use crate::pipeline::{ModelSpec, Price, Provider};

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
    checked.names = models.entries().map(|entry| entry.key.clone()).collect();
    let context = section::context(&checked.names);
    for entry in models.entries() {
        let owner = format!("model `{}`", entry.key);
        let Some(fields) = checker.map(&entry.value, &owner) else {
            continue;
        };
        if let Some(node) = fields.get("fallback")
            && let Value::String(target) = &node.value
        {
            fallbacks.push((entry.key.clone(), target.clone(), node.mark));
        }
        if let Some(spec) = model(checker, &fields, &owner, entry.key_mark, &context) {
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
            continue; // reported where the entry was checked against its schema
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

/// One entry: checked against [`ModelEntry`] and for what its schema cannot say, then given its
/// defaults.
fn model(
    checker: &mut Checker,
    fields: &Fields,
    owner: &str,
    at: Mark,
    context: &Context,
) -> Option<ModelSpec> {
    let before = checker.count();
    section::check::<ModelEntry>(checker, fields, at, owner, context, &[]);
    let provider = fields.get("provider").map(|node| &node.value);
    // The local model claimflow provisions answers to its own id.
    if fields.get("model").is_none() && provider != Some(&Value::String("llama-server".into())) {
        checker.error(
            at,
            format!("{owner} is missing the required key `model`"),
            Some("add `model:` with the provider's model id".into()),
        );
    }
    let string = |key: &str| {
        fields.get(key).and_then(|node| match &node.value {
            Value::String(text) => Some((node, text.as_str())),
            _ => None,
        })
    };
    if let Some((node, url)) = string("base_url")
        && !(url.starts_with("http://") || url.starts_with("https://"))
    {
        checker.error(
            node.mark,
            format!("`base_url` of {owner} must be an http:// or https:// address"),
            Some("e.g. `base_url: http://localhost:8080/v1`".to_string()),
        );
    }
    if let Some((node, name)) = string("api_key_env") {
        api_key_env(checker, node, name, owner);
    }
    if let Some((node, text)) = string("cutoff") {
        cutoff(checker, node, text, owner);
    }
    if let Some(node) = fields.get("fallback")
        && fields.get("api_key_env").is_none()
    {
        checker.error(
            node.mark,
            format!("`fallback` of {owner} is used only when its key is not set, and it names no `api_key_env`"),
            Some("add `api_key_env: <VARIABLE>`, or remove `fallback:`".into()),
        );
    }
    if checker.count() != before {
        return None;
    }
    let entry: ModelEntry = section::parse(checker, fields, at, owner)?;
    Some(with_defaults(entry))
}

/// The spec an entry stands for, every key it leaves out at its default. The local model claimflow
/// starts (`llama-server` without `base_url`) has defaults of its own.
fn with_defaults(entry: ModelEntry) -> ModelSpec {
    let model = entry
        .model
        .unwrap_or_else(|| Provider::EMBEDDED_MODEL.to_string());
    let defaults = ModelSpec::new(entry.provider, model);
    // The local server decodes one request at a time (more slots are slower on few cores): more
    // in flight would only queue there, each waiting out the others' time against its timeout.
    let embedded = defaults.provider == Provider::LlamaServer && entry.base_url.is_none();
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
    ModelSpec {
        base_url: entry
            .base_url
            .map(|url| url.trim_end_matches('/').to_string()),
        api_key_env: entry.api_key_env,
        temperature: entry.temperature.unwrap_or(defaults.temperature),
        max_output_tokens: entry
            .max_output_tokens
            .unwrap_or(defaults.max_output_tokens),
        structured_output: entry
            .structured_output
            .unwrap_or(defaults.structured_output),
        price_per_mtok: entry
            .price_per_mtok
            .map(|price| Price {
                input: price.input,
                output: price.output,
            })
            .or(default_price),
        concurrency: entry.concurrency.unwrap_or(default_concurrency),
        requests_per_minute: entry.requests_per_minute,
        tokens_per_minute: entry.tokens_per_minute,
        timeout: entry.timeout.unwrap_or(default_timeout),
        retries: entry.retries.unwrap_or(defaults.retries),
        cutoff: entry.cutoff,
        fallback: entry.fallback.map(|name| name.0),
        ..defaults
    }
}

/// A training cutoff written `YYYY-MM-DD`.
fn cutoff(checker: &mut Checker, node: &Node, text: &str, owner: &str) {
    if is_date(text) {
        return;
    }
    checker.error(
        node.mark,
        format!("`cutoff` of {owner} must be a date written YYYY-MM-DD, found `{text}`"),
        Some(
            "write the model's training cutoff as published, e.g. `cutoff: 2024-06-01`".to_string(),
        ),
    );
}

/// A variable's name, never a key: a value that looks like one is refused without being echoed.
fn api_key_env(checker: &mut Checker, node: &Node, name: &str, owner: &str) {
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
    } else if !is_variable_name(name) {
        // The value is not echoed: it may be a key in a shape we do not recognise.
        checker.error(
            node.mark,
            format!(
                "`api_key_env` of {owner} must be an environment variable name (letters, digits \
                 and `_`)"
            ),
            Some(hint.to_string()),
        );
    }
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
