//! What a step's records are, as its kind declares it ([`crate::engine::StepKind::role`]).
//!
//! Consumers (`stats`, `report`, the loader's checks) find the steps they read by role, never by
//! kind or step name, so a new arm kind or control needs no edit in them. A kind declares the
//! roles it reads from its needs as [`Need`]s, which the loader checks before anything runs.

use serde::Serialize;

/// What a step's records are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "role")]
pub enum Role {
    /// Ranked commits to mine (`rank-commits`).
    Commits,
    /// Claims: tests that pass at a parent (`mine-claims`).
    Claims,
    /// Execution labels of claims (`oracle`).
    Labels,
    /// A sample of another step's labels (`stratify`): the labels scored when it is needed.
    LabelSample,
    /// The labels split at a date (`cutoff`): an arm needing it judges only its claims, and
    /// `stats` compares the arms across the date.
    LabelSplit,
    /// The claims whose commit renames what they use (`rename-class`), reported as a class.
    RenameClass,
    /// A manipulation of what arms see (a shuffled diff, paraphrased tests): an arm step that
    /// needs it is a control of the same arm without it. `control` names the manipulation.
    Manipulation {
        /// `shuffled-diff`, `paraphrase`.
        control: String,
    },
    /// Verdicts of one invalidation strategy.
    Predictions {
        /// The paper's id of the strategy (`a0`, `a4`, `a5c`, `a6_risk`); tables pick arms by it.
        strategy: String,
        /// The `models:` entry it asks, if any.
        model: Option<String>,
    },
    /// Verdicts of a control of another arm step (a shuffle, a paraphrase, a replicate).
    Control {
        /// The arm step it wraps (one of its needs).
        of: String,
        /// Which control (`shuffle`, `paraphrase`, `replicate`).
        control: String,
        /// The `models:` entry it asks, if any.
        model: Option<String>,
    },
    /// The statistics document (`stats`).
    Stats,
    /// Rendered tables and figures (`report`).
    Report,
    /// Records no other step interprets (`command`).
    Other,
}

impl Role {
    /// True for steps whose records are verdicts scored against labels: arms and controls.
    pub fn is_scored(&self) -> bool {
        matches!(self, Role::Predictions { .. } | Role::Control { .. })
    }

    /// The model a scored step asks, if any.
    pub fn model(&self) -> Option<&str> {
        match self {
            Role::Predictions { model, .. } | Role::Control { model, .. } => model.as_deref(),
            _ => None,
        }
    }

    /// The strategy id of an arm.
    pub fn strategy(&self) -> Option<&str> {
        match self {
            Role::Predictions { strategy, .. } => Some(strategy),
            _ => None,
        }
    }

    /// A selection of labelled claims: an arm needing one judges only its claims.
    pub fn is_selection(&self) -> bool {
        matches!(self, Role::LabelSample | Role::LabelSplit)
    }

    /// Which control a control step is (`shuffled-diff`, `paraphrase`), or which manipulation a
    /// manipulating step makes.
    pub fn control(&self) -> Option<&str> {
        match self {
            Role::Control { control, .. } | Role::Manipulation { control } => Some(control),
            _ => None,
        }
    }

    /// The arm step a control wraps.
    pub fn control_of(&self) -> Option<&str> {
        match self {
            Role::Control { of, .. } => Some(of),
            _ => None,
        }
    }
}

/// Records a step reads from one of the steps it needs: one of its `needs` must declare one of
/// `roles`. Declared by the step's kind ([`crate::engine::StepKind::requires`]) and checked when
/// the pipeline loads, at the step's `needs:`, so a missing upstream step is reported with its
/// place before anything runs rather than once the step plans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    /// The roles that meet it (any one of them).
    pub roles: &'static [Role],
    /// The steps that declare them, in the user's words: "a `mine-claims` step".
    pub step: &'static str,
    /// What the step reads from it: "the claims it labels".
    pub reads: &'static str,
}

impl Need {
    /// Whether a needed step of `role` meets the requirement.
    pub fn is_met_by(&self, role: &Role) -> bool {
        self.roles.contains(role)
    }
}
