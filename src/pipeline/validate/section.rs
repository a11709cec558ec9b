//! A section entry (`models:`, `repos:`, `executor:`) checked against its typed struct
//! ([`crate::pipeline::sections`]) by the machinery that checks a step's `with:`
//! ([`super::params::check_fields`]), then deserialized into it once.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use super::checker::{Checker, Fields};
use super::params::{Context, Wording, check_fields, sorted_json};
use crate::pipeline::params::{ParamType, schema_for, specs_of};
use crate::pipeline::suggest;
use crate::pipeline::yaml::Mark;

/// Names a section entry may refer to: the declared models (a model's `fallback:`).
pub fn context(models: &[String]) -> Context<'_> {
    Context {
        repos: &[],
        models,
        steps: &[],
        needs: None,
    }
}

/// Checks `fields` against `T`'s schema: unknown keys, required keys missing (at `at`), every
/// value's type, range and references, except the keys in `own`, which the section checks itself
/// (their values take shapes a schema does not tell apart, or deserve a hint of their own).
pub fn check<T: JsonSchema>(
    checker: &mut Checker,
    fields: &Fields,
    at: Mark,
    owner: &str,
    context: &Context,
    own: &[&str],
) {
    let mut specs = specs_of(&schema_for::<T>());
    for spec in &mut specs {
        if own.contains(&spec.name.as_str()) {
            spec.ty = ParamType::Any;
        }
    }
    check_fields(checker, fields, at, &specs, owner, Wording::Keys, context);
}

/// `fields` deserialized into `T`, once they were checked; a refusal serde still finds is the
/// user's to fix at `at`.
pub fn parse<T: DeserializeOwned + JsonSchema>(
    checker: &mut Checker,
    fields: &Fields,
    at: Mark,
    owner: &str,
) -> Option<T> {
    let object = serde_json::Value::Object(sorted_json(checker, fields, owner)?);
    match T::deserialize(&object) {
        Ok(entry) => Some(entry),
        Err(error) => {
            let keys: Vec<String> = specs_of(&schema_for::<T>())
                .into_iter()
                .map(|spec| spec.name)
                .collect();
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            checker.error(
                at,
                format!("invalid {owner}: {error}"),
                Some(format!("its keys: {}", suggest::quoted_list(&keys))),
            );
            None
        }
    }
}
