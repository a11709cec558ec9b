//! The `steps:` section: each step's kind, the steps it needs, and its `with:` parameters.

use super::checker::{Checker, Fields};
use super::params;
use crate::pipeline::Kinds;
use crate::pipeline::Role;
use crate::pipeline::StepSpec;
use crate::pipeline::suggest;
use crate::pipeline::yaml::{Entry, Mark, Node, Value};

/// The keys a step may have.
const KEYS: &[&str] = &["uses", "needs", "with"];

/// Names declared elsewhere in the pipeline that parameters may refer to.
pub struct Known<'a> {
    pub repos: &'a [String],
    pub models: &'a [String],
}

/// A step as the cycle check sees it: its name and the steps it needs that exist.
#[derive(Debug)]
pub struct Edges {
    pub name: String,
    pub mark: Mark,
    pub needs: Vec<String>,
}

/// Where a valid step and its parameters are written, for problems found once the whole
/// pipeline is known.
#[derive(Debug)]
pub struct Places {
    /// The step's name.
    pub step: Mark,
    /// Its `needs:` list, if it has one.
    pub needs: Option<Mark>,
    /// Its `with:` map, if it has one.
    pub with: Option<Node>,
}

impl Places {
    /// The place of parameter `param` (of its element `index` in a list), or of the step.
    pub fn of(&self, param: Option<&str>, index: Option<usize>) -> Mark {
        let Some(Value::Map(entries)) = self.with.as_ref().map(|with| &with.value) else {
            return self.step;
        };
        let Some(entry) = param.and_then(|param| entries.iter().find(|entry| entry.key == param))
        else {
            return self.step;
        };
        match (&entry.value.value, index) {
            (Value::List(items), Some(index)) => {
                items.get(index).map_or(entry.value.mark, |item| item.mark)
            }
            _ => entry.value.mark,
        }
    }
}

/// What the section yielded.
#[derive(Debug, Default)]
pub struct Checked {
    /// The valid steps, in file order.
    pub specs: Vec<StepSpec>,
    /// Where each valid step is written, by name.
    pub places: std::collections::BTreeMap<String, Places>,
    /// Every declared step (valid or not) with its existing needs, in file order.
    pub graph: Vec<Edges>,
}

/// Checks the `steps:` map.
pub fn check(checker: &mut Checker, node: &Node, known: &Known, registry: &dyn Kinds) -> Checked {
    let mut checked = Checked::default();
    let Some(steps) = checker.map(node, "`steps`") else {
        return checked;
    };
    let names: Vec<String> = steps.entries().map(|entry| entry.key.clone()).collect();
    if names.is_empty() {
        checker.error(
            node.mark,
            "the pipeline has no steps",
            Some("add a step, e.g. `rank: {uses: rank-commits}`".to_string()),
        );
        return checked;
    }
    let declared = Declared {
        names: &names,
        known,
        registry,
    };
    for entry in steps.entries() {
        check_step(checker, entry, &declared, &mut checked);
    }
    checked
}

/// What a step is checked against: every step's name, the other sections' names, the kinds.
struct Declared<'a> {
    names: &'a [String],
    known: &'a Known<'a>,
    registry: &'a dyn Kinds,
}

/// One step: its name, `uses:`, `needs:` and `with:`. A valid step joins `checked.specs`; every
/// step joins the graph the cycle check reads.
fn check_step(checker: &mut Checker, entry: &Entry, declared: &Declared, checked: &mut Checked) {
    let name = &entry.key;
    let owner = format!("step `{name}`");
    let valid_name = checker.file_name(name, entry.key_mark, "step");
    let Value::Map(step_entries) = &entry.value.value else {
        not_a_map(checker, entry, &owner);
        checked.graph.push(Edges {
            name: name.clone(),
            mark: entry.key_mark,
            needs: Vec::new(),
        });
        return;
    };
    let fields = Fields::of(entry.value.mark, step_entries);
    checker.unknown_keys(&fields, KEYS, &owner);
    let uses = uses(checker, &fields, &owner, entry.key_mark, declared.registry);
    let (needs, existing) = match fields.get("needs") {
        Some(node) => needs(checker, node, &owner, declared.names),
        None => (Some(Vec::new()), Vec::new()),
    };
    checked.graph.push(Edges {
        name: name.clone(),
        mark: entry.key_mark,
        needs: existing,
    });
    let context = params::Context {
        repos: declared.known.repos,
        models: declared.known.models,
        steps: declared.names,
        needs: needs.as_deref(),
    };
    let declaration = uses
        .as_deref()
        .and_then(|kind| declared.registry.declaration(kind));
    let with = match declaration {
        Some(kind) => params::check(
            checker,
            fields.entry("with"),
            kind.as_ref(),
            &owner,
            entry.key_mark,
            &context,
        ),
        // Without a known kind the parameters cannot be checked; their shape still can.
        None => fields.get("with").and_then(|node| {
            checker.map(node, &format!("`with` of {owner}"))?;
            None
        }),
    };
    if let (true, Some(uses), Some(needs), Some((with, params))) = (valid_name, uses, needs, with) {
        let places = Places {
            step: entry.key_mark,
            needs: fields.get("needs").map(|node| node.mark),
            with: fields.get("with").cloned(),
        };
        checked.places.insert(name.clone(), places);
        let mut spec = StepSpec {
            name: name.clone(),
            uses,
            needs,
            with,
            params,
            role: Role::Other,
            line: entry.key_mark.line,
        };
        if let Some(kind) = declared.registry.declaration(&spec.uses) {
            spec.role = kind.role(&spec);
        }
        checked.specs.push(spec);
    }
}

/// A step written as something other than a map, with the map it likely meant.
fn not_a_map(checker: &mut Checker, entry: &Entry, owner: &str) {
    let name = &entry.key;
    let hint = match &entry.value.value {
        Value::String(kind) => Some(format!("write `{name}: {{uses: {kind}}}`")),
        _ => Some(format!("write `{name}: {{uses: <kind>, needs: [...]}}`")),
    };
    checker.error(
        entry.value.mark,
        format!("{owner} must be a map, found {}", entry.value.value.kind()),
        hint,
    );
}

/// `uses:`, the step's kind, which must be registered; a misspelt kind gets the nearest name.
fn uses(
    checker: &mut Checker,
    fields: &Fields,
    owner: &str,
    step: Mark,
    registry: &dyn Kinds,
) -> Option<String> {
    let node = checker.required(
        fields,
        "uses",
        owner,
        step,
        &format!(
            "add `uses:` naming a step kind: {}",
            suggest::quoted_list(&registry.names())
        ),
    )?;
    let kind = checker.string(node, &format!("`uses` of {owner}"))?;
    if registry.declaration(&kind).is_some() {
        return Some(kind);
    }
    let known = registry.names();
    let list = format!("known kinds: {}", suggest::quoted_list(&known));
    let hint = match suggest::nearest(&kind, known.iter().copied()) {
        Some(near) => format!("did you mean `{near}`? {list}"),
        None => list,
    };
    checker.error(
        node.mark,
        format!("unknown step kind `{kind}` in {owner}"),
        Some(hint),
    );
    None
}

/// `needs:`, a list of step names. Returns the list if it is valid, and the names that exist (for
/// the cycle check, which must run even when another need is misspelt).
fn needs(
    checker: &mut Checker,
    node: &Node,
    owner: &str,
    names: &[String],
) -> (Option<Vec<String>>, Vec<String>) {
    let Value::List(items) = &node.value else {
        let hint = match &node.value {
            Value::String(need) => Some(format!("write a list: `needs: [{need}]`")),
            _ => Some("write a list of step names, e.g. `needs: [rank]`".to_string()),
        };
        checker.error(
            node.mark,
            format!(
                "`needs` of {owner} must be a list, found {}",
                node.value.kind()
            ),
            hint,
        );
        return (None, Vec::new());
    };
    let candidates: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut valid = true;
    let mut existing: Vec<String> = Vec::new();
    for item in items {
        let Some(need) = checker.string(item, &format!("each item of `needs` of {owner}")) else {
            valid = false;
            continue;
        };
        if !names.contains(&need) {
            valid = false;
            checker.error(
                item.mark,
                format!("{owner} needs `{need}`, which is not a step of this pipeline"),
                suggest::hint(&need, &candidates, "steps"),
            );
        } else if existing.contains(&need) {
            valid = false;
            checker.error(
                item.mark,
                format!("{owner} lists `{need}` twice in `needs`"),
                Some("remove one of them".to_string()),
            );
        } else {
            existing.push(need);
        }
    }
    (valid.then(|| existing.clone()), existing)
}
