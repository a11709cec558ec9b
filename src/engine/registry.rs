//! The step kinds a run can use, by name: the engine finds each step's kind here, and the
//! loader reads what each kind declares through [`Kinds`]. The kinds claimflow ships are listed
//! by [`crate::steps`], which builds on the engine.

use std::sync::Arc;

use super::step::StepKind;
use crate::pipeline::{
    KindDeclaration, Kinds, Need, ParamsDecl, Pipeline, PipelineProblem, Role, StepSpec,
};

/// The known step kinds, by name.
#[derive(Clone)]
pub struct Registry {
    kinds: Vec<Arc<dyn StepKind>>,
}

impl Registry {
    /// A registry of the given kinds (for tests).
    pub fn with(kinds: Vec<Arc<dyn StepKind>>) -> Self {
        Registry { kinds }
    }

    /// The kind named `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn StepKind>> {
        self.kinds.iter().find(|kind| kind.name() == name).cloned()
    }

    /// A JSON Schema for one entry of `steps:`: for each kind, `uses:` naming it and `with:`
    /// checked against the kind's parameter struct (the same types the loader checks).
    pub fn schema(&self) -> serde_json::Value {
        let steps: Vec<serde_json::Value> = self
            .names()
            .into_iter()
            .filter_map(|name| self.get(name))
            .map(|kind| {
                let mut with = kind.params().schema();
                if let Some(map) = with.as_object_mut() {
                    map.remove("$schema");
                }
                serde_json::json!({
                    "title": kind.name(),
                    "description": kind.about(),
                    "type": "object",
                    "properties": {
                        "uses": {"const": kind.name()},
                        "needs": {"type": "array", "items": {"type": "string"}},
                        "with": with,
                    },
                    "required": ["uses"],
                    "additionalProperties": false,
                })
            })
            .collect();
        serde_json::json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "a claimflow pipeline step",
            "oneOf": steps,
        })
    }

    /// Every kind's name, sorted.
    pub fn names(&self) -> Vec<&'static str> {
        let mut names: Vec<_> = self.kinds.iter().map(|kind| kind.name()).collect();
        names.sort_unstable();
        names
    }
}

impl Kinds for Registry {
    fn declaration(&self, name: &str) -> Option<Box<dyn KindDeclaration + '_>> {
        self.get(name)
            .map(|kind| Box::new(Declared(kind)) as Box<dyn KindDeclaration>)
    }

    fn names(&self) -> Vec<&'static str> {
        Registry::names(self)
    }
}

/// A step kind, seen by the loader.
struct Declared(Arc<dyn StepKind>);

impl KindDeclaration for Declared {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn params(&self) -> ParamsDecl {
        self.0.params()
    }

    fn role(&self, step: &StepSpec) -> Role {
        self.0.role(step)
    }

    fn requires(&self, step: &StepSpec) -> &'static [Need] {
        self.0.requires(step)
    }

    fn check_pipeline(&self, step: &StepSpec, pipeline: &Pipeline) -> Vec<PipelineProblem> {
        self.0.check_pipeline(step, pipeline)
    }

    fn strategy_version(&self, step: &StepSpec) -> Option<u32> {
        self.0.strategy_version(step)
    }
}
