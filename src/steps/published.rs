//! What a scored step published in this run, read back for `stats`: the predictions of a step
//! whose items are not verdicts themselves (a model arm's items are its calls, one per commit for
//! A5; the verdicts it derived from them, claim by claim, are its `predictions/<step>.jsonl`), and
//! the agreement between its replicates (`calls/<step>.json`), when it records one.

use crate::engine::{StepContext, StepError};
use crate::records::PredictionRecord;

/// The predictions step `step` published in this run (`predictions/<step>.jsonl`): for a step
/// whose items are calls, which claims a call answers is its plan's, not its output's.
pub fn predictions(ctx: &StepContext, step: &str) -> Result<Vec<PredictionRecord>, StepError> {
    let path = ctx
        .results
        .join("predictions")
        .join(format!("{step}.jsonl"));
    let text = std::fs::read_to_string(&path).map_err(|source| StepError::Io {
        context: format!("read the predictions of step `{step}` ({})", path.display()),
        source,
    })?;
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            serde_json::from_str(line)
                .map_err(|error| StepError::Message(format!("{}: {error}", path.display())))
        })
        .collect()
}

/// The agreement between the replicates step `step` published in this run (its
/// `calls/<step>.json`), when it asked for more than one.
pub fn agreement(ctx: &StepContext, step: &str) -> Option<crate::stats::agreement::Agreement> {
    let path = ctx.results.join("calls").join(format!("{step}.json"));
    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    serde_json::from_value(summary.get("replicate_agreement")?.clone()).ok()
}
