//! What a scored step (an arm, a control of one) predicts, read from its output whatever kind
//! produced it: every consumer of verdicts (`stats`, the results browser, `check`) reads them
//! through [`predictions`] or [`scored`], never a kind's records or a results file.
//!
//! A kind whose items are verdicts (`arm`: one prediction per claim) is read from its items; a
//! kind whose items are something else (`llm-arm`: its calls, one per commit for A5) reduces them
//! into a [`Scored`] ([`crate::engine::StepKind::reduce`]), which is cached and keyed like an
//! item, so a reader's key holds exactly the verdicts it read.

use serde::{Deserialize, Serialize};

use crate::engine::{StepError, StepOutput};
use crate::models::Totals;
use crate::records::PredictionRecord;
use crate::stats::agreement::Agreement;

/// A scored step's verdicts as its kind reduced them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Scored {
    /// One prediction per claim, in the step's claim order (its first replicate's, with
    /// replicates).
    pub predictions: Vec<PredictionRecord>,
    /// The predictions of every further replicate (1, 2, …), each in the same claim order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicates: Vec<Vec<PredictionRecord>>,
    /// The pairwise agreement between the replicates, when there is more than one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agreement: Option<Agreement>,
    /// What the step's model calls used, for a kind that asks a model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Totals>,
}

/// The verdicts of the scored step `output`, with the agreement of its replicates when it has
/// some: its reduction when its kind reduces its items, else its items' records, every one of
/// which must be a prediction.
pub fn scored(output: &StepOutput) -> Result<Scored, StepError> {
    if let Some(reduced) = &output.reduced {
        return reduced.decode(&output.step);
    }
    let predictions =
        output
            .decode_all::<PredictionRecord>()
            .map_err(|error| StepError::NotPredictions {
                step: output.step.clone(),
                kind: output.kind.clone(),
                source: Box::new(error),
            })?;
    Ok(Scored {
        predictions,
        ..Scored::default()
    })
}

/// The per-claim predictions of the scored step `output`, whatever kind produced them: the one
/// way to read an arm's verdicts.
pub fn predictions(output: &StepOutput) -> Result<Vec<PredictionRecord>, StepError> {
    scored(output).map(|scored| scored.predictions)
}
