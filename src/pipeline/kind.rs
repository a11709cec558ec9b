//! What the loader needs to know about step kinds, declared here so that the pipeline does not
//! depend on the engine or on the kinds themselves: the set of kinds ([`Kinds`]) and what each
//! declares ([`KindDeclaration`]): its name, its typed parameters, the role of its records and its
//! checks of how a step fits the rest of the pipeline.
//!
//! The engine's registry of step kinds implements [`Kinds`]; the loader is handed one.

use super::model::{Pipeline, StepSpec};
use super::params::ParamsDecl;
use super::role::{Need, Role};

/// The step kinds a pipeline may use, by the name `uses:` gives them.
pub trait Kinds {
    /// The kind `uses:` names `name`, if there is one.
    fn declaration(&self, name: &str) -> Option<Box<dyn KindDeclaration + '_>>;

    /// Every kind's name, sorted.
    fn names(&self) -> Vec<&'static str>;
}

/// What a step kind declares to the loader.
pub trait KindDeclaration {
    /// The name used in `uses:`.
    fn name(&self) -> &'static str;

    /// The struct its `with:` parses into.
    fn params(&self) -> ParamsDecl;

    /// What the records of `step` (a step of this kind, parameters parsed) are.
    fn role(&self, step: &StepSpec) -> Role;

    /// The records `step` reads from the steps it needs; each must be met by one of its `needs`.
    fn requires(&self, step: &StepSpec) -> &'static [Need];

    /// How `step` relates to the other steps of `pipeline` (already valid on its own).
    fn check_pipeline(&self, step: &StepSpec, pipeline: &Pipeline) -> Vec<PipelineProblem>;

    /// The version of the strategy `step` runs, when the kind holds several (see
    /// `crate::engine::StepKind::strategy_version`).
    fn strategy_version(&self, step: &StepSpec) -> Option<u32>;
}

// Built here rather than beside `StepSpec` because it needs the kinds.
impl StepSpec {
    /// A step built outside the loader (tests, programs that build pipelines): `with` is parsed by
    /// the kind `uses` names in `registry`, and the role declared.
    pub fn parsed(
        name: &str,
        uses: &str,
        needs: &[&str],
        with: serde_json::Value,
        registry: &dyn Kinds,
    ) -> Result<StepSpec, String> {
        let kind = registry
            .declaration(uses)
            .ok_or_else(|| format!("unknown step kind `{uses}`"))?;
        let params = kind.params().parse(&with)?;
        let mut step = StepSpec {
            name: name.to_string(),
            uses: uses.to_string(),
            needs: needs.iter().map(|need| need.to_string()).collect(),
            with,
            params,
            role: Role::Other,
            line: 1,
        };
        step.role = kind.role(&step);
        step.declare_strategy_version(kind.as_ref());
        Ok(step)
    }

    /// Puts the version of the strategy the step runs, as its kind declares it, into the step's
    /// key: bumping one arm's version then invalidates that arm's items only.
    pub(crate) fn declare_strategy_version(&mut self, kind: &dyn KindDeclaration) {
        if let Some(version) = kind.strategy_version(self) {
            self.params = self.params.clone().with_arm_version(version);
        }
    }
}

/// A problem a step kind finds, at load time, in how one of its steps fits the rest of the
/// pipeline (a parameter naming a step of the wrong kind). The validator places it at the
/// parameter, or at the list element, it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineProblem {
    /// The `with:` parameter it is about; the step itself when `None`.
    pub param: Option<String>,
    /// The element of a list parameter it is about.
    pub index: Option<usize>,
    /// What is wrong, naming the steps involved.
    pub message: String,
    /// What to do about it.
    pub hint: String,
}
