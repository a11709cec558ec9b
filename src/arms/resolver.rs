//! Where a name used in the repository is defined, read from the parent commit's modules (parsed
//! on demand and kept for the claim): a module's imports and definitions, re-exports followed to
//! the module that defines a name, and methods looked up through base classes. Both anchoring
//! arms use it: file anchoring to find the module an imported name comes from, symbol anchoring to
//! resolve what a claim references.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::sync::Arc;

use super::claim::{ArmError, Change};
use super::parse_cache::parse_at;
use crate::syntax::modules::ModuleIndex;
use crate::syntax::python::{Definition, DefinitionKind, Import, ParsedModule};

/// How deep re-exports and base classes are followed.
pub(super) const MAX_DEPTH: usize = 8;

/// The names visible to one function: its module's imports and the locals bound to classes.
#[derive(Debug, Clone, Default)]
pub(super) struct Scope {
    /// The file the function is in (relative imports resolve against it).
    pub(super) path: String,
    /// Local name → absolute dotted name.
    pub(super) imports: BTreeMap<String, String>,
    /// Modules star-imported.
    pub(super) stars: Vec<String>,
    /// Local names (dotted for `self.x`) → the class their value was constructed from.
    pub(super) bindings: BTreeMap<String, String>,
    /// Callables (dotted, `self.make`) → the class a call of them returns.
    pub(super) products: BTreeMap<String, String>,
}

impl Scope {
    pub(super) fn of_module(index: &ModuleIndex, module: &ParsedModule) -> Self {
        let mut scope = Scope {
            path: module.path.clone(),
            ..Scope::default()
        };
        scope.add_imports(index, &module.imports());
        scope
    }

    pub(super) fn add_imports(&mut self, index: &ModuleIndex, imports: &[Import]) {
        for import in imports {
            for (local, absolute) in index.bindings(&self.path, import) {
                if local == "*" {
                    self.stars.push(absolute);
                } else {
                    self.imports.entry(local).or_insert(absolute);
                }
            }
        }
    }
}

/// Facts about one repository module at the parent.
#[derive(Debug)]
pub(super) struct Facts {
    pub(super) module: String,
    pub(super) scope: Scope,
    pub(super) definitions: BTreeMap<String, Definition>,
}

/// A repository module's facts and the name parts after the module.
pub(super) type ModuleAndRest = (Rc<Facts>, Vec<String>);

/// The parent commit's modules, parsed on demand.
pub(super) struct Resolver<'c> {
    pub(super) change: &'c Change<'c>,
    pub(super) modules: RefCell<BTreeMap<String, Option<Arc<ParsedModule>>>>,
    pub(super) facts: RefCell<BTreeMap<String, Option<Rc<Facts>>>>,
    pub(super) unparsed: RefCell<BTreeSet<String>>,
}

impl<'c> Resolver<'c> {
    pub(super) fn new(change: &'c Change<'c>) -> Self {
        Resolver {
            change,
            modules: RefCell::new(BTreeMap::new()),
            facts: RefCell::new(BTreeMap::new()),
            unparsed: RefCell::new(BTreeSet::new()),
        }
    }

    pub(super) fn index(&self) -> &ModuleIndex {
        &self.change.parent_modules
    }

    /// The parsed file at `path` in the parent, `None` when absent or unparsable (noted).
    pub(super) fn parsed(&self, path: &str) -> Result<Option<Arc<ParsedModule>>, ArmError> {
        if let Some(known) = self.modules.borrow().get(path) {
            return Ok(known.clone());
        }
        let parsed = match parse_at(&self.change.parent, path)? {
            None => None,
            Some(Ok(module)) => Some(module),
            Some(Err(failure)) => {
                self.unparsed.borrow_mut().insert(failure.to_string());
                None
            }
        };
        self.modules
            .borrow_mut()
            .insert(path.to_string(), parsed.clone());
        Ok(parsed)
    }

    /// The facts of the repository module `module`, if it is one.
    pub(super) fn facts(&self, module: &str) -> Result<Option<Rc<Facts>>, ArmError> {
        let Some(path) = self.index().path_of(module).map(str::to_string) else {
            return Ok(None);
        };
        if let Some(known) = self.facts.borrow().get(&path) {
            return Ok(known.clone());
        }
        let facts = self.parsed(&path)?.map(|parsed| {
            let module = self.index().module_name(&path);
            Rc::new(Facts {
                scope: Scope::of_module(self.index(), &parsed),
                definitions: parsed.definitions(&module),
                module,
            })
        });
        self.facts.borrow_mut().insert(path, facts.clone());
        Ok(facts)
    }

    /// The longest prefix of `name` that is a repository module, with its facts and the rest.
    pub(super) fn split_module(&self, name: &str) -> Result<Option<ModuleAndRest>, ArmError> {
        let parts: Vec<&str> = name.split('.').collect();
        for end in (1..=parts.len()).rev() {
            if let Some(facts) = self.facts(&parts[..end].join("."))? {
                let rest = parts[end..].iter().map(|part| part.to_string()).collect();
                return Ok(Some((facts, rest)));
            }
        }
        Ok(None)
    }

    /// Whether `name` lies inside a repository module (at the parent or the child).
    pub(super) fn in_repository(&self, name: &str) -> bool {
        let parts: Vec<&str> = name.split('.').collect();
        (1..=parts.len()).any(|end| {
            let module = parts[..end].join(".");
            self.index().path_of(&module).is_some()
                || self.change.child_modules.path_of(&module).is_some()
        })
    }

    /// Where `name` is defined: re-exports followed through the importing module's imports.
    pub(super) fn canonical(&self, name: &str, depth: usize) -> Result<String, ArmError> {
        if depth > MAX_DEPTH {
            return Ok(name.to_string());
        }
        let Some((facts, rest)) = self.split_module(name)? else {
            return Ok(name.to_string());
        };
        let Some(first) = rest.first() else {
            return Ok(facts.module.clone());
        };
        let defined = format!("{}.{}", facts.module, rest.join("."));
        if facts
            .definitions
            .contains_key(&format!("{}.{first}", facts.module))
        {
            return Ok(defined);
        }
        if let Some(target) = facts.scope.imports.get(first) {
            let mut target = target.clone();
            for part in &rest[1..] {
                target.push('.');
                target.push_str(part);
            }
            return self.canonical(&target, depth + 1);
        }
        for star in &facts.scope.stars {
            let candidate = self.canonical(&format!("{star}.{}", rest.join(".")), depth + 1)?;
            if self.definition(&candidate)?.is_some() {
                return Ok(candidate);
            }
        }
        Ok(defined)
    }

    /// The definition named `name` (canonical), if the parent has one.
    pub(super) fn definition(&self, name: &str) -> Result<Option<Definition>, ArmError> {
        Ok(self
            .split_module(name)?
            .and_then(|(facts, _)| facts.definitions.get(name).cloned()))
    }

    pub(super) fn is_class(&self, name: &str) -> Result<bool, ArmError> {
        Ok(self
            .definition(name)?
            .is_some_and(|definition| definition.kind == DefinitionKind::Class))
    }

    /// `class.attribute`, and where the class's bases define it when the class does not.
    pub(super) fn member(
        &self,
        class: &str,
        attribute: &str,
        depth: usize,
    ) -> Result<Vec<String>, ArmError> {
        let own = format!("{class}.{attribute}");
        let mut found = vec![own.clone()];
        if depth > MAX_DEPTH || self.definition(&own)?.is_some() {
            return Ok(found);
        }
        let Some(definition) = self.definition(class)? else {
            return Ok(found);
        };
        let Some((facts, _)) = self.split_module(class)? else {
            return Ok(found);
        };
        for base in &definition.bases {
            let Some(base) = self.resolve_in_module(&facts, base)? else {
                continue;
            };
            let inherited = self.member(&base, attribute, depth + 1)?;
            if let Some(last) = inherited.last()
                && self.definition(last)?.is_some()
            {
                found.extend(inherited);
                break;
            }
        }
        Ok(found)
    }

    /// A dotted name as written in a repository module (a base class), made canonical.
    pub(super) fn resolve_in_module(
        &self,
        facts: &Facts,
        chain: &[String],
    ) -> Result<Option<String>, ArmError> {
        let Some((head, rest)) = chain.split_first() else {
            return Ok(None);
        };
        let base = if let Some(imported) = facts.scope.imports.get(head) {
            imported.clone()
        } else if facts
            .definitions
            .contains_key(&format!("{}.{head}", facts.module))
        {
            format!("{}.{head}", facts.module)
        } else {
            return Ok(None);
        };
        let mut name = base;
        for part in rest {
            name.push('.');
            name.push_str(part);
        }
        self.canonical(&name, 0).map(Some)
    }
}
