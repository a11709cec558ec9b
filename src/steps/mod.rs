//! The step kinds a pipeline can `use`, and the registry that finds them by name.

pub mod arm;

use std::sync::Arc;

mod claim_groups;
mod command;
mod control_stats;
mod cutoff;
mod label_sources;
mod llm_arm;
mod mine_claims;
mod model_calls;
mod oracle;
mod paraphrase;
mod prose_render;
mod published;
mod rank_commits;
mod rename_class;
mod report;
pub mod selection;
mod shuffle;
mod stats;
mod stratify;

pub use command::CommandStep;
pub use cutoff::CutoffStep;
pub use llm_arm::LlmArm;
pub use mine_claims::MineClaims;
pub use oracle::{
    EnvironmentFailure, Environments, FixedEnvironment, OracleStep, PythonEnvironments,
};
pub use paraphrase::ParaphraseStep;
pub use prose_render::{ProseRender, RenderRecord};
pub use rank_commits::RankCommits;
pub use rename_class::RenameClass;
pub use report::ReportStep;
pub use shuffle::ShuffleStep;
pub use stats::StatsStep;
pub use stratify::Stratify;

use crate::engine::StepKind;

/// The known step kinds, by name.
#[derive(Clone)]
pub struct Registry {
    kinds: Vec<Arc<dyn StepKind>>,
}

impl Registry {
    /// Every step kind claimflow ships.
    pub fn builtin() -> Self {
        let kinds: Vec<Arc<dyn StepKind>> = vec![Arc::new(CommandStep)];
        let mut kinds = kinds;
        kinds.push(Arc::new(StatsStep));
        kinds.push(Arc::new(ReportStep));
        kinds.push(Arc::new(RankCommits));
        kinds.push(Arc::new(MineClaims));
        kinds.push(Arc::new(OracleStep::new(Arc::new(PythonEnvironments))));
        kinds.push(Arc::new(arm::Arm));
        kinds.push(Arc::new(LlmArm::default()));
        kinds.push(Arc::new(ProseRender::default()));
        kinds.push(Arc::new(Stratify));
        kinds.push(Arc::new(CutoffStep));
        kinds.push(Arc::new(RenameClass));
        kinds.push(Arc::new(ShuffleStep));
        kinds.push(Arc::new(ParaphraseStep::new(Arc::new(PythonEnvironments))));
        Registry { kinds }
    }

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
