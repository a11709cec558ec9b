//! A step's `with:` parameters, checked against its kind's parameter struct ([`ParamSpec`]s read
//! from the struct's schema), then parsed into the struct once.
//!
//! Types and ranges are checked here, at each value's line and column, before anything runs.
//! Names that parameters refer to (a model, a step, a repository, a file) are checked here too, so
//! a misspelt prompt path fails at load time rather than an hour into a run.

use std::path::Path;

use super::checker::{Checker, Fields};
use super::json::to_json;
use crate::pipeline::suggest;
use crate::pipeline::yaml::{Entry, Mark, Node, Value};
use crate::pipeline::{KindDeclaration, ParamSpec, ParamType, ParsedParams};

/// Names declared elsewhere in the pipeline.
pub struct Context<'a> {
    pub repos: &'a [String],
    pub models: &'a [String],
    pub steps: &'a [String],
    /// The steps this step needs, when its `needs` is valid: a step reads only their outputs.
    pub needs: Option<&'a [String]>,
}

/// Checks `with` (absent means no parameters) and returns it as JSON, parsed into the kind's
/// struct, if it is valid.
pub fn check(
    checker: &mut Checker,
    with: Option<&Entry>,
    kind: &dyn KindDeclaration,
    owner: &str,
    step_mark: Mark,
    context: &Context,
) -> Option<(serde_json::Value, ParsedParams)> {
    let specs = kind.params().specs();
    let label = format!("`with` of {owner}");
    let (fields, at) = match with {
        Some(entry) if entry.value.value == Value::Null => {
            (Fields::of(entry.value.mark, &[]), entry.key_mark)
        }
        Some(entry) => (checker.map(&entry.value, &label)?, entry.key_mark),
        None => (Fields::of(step_mark, &[]), step_mark),
    };
    let before = checker.count();
    let names: Vec<&str> = specs.iter().map(|spec| spec.name.as_str()).collect();
    let wording = Wording::Parameters { kind: kind.name() };
    check_fields(checker, &fields, at, &specs, owner, wording, context);
    if checker.count() != before {
        return None;
    }
    let sorted = sorted_json(checker, &fields, &label)?;
    let with = serde_json::Value::Object(sorted);
    // A model ladder (`model: [a, b]`) stands for one step per entry, each parsed with its own
    // entry when the ladder is expanded; the first entry stands for them here.
    let rung = with
        .get("model")
        .and_then(serde_json::Value::as_array)
        .and_then(|models| models.first())
        .map(|first| {
            let mut rung = with.clone();
            rung["model"] = first.clone();
            rung
        });
    match kind.params().parse(rung.as_ref().unwrap_or(&with)) {
        Ok(params) => Some((with, params)),
        Err(error) => {
            // The checks above mirror the struct; what they let through and serde refuses is
            // still the user's to fix, at the `with:` it came from.
            checker.error(
                at,
                format!("invalid `with` of {owner}: {error}"),
                Some(format!(
                    "see the parameters of `{}`: {}",
                    kind.name(),
                    suggest::quoted_list(&names)
                )),
            );
            None
        }
    }
}

/// How a map's keys are spoken of: a step's parameters, or the keys of a section's entry.
#[derive(Debug, Clone, Copy)]
pub enum Wording<'a> {
    /// `with:` of a step of kind `kind`: "parameter `top` of step `rank`".
    Parameters { kind: &'a str },
    /// A `models:`, `repos:` or `executor:` entry: "`timeout` of model `judge`".
    Keys,
}

impl Wording<'_> {
    fn label(self, key: &str, owner: &str) -> String {
        match self {
            Wording::Parameters { .. } => format!("parameter `{key}` of {owner}"),
            Wording::Keys => format!("`{key}` of {owner}"),
        }
    }
}

/// Checks the entries of `fields` against `specs`: an unknown key, a required key missing
/// (reported at `at`), each value's type, range and the names it refers to. Every problem is
/// recorded; nothing is parsed.
pub fn check_fields(
    checker: &mut Checker,
    fields: &Fields,
    at: Mark,
    specs: &[ParamSpec],
    owner: &str,
    wording: Wording,
    context: &Context,
) {
    let names: Vec<&str> = specs.iter().map(|spec| spec.name.as_str()).collect();
    for entry in fields.entries() {
        match specs.iter().find(|spec| spec.name == entry.key) {
            Some(spec) => value(checker, &entry.value, spec, owner, wording, context),
            None => unknown(checker, entry, &names, owner, wording),
        }
    }
    for spec in specs.iter().filter(|spec| spec.required) {
        if fields.get(&spec.name).is_some() {
            continue;
        }
        let help = lowercase_first(spec.help.trim_end_matches('.'));
        match wording {
            Wording::Parameters { kind } => checker.error(
                at,
                format!(
                    "{owner} (`{kind}`) is missing the required parameter `{}`",
                    spec.name
                ),
                Some(format!("add `{}:` under `with:`: {help}", spec.name)),
            ),
            Wording::Keys => {
                let choices = match &spec.ty {
                    ParamType::Enum(allowed) => {
                        let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
                        format!(", one of {}", suggest::quoted_list(&allowed))
                    }
                    _ => String::new(),
                };
                checker.error(
                    at,
                    format!("{owner} is missing the required key `{}`", spec.name),
                    Some(format!("add `{}:`{choices}: {help}", spec.name)),
                );
            }
        }
    }
}

/// Reports a key no spec declares, with the nearest one that is.
fn unknown(checker: &mut Checker, entry: &Entry, names: &[&str], owner: &str, wording: Wording) {
    match wording {
        Wording::Parameters { kind } => {
            let hint = if names.is_empty() {
                Some(format!("`{kind}` takes no parameters"))
            } else {
                suggest::nearest(&entry.key, names.iter().copied())
                    .map(|near| format!("did you mean `{near}`?"))
                    .or_else(|| Some(format!("`{kind}` accepts {}", suggest::quoted_list(names))))
            };
            checker.error(
                entry.key_mark,
                format!("unknown parameter `{}` in `with` of {owner}", entry.key),
                hint,
            );
        }
        Wording::Keys => checker.error(
            entry.key_mark,
            format!("unknown key `{}` in {owner}", entry.key),
            suggest::hint(&entry.key, names, "valid keys"),
        ),
    }
}

/// The entries of `fields` as one JSON object, keys sorted (so canonical); `None` when a value
/// cannot be JSON (reported).
pub fn sorted_json(
    checker: &mut Checker,
    fields: &Fields,
    label: &str,
) -> Option<serde_json::Map<String, serde_json::Value>> {
    let before = checker.count();
    let mut sorted = serde_json::Map::new();
    let mut entries: Vec<&Entry> = fields.entries().collect();
    entries.sort_by(|left, right| left.key.cmp(&right.key));
    for entry in entries {
        if let Some(value) = to_json(
            checker,
            &entry.value,
            &format!("`{}` of {label}", entry.key),
        ) {
            sorted.insert(entry.key.clone(), value);
        }
    }
    (checker.count() == before).then_some(sorted)
}

/// Checks one value against its declared type.
fn value(
    checker: &mut Checker,
    node: &Node,
    spec: &ParamSpec,
    owner: &str,
    wording: Wording,
    context: &Context,
) {
    let label = wording.label(&spec.name, owner);
    if spec.required
        && let Value::String(text) = &node.value
        && text.trim().is_empty()
    {
        blank(checker, node.mark, text, spec, &label);
        return;
    }
    match &spec.ty {
        ParamType::String => {
            checker.string(node, &label);
        }
        ParamType::Integer => {
            if let Some(number) = checker.integer(node, &label) {
                range(checker, node.mark, number as f64, spec, &label, wording);
            }
        }
        ParamType::Number => {
            if let Some(number) = checker.number(node, &label) {
                range(checker, node.mark, number, spec, &label, wording);
            }
        }
        ParamType::Object(specs) => {
            if let Some(fields) = checker.map(node, &label) {
                check_fields(
                    checker,
                    &fields,
                    node.mark,
                    specs,
                    &label,
                    Wording::Keys,
                    context,
                );
            }
        }
        ParamType::Bool => {
            if !matches!(node.value, Value::Bool(_)) {
                checker.wrong_type(node, &label, "`true` or `false`");
            }
        }
        ParamType::Enum(allowed) => allowed_value(checker, node, allowed, &label),
        ParamType::StringList => {
            checker.string_list(node, &label);
        }
        ParamType::ListMap => match &node.value {
            Value::Map(entries) => {
                for entry in entries {
                    checker.string_list(&entry.value, &format!("`{}` of {label}", entry.key));
                }
            }
            _ => checker.wrong_type(node, &label, "a map from names to lists of strings"),
        },
        ParamType::StringOrList => {
            if !matches!(node.value, Value::String(_)) {
                if let Value::List(_) = node.value {
                    checker.string_list(node, &label);
                } else {
                    checker.wrong_type(node, &label, "a string or a list of strings");
                }
            }
        }
        ParamType::File => {
            if let Some(path) = checker.string(node, &label) {
                file(checker, node.mark, &path, &label);
            }
        }
        ParamType::Model => model_ladder(checker, node, &label, context),
        ParamType::Repo => {
            if let Some(name) = checker.string(node, &label) {
                repository(checker, node.mark, &name, context, &label);
            }
        }
        ParamType::Step => {
            if let Some(name) = checker.string(node, &label) {
                needed_step(checker, node.mark, &name, owner, context, &label);
            }
        }
        ParamType::StepList | ParamType::RepoList => {
            name_list(checker, node, spec, owner, &label, context)
        }
        ParamType::Any => {}
    }
}

/// A list of step or repository names, each of which must name one.
fn name_list(
    checker: &mut Checker,
    node: &Node,
    spec: &ParamSpec,
    owner: &str,
    label: &str,
    context: &Context,
) {
    match &spec.ty {
        ParamType::StepList => {
            if let Value::List(items) = &node.value {
                for item in items {
                    if let Some(name) = checker.string(item, &format!("each item of {label}")) {
                        needed_step(checker, item.mark, &name, owner, context, label);
                    }
                }
            } else {
                checker.wrong_type(node, label, "a list of step names");
            }
        }
        ParamType::RepoList => {
            if let Value::List(items) = &node.value {
                for item in items {
                    if let Some(name) = checker.string(item, &format!("each item of {label}")) {
                        repository(checker, item.mark, &name, context, label);
                    }
                }
            } else {
                checker.wrong_type(node, label, "a list of repository names");
            }
        }
        _ => {}
    }
}

/// Reports a required string given empty or as whitespace alone: a value the step cannot use
/// (a `run:` of nothing succeeds and does nothing), whatever its type would say of it.
fn blank(checker: &mut Checker, mark: Mark, text: &str, spec: &ParamSpec, label: &str) {
    let what = if text.is_empty() {
        "empty"
    } else {
        "only whitespace"
    };
    let help = lowercase_first(spec.help.trim_end_matches('.'));
    checker.error(
        mark,
        format!("{label} is {what}"),
        Some(format!("`{}` needs a value: {help}", spec.name)),
    );
}

/// A model, or a ladder of them (`[a, b]`: the step is repeated for each entry, `<step>@<entry>`),
/// each declared under `models:` and named once.
fn model_ladder(checker: &mut Checker, node: &Node, label: &str, context: &Context) {
    // A list is a model ladder: the step is repeated for each entry (`<step>@<entry>`).
    let names: Vec<(String, Mark)> = match &node.value {
        Value::List(items) if !items.is_empty() => items
            .iter()
            .filter_map(|item| Some((checker.string(item, label)?, item.mark)))
            .collect(),
        Value::List(_) => {
            checker.error(
                node.mark,
                format!("{label} is an empty list"),
                Some("name one `models:` entry, or several as `[a, b]`".into()),
            );
            Vec::new()
        }
        _ => checker
            .string(node, label)
            .map(|name| vec![(name, node.mark)])
            .unwrap_or_default(),
    };
    let mut seen = Vec::new();
    for (name, mark) in names {
        if seen.contains(&name) {
            checker.error(
                mark,
                format!("{label} names model `{name}` twice"),
                Some("each rung of a ladder is a different `models:` entry".into()),
            );
            continue;
        }
        reference(
            checker,
            mark,
            &name,
            context.models,
            "model",
            "models",
            label,
        );
        seen.push(name);
    }
}

/// A string among the `allowed` ones, with the nearest as a hint.
fn allowed_value(checker: &mut Checker, node: &Node, allowed: &[String], label: &str) {
    if let Some(text) = checker.string(node, label)
        && !allowed.contains(&text)
    {
        let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
        let list = format!("allowed: {}", suggest::quoted_list(&allowed));
        let hint = match suggest::nearest(&text, allowed.iter().copied()) {
            Some(near) => format!("did you mean `{near}`? {list}"),
            None => list,
        };
        checker.error(
            node.mark,
            format!("`{text}` is not an allowed value for {label}"),
            Some(hint),
        );
    }
}

/// Checks that a number lies in the declared range.
fn range(
    checker: &mut Checker,
    mark: Mark,
    number: f64,
    spec: &ParamSpec,
    label: &str,
    wording: Wording,
) {
    let below = spec.minimum.is_some_and(|minimum| number < minimum);
    let above = spec.maximum.is_some_and(|maximum| number > maximum);
    if below || above {
        let range = spec.range().unwrap_or_default();
        let help = lowercase_first(spec.help.trim_end_matches('.'));
        let hint = match wording {
            Wording::Parameters { .. } => format!("`{}` takes a value {range}: {help}", spec.name),
            // A section's key says its range in its help.
            Wording::Keys => help,
        };
        checker.error(
            mark,
            format!("{label} must be {range}, found {number}"),
            Some(hint),
        );
    }
}

/// `text` with its first letter in lower case, to follow a colon.
fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_lowercase().chain(chars).collect()
    })
}

/// Checks that a step a parameter names exists and is among the steps this step needs: the engine
/// hands a step the outputs of its `needs` only, so naming any other step could never be read.
fn needed_step(
    checker: &mut Checker,
    mark: Mark,
    name: &str,
    owner: &str,
    context: &Context,
    label: &str,
) {
    if !context.steps.iter().any(|step| step == name) {
        reference(checker, mark, name, context.steps, "step", "steps", label);
        return;
    }
    if let Some(needs) = context.needs
        && !needs.iter().any(|need| need == name)
    {
        checker.error(
            mark,
            format!("{label} names step `{name}`, which is not in its `needs`"),
            Some(format!(
                "add `{name}` to `needs` of {owner}: a step reads only the outputs of the steps \
                 it needs"
            )),
        );
    }
}

/// Checks that a repository a parameter names is declared in `repos:`.
fn repository(checker: &mut Checker, mark: Mark, name: &str, context: &Context, label: &str) {
    reference(
        checker,
        mark,
        name,
        context.repos,
        "repository",
        "repos",
        label,
    );
}

/// Checks that `name` is declared in the `section` of the pipeline.
fn reference(
    checker: &mut Checker,
    mark: Mark,
    name: &str,
    declared: &[String],
    noun: &str,
    section: &str,
    label: &str,
) {
    if declared.iter().any(|known| known == name) {
        return;
    }
    let candidates: Vec<&str> = declared.iter().map(String::as_str).collect();
    let hint = if candidates.is_empty() {
        Some(format!(
            "the pipeline declares no `{section}:`; add `{name}` there"
        ))
    } else {
        suggest::hint(name, &candidates, &format!("declared in `{section}:`"))
    };
    checker.error(
        mark,
        format!("{label} names {noun} `{name}`, which is not declared in `{section}:`"),
        hint,
    );
}

/// Checks that a project-relative file exists; suggests a near name from the same directory.
fn file(checker: &mut Checker, mark: Mark, path: &str, label: &str) {
    let resolved = checker.root.join(path);
    if resolved.is_file() {
        return;
    }
    let message = if resolved.is_dir() {
        format!("{label} names `{path}`, which is a directory, not a file")
    } else {
        format!("{label} names the file `{path}`, which does not exist")
    };
    let hint = nearby_file(&resolved, path).map_or_else(
        || {
            "relative paths resolve against the project root (where claimflow runs, or -C DIR)"
                .to_string()
        },
        |near| format!("did you mean `{near}`?"),
    );
    checker.error(mark, message, Some(hint));
}

/// A file in the same directory whose name is close to the missing one, written as the user would.
fn nearby_file(resolved: &Path, written: &str) -> Option<String> {
    let wanted = resolved.file_name()?.to_str()?;
    let directory = resolved.parent()?;
    let mut names: Vec<String> = std::fs::read_dir(directory)
        .ok()?
        .filter_map(Result::ok)
        .filter(|entry| entry.path().is_file())
        .filter_map(|entry| entry.file_name().into_string().ok())
        .collect();
    // Directory order differs between machines; sort so the hint is stable.
    names.sort();
    let near = suggest::nearest(wanted, names.iter().map(String::as_str))?;
    let prefix = written.strip_suffix(wanted)?;
    Some(format!("{prefix}{near}"))
}
