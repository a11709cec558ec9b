//! Step kinds that only declare parameters, so the pipeline loader can be tested against the shape
//! of every real kind while those kinds are being built. Running one is an error.

use std::sync::Arc;

use claimflow::engine::{
    ItemOutput, ItemPlan, ItemResult, ParamSpec, ParamType, StepContext, StepError, StepKind,
    Upstream,
};
use claimflow::steps::Registry;

/// A kind known only by its name and parameters.
pub struct DeclaredKind {
    name: &'static str,
    params: &'static [ParamSpec],
}

impl StepKind for DeclaredKind {
    fn name(&self) -> &'static str {
        self.name
    }

    fn version(&self) -> u32 {
        1
    }

    fn about(&self) -> &'static str {
        "a kind that only declares its parameters, for loader tests"
    }

    fn params(&self) -> &'static [ParamSpec] {
        self.params
    }

    fn items(&self, _: &StepContext, _: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        Err(self.not_runnable())
    }

    fn run(&self, _: &StepContext, _: &ItemPlan, _: &Upstream) -> Result<ItemOutput, StepError> {
        Err(self.not_runnable())
    }

    fn publish(&self, _: &StepContext, _: &[ItemResult]) -> Result<(), StepError> {
        Err(self.not_runnable())
    }
}

impl DeclaredKind {
    fn not_runnable(&self) -> StepError {
        StepError::Message(format!(
            "`{}` is a declared-only kind for loader tests and cannot run",
            self.name
        ))
    }
}

const COMMAND: &[ParamSpec] = &[
    ParamSpec::required("run", ParamType::String, "the command, run by `sh -c`"),
    ParamSpec::optional(
        "inputs",
        ParamType::StringList,
        "files whose content enters the key",
    ),
    ParamSpec::optional(
        "outputs",
        ParamType::StringList,
        "files the command must produce",
    ),
    ParamSpec::optional(
        "foreach",
        ParamType::StringOrList,
        "a list or a glob: one item each",
    ),
];

const RANK_COMMITS: &[ParamSpec] = &[
    ParamSpec::optional(
        "by",
        ParamType::Enum(&["assertion-deletions", "keywords", "uniform"]),
        "how commits are ranked",
    ),
    ParamSpec::optional("top", ParamType::Integer, "commits kept per repository"),
    ParamSpec::optional("repo", ParamType::Repo, "rank only this repository"),
];

const MINE_CLAIMS: &[ParamSpec] = &[ParamSpec::optional(
    "max_per_commit",
    ParamType::Integer,
    "claims kept per commit",
)];

const ORACLE: &[ParamSpec] = &[
    ParamSpec::optional(
        "runs",
        ParamType::Integer,
        "runs at the parent and at the child",
    ),
    ParamSpec::optional("timeout", ParamType::Integer, "seconds per pytest run"),
    ParamSpec::optional(
        "require_child_green",
        ParamType::Bool,
        "exclude broken children",
    ),
];

const STRATIFY: &[ParamSpec] = &[
    ParamSpec::required("split", ParamType::String, "which split to sample"),
    ParamSpec::optional("flip_rate", ParamType::Number, "share of flipped claims"),
    ParamSpec::optional("seed", ParamType::Integer, "sampling seed"),
];

const LLM_ARM: &[ParamSpec] = &[
    ParamSpec::required("prompt", ParamType::File, "the prompt template"),
    ParamSpec::required("model", ParamType::Model, "a `models:` entry"),
    ParamSpec::optional(
        "question",
        ParamType::Enum(&["claim", "diff"]),
        "what the model is asked",
    ),
    ParamSpec::optional(
        "options",
        ParamType::Any,
        "sampling options, passed through",
    ),
];

const CONTROL: &[ParamSpec] = &[
    ParamSpec::required("arm", ParamType::Step, "the arm this control wraps"),
    ParamSpec::optional("seed", ParamType::Integer, "shuffle seed"),
];

const STATS: &[ParamSpec] = &[
    ParamSpec::optional("bootstrap", ParamType::Integer, "bootstrap resamples"),
    ParamSpec::optional("seed", ParamType::Integer, "bootstrap seed"),
    ParamSpec::optional("arms", ParamType::StepList, "the arm steps compared"),
];

/// The kinds of the paper's pipeline, declared with the parameters their real versions take.
pub fn registry() -> Registry {
    let declared = [
        ("command", COMMAND),
        ("rank-commits", RANK_COMMITS),
        ("mine-claims", MINE_CLAIMS),
        ("oracle", ORACLE),
        ("stratify", STRATIFY),
        ("llm-arm", LLM_ARM),
        ("control", CONTROL),
        ("stats", STATS),
        ("report", &[]),
    ];
    Registry::with(
        declared
            .into_iter()
            .map(|(name, params)| Arc::new(DeclaredKind { name, params }) as Arc<dyn StepKind>)
            .collect(),
    )
}
