//! The top level of a pipeline file: `version`, `name`, `workdir`, `results`, then the sections.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::checker::{Checker, Fields};
use super::{cycles, duplicates, executor, ladder, models, needs, repos, roles, steps};
use crate::pipeline::ExecutorSpec;
use crate::pipeline::Kinds;
use crate::pipeline::StepSpec;
use crate::pipeline::yaml::{Document, Entry, Mark, Node, Value};
use crate::pipeline::{Diagnostic, Pipeline};

/// The keys a pipeline may have at its top level.
const KEYS: &[&str] = &[
    "version", "name", "workdir", "results", "repos", "models", "executor", "steps",
];

/// The only DSL version this claimflow reads.
const VERSION: i64 = 1;

/// Checks a parsed file and builds the pipeline, or returns every problem found.
pub fn validate(
    document: &Document,
    file: &Path,
    root: &Path,
    registry: &dyn Kinds,
) -> Result<Pipeline, Vec<Diagnostic>> {
    let mut checker = Checker::new(file, root);
    for problem in &document.problems {
        checker.error(
            problem.mark,
            problem.message.clone(),
            Some(problem.hint.clone()),
        );
    }
    let Some((top, entries)) = top_map(&mut checker, document) else {
        return Err(checker.finish());
    };
    duplicates::check(&mut checker, top, "");
    let fields = Fields::of(top.mark, entries);
    checker.unknown_keys(&fields, KEYS, "the top level");

    let version = version(&mut checker, &fields);
    let name = name(&mut checker, &fields);
    let workdir = path(&mut checker, &fields, "workdir").or_else(|| Some(root.join(".claimflow")));
    let results = results(&mut checker, &fields, root, name.as_deref());
    let repositories = match fields.get("repos") {
        Some(node) => repos::check(&mut checker, node),
        None => repos::Checked::default(),
    };
    let models = match fields.get("models") {
        Some(node) => models::check(&mut checker, node),
        None => models::Checked::default(),
    };
    let executor = match fields.get("executor") {
        Some(node) => executor::check(&mut checker, node, &registry.names()),
        None => Some(ExecutorSpec::default()),
    };
    let known = steps::Known {
        repos: &repositories.names,
        models: &models.names,
    };
    let (steps, places, unmet) = steps_section(&mut checker, &fields, top.mark, &known, registry);

    match (version, name, workdir, results, executor) {
        // A step lacking a need leaves the pipeline whole enough for the kinds' own checks, so
        // their problems are reported beside it rather than after it is fixed.
        (Some(version), Some(name), Some(workdir), Some(results), Some(executor))
            if checker.count() == unmet =>
        {
            let pipeline = Pipeline {
                file: file.to_path_buf(),
                root: root.to_path_buf(),
                version,
                name,
                workdir,
                results,
                repos: repositories.specs,
                models: models.specs.into_iter().collect::<BTreeMap<_, _>>(),
                executor,
                steps,
            };
            relations(&mut checker, &pipeline, &places, registry);
            if checker.is_clean() {
                Ok(pipeline)
            } else {
                Err(checker.finish())
            }
        }
        _ => Err(checker.finish()),
    }
}

/// The file's top-level map and its entries; an empty file, or a top level that is not a map, is
/// reported.
fn top_map<'a>(checker: &mut Checker, document: &'a Document) -> Option<(&'a Node, &'a [Entry])> {
    let hint =
        || Some("a pipeline starts with `version: 1`, a `name:` and its `steps:`".to_string());
    let top = match &document.root {
        None
        | Some(Node {
            value: Value::Null, ..
        }) => {
            checker.error(Mark::START, "the pipeline is empty", hint());
            return None;
        }
        Some(node) => node,
    };
    let Value::Map(entries) = &top.value else {
        checker.error(
            top.mark,
            format!(
                "the top level of a pipeline must be a map, found {}",
                top.value.kind()
            ),
            hint(),
        );
        return None;
    };
    Some((top, entries))
}

/// `results:`, by default `results/<name>` under the root (when the name is valid).
fn results(
    checker: &mut Checker,
    fields: &Fields,
    root: &Path,
    name: Option<&str>,
) -> Option<PathBuf> {
    match (path(checker, fields, "results"), name) {
        (Some(results), _) => Some(results),
        (None, Some(name)) if fields.get("results").is_none() => {
            Some(root.join("results").join(name))
        }
        _ => None,
    }
}

/// The required `steps:` section: its valid steps once the cycle check passed, expanded (ladders)
/// and with their roles declared, where each is written, and how many problems are steps lacking
/// what their kind reads from their `needs`.
fn steps_section(
    checker: &mut Checker,
    fields: &Fields,
    top: Mark,
    known: &steps::Known,
    registry: &dyn Kinds,
) -> (Vec<StepSpec>, BTreeMap<String, steps::Places>, usize) {
    let Some(node) = checker.required(
        fields,
        "steps",
        "the pipeline",
        top,
        "add a `steps:` map, e.g. `steps: {rank: {uses: rank-commits}}`",
    ) else {
        return (Vec::new(), BTreeMap::new(), 0);
    };
    let mut steps = steps::check(checker, node, known, registry);
    cycles::check(checker, &steps);
    let before = checker.count();
    needs::check(checker, &steps.specs, &steps.places, registry);
    let unmet = checker.count() - before;
    let mut specs = ladder::expand(steps.specs, &mut steps.places);
    roles::declare(&mut specs, registry);
    (specs, steps.places, unmet)
}

/// What each step kind checks once the whole pipeline is valid: how its steps relate to others.
fn relations(
    checker: &mut Checker,
    pipeline: &Pipeline,
    places: &BTreeMap<String, steps::Places>,
    registry: &dyn Kinds,
) {
    for step in &pipeline.steps {
        let Some(kind) = registry.declaration(&step.uses) else {
            continue;
        };
        for problem in kind.check_pipeline(step, pipeline) {
            let mark = places.get(&step.name).map_or(Mark::START, |place| {
                place.of(problem.param.as_deref(), problem.index)
            });
            checker.error(mark, problem.message, Some(problem.hint));
        }
    }
}

/// `version: 1`, required.
fn version(checker: &mut Checker, fields: &Fields) -> Option<u32> {
    let node = checker.required(
        fields,
        "version",
        "the pipeline",
        fields.mark,
        "add `version: 1` at the top of the file",
    )?;
    let version = checker.integer(node, "`version`")?;
    if version != VERSION {
        checker.error(
            node.mark,
            format!("unsupported pipeline version {version}"),
            Some(format!("this claimflow reads `version: {VERSION}`")),
        );
        return None;
    }
    u32::try_from(version).ok()
}

/// `name:`, required; it names the default results directory, so it must be a file name.
fn name(checker: &mut Checker, fields: &Fields) -> Option<String> {
    let node = checker.required(
        fields,
        "name",
        "the pipeline",
        fields.mark,
        "add `name: <pipeline name>`; results go to `results/<name>` by default",
    )?;
    let name = checker.string(node, "`name`")?;
    checker
        .file_name(&name, node.mark, "pipeline")
        .then_some(name)
}

/// An optional path key, made absolute against the project root.
fn path(checker: &mut Checker, fields: &Fields, key: &str) -> Option<PathBuf> {
    let node = fields.get(key)?;
    let text = checker.string(node, &format!("`{key}`"))?;
    if text.is_empty() {
        checker.error(
            node.mark,
            format!("`{key}` is empty"),
            Some("name a directory, relative to the project root".to_string()),
        );
        return None;
    }
    Some(checker.root.join(text))
}
