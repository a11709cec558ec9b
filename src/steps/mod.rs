//! The step kinds a pipeline can `use`, and the registry that finds them by name.

pub mod arm;

use std::sync::Arc;

mod broken_setup;
mod cascade;
mod claim_groups;
mod command;
mod control_stats;
mod cutoff;
mod label_sources;
mod llm_arm;
mod mine_claims;
mod model_calls;
mod oracle;
mod page_inputs;
mod paraphrase;
mod prose_render;
mod rank_commits;
mod rename_class;
mod report;
mod report_page;
mod repositories;
pub mod scored;
pub mod selection;
mod shuffle;
mod stats;
mod stratify;

pub use cascade::CascadeStep;
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

pub use crate::engine::Registry;
use crate::engine::StepKind;

// The registry is the engine's; the kinds claimflow ships are listed here, above it.
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
        kinds.push(Arc::new(arm::Arm::default()));
        kinds.push(Arc::new(LlmArm::default()));
        kinds.push(Arc::new(CascadeStep));
        kinds.push(Arc::new(ProseRender));
        kinds.push(Arc::new(Stratify));
        kinds.push(Arc::new(CutoffStep));
        kinds.push(Arc::new(RenameClass));
        kinds.push(Arc::new(ShuffleStep));
        kinds.push(Arc::new(ParaphraseStep::new(Arc::new(PythonEnvironments))));
        Registry::with(kinds)
    }
}
