//! A4, symbol anchoring: invalidate a claim when a symbol it references had its definition text
//! changed. This is static change-impact analysis, strengthened with the paper's three repairs:
//!
//! 1. Definitions are keyed by qualified name (`pkg.mod.Class.method`), so an edit to one class's
//!    `pop` or `__init__` does not fire for a claim about another class.
//! 2. Fixtures are followed: a test written `def test_x(cr)` names no class, so the fixture `cr` is
//!    found (test file first, then each `conftest.py` from the test's directory up to the root), the
//!    names its body references are the claim's too, and what it returns or yields (`Cache()`) types
//!    the parameter. Fixtures a fixture requests are followed the same way.
//! 3. Fixtures are matched by their registered name (`@pytest.fixture(name="cr")`), not the
//!    function's.
//!
//! How references resolve, against the parent commit:
//! - a name imported by the test module (or inside the test) maps to its absolute name, and names
//!   re-exported by a package (`from .cache import Cache` in `pkg/__init__.py`) are followed to the
//!   module that defines them;
//! - `obj.method` where `obj` was bound from a constructor call (`c = Cache()`, `self.c = Cache()`
//!   in `setUp`, `with Cache() as c`, or a fixture that returns `Cache()`) is `Cache.method`, looked
//!   up through the class's bases when the class does not define it;
//! - calling a class references its `__init__` and `__new__`; a test class's helper methods that
//!   the claim calls as `self.make(...)` are followed like fixtures, and type their call;
//! - syntax and builtins reference special methods (`len(x)` → `__len__`, `x[k]` →
//!   `__getitem__`, `==` → `__eq__`, `for` → `__iter__`), as bare attributes (below);
//! - an attribute on a receiver whose class is unknown (`x.pop` for a parameter `x` with no fixture
//!   product) is a *bare* attribute: it matches that method of every class the claim references or
//!   constructs, and of no other class. A changed `pop` in a class the claim never mentions does not
//!   fire.
//!
//! A definition changed when its text differs between parent and child, or it exists at only one of
//! them (removed or renamed away, or added, e.g. an override that now shadows a base method).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use serde_json::json;

use super::claim::{ArmError, Change, Claim};
use rustpython_parser::ast;

use super::parse_cache::parse_at;
use super::resolver::{MAX_DEPTH, Resolver, Scope};
use crate::records::{PredictionRecord, Verdict};
use crate::syntax::python::{
    Definition, Fixture, ParsedModule, References, parameters, parse_function,
};

/// The methods a test class runs before each test, whose names the test therefore depends on.
const SETUP_METHODS: &[&str] = &[
    "setUp",
    "asyncSetUp",
    "setUpClass",
    "setup_method",
    "setup_class",
    "setup",
];

/// Parameters that are never user fixtures worth following.
const IGNORED_PARAMETERS: &[&str] = &["self", "cls", "request"];

/// The symbol-anchoring arm.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SymbolAnchoring;

impl SymbolAnchoring {
    /// The arm's prediction for `claim` under `change`.
    pub fn predict(&self, claim: &Claim, change: &Change) -> Result<PredictionRecord, ArmError> {
        let changed = changed_definitions(change.diff())?;
        let world = Resolver::new(change);
        let mut unparsed: BTreeSet<String> = changed.unparsed.iter().cloned().collect();
        let analysis = match analyse(claim, change, &world) {
            Ok(analysis) => Some(analysis),
            Err(Unreadable::Parse(failure)) => {
                unparsed.insert(failure);
                None
            }
            Err(Unreadable::Arm(error)) => return Err(error),
        };
        unparsed.extend(world.unparsed.borrow().iter().cloned());
        let (referenced, via_fixture) = analysis.unwrap_or_default();
        let matched: Vec<&String> = changed
            .names
            .iter()
            .filter(|name| referenced.contains(*name))
            .collect();
        // Lookups also produce names nothing defines (`Cache.assertEqual` from the bare rule); the
        // evidence shows only real definitions.
        let mut shown = Vec::new();
        for name in &referenced {
            if changed.names.contains(name) || world.definition(name)?.is_some() {
                shown.push(name);
            }
        }
        let mut evidence = json!({
            "changed": matched,
            "referenced": shown,
            "via_fixture": via_fixture,
        });
        if !unparsed.is_empty() {
            evidence["unparsed"] = json!(unparsed);
        }
        let verdict = if !matched.is_empty() {
            Verdict::Flipped
        } else if unparsed.is_empty() {
            Verdict::Held
        } else {
            // A file we could not read may hold the reference or the change that would have fired.
            Verdict::None
        };
        Ok(PredictionRecord {
            claim: claim.id.clone(),
            verdict,
            evidence,
            tokens_in: None,
            tokens_out: None,
            cost: None,
        })
    }
}

/// The definitions the commit changed, by qualified name, and the touched files that did not parse.
#[derive(Debug, Default)]
struct ChangedDefinitions {
    names: BTreeSet<String>,
    unparsed: Vec<String>,
}

fn changed_definitions(change: &Change) -> Result<ChangedDefinitions, ArmError> {
    let mut changed = ChangedDefinitions::default();
    for path in &change.touched.source {
        let sides = [
            (&change.parent, &change.parent_modules),
            (&change.child, &change.child_modules),
        ];
        let mut definitions: Vec<BTreeMap<String, Definition>> = Vec::new();
        for (files, modules) in sides {
            let parsed = match parse_at(files, path)? {
                None => BTreeMap::new(),
                Some(Ok(module)) => module.definitions(&modules.module_name(path)),
                Some(Err(failure)) => {
                    changed.unparsed.push(failure.to_string());
                    break;
                }
            };
            definitions.push(parsed);
        }
        let [before, after] = definitions.as_slice() else {
            continue;
        };
        changed.names.extend(changed_names(before, after));
    }
    Ok(changed)
}

/// The definitions whose text differs between `before` and `after` (one file's definitions at
/// the parent and the child), or that exist on one side only: what "a symbol's definition
/// changed" means for A4 and for `check`'s anchors.
pub fn changed_names(
    before: &BTreeMap<String, Definition>,
    after: &BTreeMap<String, Definition>,
) -> BTreeSet<String> {
    before
        .keys()
        .chain(after.keys())
        .filter(|name| {
            let text_before = before.get(*name).map(|definition| &definition.text);
            let text_after = after.get(*name).map(|definition| &definition.text);
            text_before != text_after
        })
        .cloned()
        .collect()
}

/// Why the claim's own files could not be analysed.
enum Unreadable {
    Parse(String),
    Arm(ArmError),
}

impl From<ArmError> for Unreadable {
    fn from(error: ArmError) -> Self {
        Unreadable::Arm(error)
    }
}

/// The names a claim references (qualified, inside the repository) and the classes its fixtures
/// produce.
fn analyse(
    claim: &Claim,
    change: &Change,
    world: &Resolver,
) -> Result<(BTreeSet<String>, BTreeMap<String, String>), Unreadable> {
    let test_path = claim.test_file();
    // Read first so a missing test file is an error naming the claim.
    change.test_source(claim)?;
    let test_module = parse_at(&change.parent, &test_path)
        .map_err(ArmError::from)?
        .expect("the test file was just read")
        .map_err(|failure| Unreadable::Parse(failure.to_string()))?;
    let test_module = test_module.as_ref();
    let function = parse_function(&test_path, &claim.source)
        .map_err(|failure| Unreadable::Parse(format!("claim {}: {failure}", claim.id)))?;
    let mut resolved = Resolved::default();
    let mut scope = Scope::of_module(world.index(), test_module);

    // Fixtures first: their products type the test's parameters.
    let mut requested: Vec<String> = parameters(&function);
    requested.extend(claim.fixtures.iter().cloned());
    let via_fixture = follow_fixtures(world, test_module, requested, &mut resolved)?;
    for (name, class) in &via_fixture {
        scope.bindings.insert(name.clone(), class.clone());
    }

    let references = References::of_function(&function);
    if let Some(class) = claim.test_class() {
        let methods: BTreeMap<String, ast::StmtFunctionDef> = test_module
            .methods_of(&class)
            .into_iter()
            .map(|method| (method.name.to_string(), method))
            .collect();
        for method in methods.values() {
            if SETUP_METHODS.contains(&method.name.as_str()) {
                let references = References::of_function(method);
                world.walk(&mut scope, &references, &mut resolved)?;
            }
        }
        follow_helpers(
            world,
            &methods,
            &function,
            &references,
            &mut scope,
            &mut resolved,
        )?;
    }
    world.walk(&mut scope, &references, &mut resolved)?;
    world.apply_bare_attributes(&mut resolved)?;
    let referenced = resolved
        .referenced
        .into_iter()
        .filter(|name| world.in_repository(name))
        .collect();
    Ok((referenced, via_fixture))
}

/// Follows the test class's helper methods the claim calls as `self.<name>(...)` (a mixin's test
/// calling the `make` its concrete class defines): their bodies are the claim's too, and a helper
/// that returns a constructed class types the call (`self.make()` → `Tally`).
fn follow_helpers(
    world: &Resolver,
    methods: &BTreeMap<String, ast::StmtFunctionDef>,
    test: &ast::StmtFunctionDef,
    references: &References,
    scope: &mut Scope,
    resolved: &mut Resolved,
) -> Result<(), ArmError> {
    let called = |references: &References| -> Vec<String> {
        references
            .chains
            .iter()
            .chain(&references.calls)
            .filter_map(|chain| match chain.as_slice() {
                [receiver, name, ..] if receiver == "self" => Some(name.clone()),
                _ => None,
            })
            .collect()
    };
    let mut visited = BTreeSet::from([test.name.to_string()]);
    let mut queue: VecDeque<(String, usize)> = called(references)
        .into_iter()
        .map(|name| (name, 0))
        .collect();
    while let Some((name, depth)) = queue.pop_front() {
        if depth > MAX_DEPTH || SETUP_METHODS.contains(&name.as_str()) {
            continue;
        }
        let Some(method) = methods.get(&name) else {
            continue;
        };
        if !visited.insert(name.clone()) {
            continue;
        }
        let helper = References::of_function(method);
        world.walk(scope, &helper, resolved)?;
        for product in &helper.returned {
            if let Some(class) = world.class_of_call(scope, product)? {
                scope.products.insert(format!("self.{name}"), class);
                break;
            }
        }
        queue.extend(called(&helper).into_iter().map(|name| (name, depth + 1)));
    }
    Ok(())
}

/// Follows requested fixtures to their definitions (by registered name) and walks their bodies;
/// returns the class each fixture produces, when it produces one.
fn follow_fixtures(
    world: &Resolver,
    test_module: &ParsedModule,
    requested: Vec<String>,
    resolved: &mut Resolved,
) -> Result<BTreeMap<String, String>, Unreadable> {
    let mut providers: Vec<Arc<ParsedModule>> = Vec::new();
    let test_path = test_module.path.clone();
    let mut directory: Vec<&str> = test_path.split('/').collect();
    directory.pop();
    loop {
        let conftest = if directory.is_empty() {
            "conftest.py".to_string()
        } else {
            format!("{}/conftest.py", directory.join("/"))
        };
        if conftest != test_path
            && let Some(module) = world.parsed(&conftest)?
        {
            providers.push(module);
        }
        if directory.pop().is_none() {
            break;
        }
    }

    // Every fixture each file defines, nearest file first: the test file's own fixtures override
    // a conftest's, and a nearer conftest's override a farther one's, as in pytest.
    let fixtures: Vec<(&ParsedModule, Vec<Fixture>)> = std::iter::once(test_module)
        .chain(providers.iter().map(Arc::as_ref))
        .map(|module| (module, module.fixtures()))
        .collect();
    let mut products = BTreeMap::new();
    let mut visited = BTreeSet::new();
    let mut queue: VecDeque<(String, usize)> =
        requested.into_iter().map(|name| (name, 0)).collect();
    while let Some((name, depth)) = queue.pop_front() {
        if depth > MAX_DEPTH || IGNORED_PARAMETERS.contains(&name.as_str()) {
            continue;
        }
        if !visited.insert(name.clone()) {
            continue;
        }
        let found = fixtures.iter().find_map(|(module, defined)| {
            defined
                .iter()
                .find(|fixture| fixture.name == name)
                .map(|fixture| (*module, fixture))
        });
        let Some((module, fixture)) = found else {
            continue;
        };
        let mut scope = Scope::of_module(world.index(), module);
        let references = References::of_function(&fixture.function);
        world.walk(&mut scope, &references, resolved)?;
        for product in &references.returned {
            if let Some(class) = world.class_of_call(&scope, product)? {
                products.insert(name.clone(), class);
                break;
            }
        }
        for parameter in parameters(&fixture.function) {
            queue.push_back((parameter, depth + 1));
        }
    }
    Ok(products)
}

/// What a claim references, as it accumulates.
#[derive(Debug, Default)]
struct Resolved {
    /// Qualified names (canonical: where they are defined).
    referenced: BTreeSet<String>,
    /// Classes referenced or constructed.
    classes: BTreeSet<String>,
    /// Attributes read from receivers of unknown class.
    bare: BTreeSet<String>,
}

impl<'c> Resolver<'c> {
    /// The canonical name a chain's head resolves to in `scope`: an import or a star-imported
    /// definition. `None` for locals, builtins and anything else.
    fn resolve_head(&self, scope: &Scope, head: &str) -> Result<Option<String>, ArmError> {
        if let Some(imported) = scope.imports.get(head) {
            return self.canonical(imported, 0).map(Some);
        }
        for star in &scope.stars {
            let candidate = self.canonical(&format!("{star}.{head}"), 0)?;
            if self.definition(&candidate)?.is_some() {
                return Ok(Some(candidate));
            }
        }
        Ok(None)
    }

    /// Records what a chain references; returns its canonical name when fully resolved.
    fn walk_chain(
        &self,
        scope: &Scope,
        chain: &[String],
        resolved: &mut Resolved,
    ) -> Result<Option<String>, ArmError> {
        // The longest prefix bound to a constructed class (`self.cache`, `c`).
        for end in (1..=chain.len()).rev() {
            if let Some(class) = scope.bindings.get(&chain[..end].join(".")) {
                resolved.classes.insert(class.clone());
                resolved.referenced.insert(class.clone());
                return self.walk_members(class, &chain[end..], resolved);
            }
        }
        let Some((head, rest)) = chain.split_first() else {
            return Ok(None);
        };
        let Some(mut name) = self.resolve_head(scope, head)? else {
            // An unknown receiver: what is read from it is a bare attribute.
            resolved.bare.extend(rest.iter().cloned());
            return Ok(None);
        };
        resolved.referenced.insert(name.clone());
        for (position, part) in rest.iter().enumerate() {
            if self.is_class(&name)? {
                resolved.classes.insert(name.clone());
                return self.walk_members(&name, &rest[position..], resolved);
            }
            name = self.canonical(&format!("{name}.{part}"), 0)?;
            resolved.referenced.insert(name.clone());
        }
        if self.is_class(&name)? {
            resolved.classes.insert(name.clone());
        }
        Ok(Some(name))
    }

    /// Records `class.first` (through bases); what is read beyond it has an unknown receiver.
    fn walk_members(
        &self,
        class: &str,
        members: &[String],
        resolved: &mut Resolved,
    ) -> Result<Option<String>, ArmError> {
        let Some((first, beyond)) = members.split_first() else {
            return Ok(Some(class.to_string()));
        };
        let found = self.member(class, first, 0)?;
        let last = found.last().cloned();
        resolved.referenced.extend(found);
        resolved.bare.extend(beyond.iter().cloned());
        Ok(if beyond.is_empty() { last } else { None })
    }

    /// The class a call of `callee` constructs, if it names one.
    fn class_of_call(&self, scope: &Scope, callee: &[String]) -> Result<Option<String>, ArmError> {
        if let Some(class) = scope.products.get(&callee.join(".")) {
            return Ok(Some(class.clone()));
        }
        let mut scratch = Resolved::default();
        let Some(name) = self.walk_chain(scope, callee, &mut scratch)? else {
            return Ok(None);
        };
        Ok(self.is_class(&name)?.then_some(name))
    }

    /// Records everything one function references, in `scope` (whose bindings it extends).
    fn walk(
        &self,
        scope: &mut Scope,
        references: &References,
        resolved: &mut Resolved,
    ) -> Result<(), ArmError> {
        scope.add_imports(self.index(), &references.imports);
        for (local, callee) in &references.bindings {
            if let Some(class) = self.class_of_call(scope, callee)? {
                scope.bindings.entry(local.clone()).or_insert(class);
            }
        }
        for chain in &references.chains {
            self.walk_chain(scope, chain, resolved)?;
        }
        for callee in &references.calls {
            if let Some(class) = self.class_of_call(scope, callee)? {
                for constructor in ["__init__", "__new__"] {
                    resolved
                        .referenced
                        .extend(self.member(&class, constructor, 0)?);
                }
            }
        }
        for (callee, attribute) in &references.receiver_calls {
            match self.class_of_call(scope, callee)? {
                Some(class) => {
                    resolved.classes.insert(class.clone());
                    resolved
                        .referenced
                        .extend(self.member(&class, attribute, 0)?);
                }
                None => {
                    resolved.bare.insert(attribute.clone());
                }
            }
        }
        resolved
            .bare
            .extend(references.loose_attributes.iter().cloned());
        Ok(())
    }

    /// The bare-attribute rule: an attribute of unknown receiver references that member of every
    /// class the claim references or constructs.
    fn apply_bare_attributes(&self, resolved: &mut Resolved) -> Result<(), ArmError> {
        let classes: Vec<String> = resolved.classes.iter().cloned().collect();
        let bare: Vec<String> = resolved.bare.iter().cloned().collect();
        for class in &classes {
            for attribute in &bare {
                resolved
                    .referenced
                    .extend(self.member(class, attribute, 0)?);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arms::test_repository::{TwoCommits, two_commits};

    const INIT: &str = "from .cache import Cache\nfrom .stack import Stack\n";
    const CACHE: &str = "\
class Base:
    def clear(self):
        self.data = {}


class Cache(Base):
    def __init__(self, maxsize=2):
        self.data = {}

    def get(self, key):
        return self.data.get(key)

    def pop(self, key):
        return self.data.pop(key)
";
    const STACK: &str = "\
class Stack:
    def __init__(self):
        self.items = []

    def pop(self):
        return self.items.pop()

    def push(self, item):
        self.items.append(item)
";
    const CONFTEST: &str = "\
import pytest
from pkg import Cache


@pytest.fixture(name=\"cr\")
def make_cache():
    return Cache()
";
    const TEST_STACK: &str = "\
from pkg import Stack


def test_pop():
    s = Stack()
    s.push(1)
    assert s.pop() == 1
";
    const TEST_CACHE: &str = "\
def test_get(cr):
    assert cr.get(\"x\") is None


class TestClear:
    def setup_method(self):
        from pkg.cache import Cache
        self.cache = Cache()

    def test_clear(self):
        self.cache.clear()
        assert self.cache.data == {}
";

    fn repository(changes: &[(&str, Option<&str>)]) -> TwoCommits {
        two_commits(
            &[
                ("src/pkg/__init__.py", INIT),
                ("src/pkg/cache.py", CACHE),
                ("src/pkg/stack.py", STACK),
                ("tests/conftest.py", CONFTEST),
                ("tests/test_stack.py", TEST_STACK),
                ("tests/test_cache.py", TEST_CACHE),
            ],
            changes,
        )
    }

    fn claim(fixture: &TwoCommits, node: &str, source: &str) -> Claim {
        Claim {
            id: format!("demo@{}::{node}", fixture.parent),
            repo: "demo".into(),
            parent: fixture.parent.clone(),
            commit: fixture.child.clone(),
            node: node.into(),
            source: source.into(),
            fixtures: Vec::new(),
            file: None,
        }
    }

    fn predict(fixture: &TwoCommits, claim: &Claim) -> PredictionRecord {
        let change = Change::load(&fixture.repository, &fixture.parent, &fixture.child).unwrap();
        SymbolAnchoring.predict(claim, &change).unwrap()
    }

    fn test_pop(fixture: &TwoCommits) -> Claim {
        claim(
            fixture,
            "tests/test_stack.py::test_pop",
            "def test_pop():\n    s = Stack()\n    s.push(1)\n    assert s.pop() == 1\n",
        )
    }

    #[test]
    fn a_change_to_one_classs_pop_does_not_fire_for_another_classs_pop() {
        let changed = CACHE.replace("self.data.pop(key)", "self.data.pop(key, None)");
        let fixture = repository(&[("src/pkg/cache.py", Some(&changed))]);
        let prediction = predict(&fixture, &test_pop(&fixture));
        assert_eq!(prediction.verdict, Verdict::Held, "{}", prediction.evidence);
        assert_eq!(prediction.evidence["changed"], json!([]));
        let referenced = &prediction.evidence["referenced"];
        assert!(
            referenced
                .as_array()
                .unwrap()
                .contains(&json!("pkg.stack.Stack.pop"))
        );
    }

    #[test]
    fn a_change_to_the_referenced_classs_pop_fires() {
        let changed = STACK.replace("self.items.pop()", "self.items.pop(0)");
        let fixture = repository(&[("src/pkg/stack.py", Some(&changed))]);
        let prediction = predict(&fixture, &test_pop(&fixture));
        assert_eq!(prediction.verdict, Verdict::Flipped);
        assert_eq!(
            prediction.evidence["changed"],
            json!(["pkg.stack.Stack.pop"])
        );
    }

    #[test]
    fn a_constructor_change_fires_for_a_claim_that_constructs_the_class() {
        let changed = STACK.replace("self.items = []", "self.items = [None]");
        let fixture = repository(&[("src/pkg/stack.py", Some(&changed))]);
        let prediction = predict(&fixture, &test_pop(&fixture));
        assert_eq!(
            prediction.evidence["changed"],
            json!(["pkg.stack.Stack.__init__"])
        );
    }

    #[test]
    fn a_fixture_only_reference_is_followed_through_an_aliased_fixture() {
        let changed = CACHE.replace("self.data.get(key)", "self.data.get(key, 0)");
        let fixture = repository(&[("src/pkg/cache.py", Some(&changed))]);
        let test_get = claim(
            &fixture,
            "tests/test_cache.py::test_get",
            "def test_get(cr):\n    assert cr.get(\"x\") is None\n",
        );
        let prediction = predict(&fixture, &test_get);
        assert_eq!(
            prediction.verdict,
            Verdict::Flipped,
            "{}",
            prediction.evidence
        );
        assert_eq!(
            prediction.evidence["changed"],
            json!(["pkg.cache.Cache.get"])
        );
        assert_eq!(
            prediction.evidence["via_fixture"],
            json!({"cr": "pkg.cache.Cache"})
        );
        // The same claim does not fire for a change to `Stack.pop`.
        let other = repository(&[(
            "src/pkg/stack.py",
            Some(&STACK.replace("self.items.pop()", "self.items.pop(0)")),
        )]);
        let test_get = claim(&other, "tests/test_cache.py::test_get", &test_get.source);
        assert_eq!(predict(&other, &test_get).verdict, Verdict::Held);
    }

    #[test]
    fn methods_inherited_through_a_setup_binding_resolve_to_the_base_class() {
        let changed = CACHE.replace(
            "    def clear(self):\n        self.data = {}",
            "    def clear(self):\n        self.data = dict()",
        );
        let fixture = repository(&[("src/pkg/cache.py", Some(&changed))]);
        let test_clear = claim(
            &fixture,
            "tests/test_cache.py::TestClear::test_clear",
            "    def test_clear(self):\n        self.cache.clear()\n        assert self.cache.data == {}\n",
        );
        let prediction = predict(&fixture, &test_clear);
        assert_eq!(
            prediction.evidence["changed"],
            json!(["pkg.cache.Base.clear"])
        );
    }

    #[test]
    fn a_removed_definition_counts_as_changed() {
        let changed = STACK.replace(
            "    def push(self, item):\n        self.items.append(item)\n",
            "",
        );
        let fixture = repository(&[("src/pkg/stack.py", Some(&changed))]);
        let prediction = predict(&fixture, &test_pop(&fixture));
        assert_eq!(
            prediction.evidence["changed"],
            json!(["pkg.stack.Stack.push"])
        );
    }

    #[test]
    fn an_unparsable_touched_file_gives_no_verdict_unless_something_else_fires() {
        let fixture = repository(&[("src/pkg/cache.py", Some("print 'python 2'\n"))]);
        let prediction = predict(&fixture, &test_pop(&fixture));
        assert_eq!(prediction.verdict, Verdict::None);
        assert!(
            prediction.evidence["unparsed"][0]
                .as_str()
                .unwrap()
                .starts_with("parse src/pkg/cache.py")
        );
    }
}
