//! `oracle_summary.json`: how many claims got each label, and why the discarded ones were
//! discarded, so a reader can judge the discard rate before trusting the labels.

use std::collections::BTreeMap;

use serde::Serialize;

use super::procedure::{Cause, Judgement};
use crate::records::Label;

/// The oracle step's summary of all its judgements.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OracleSummary {
    /// N, the runs per stage.
    pub runs: u32,
    pub commits: usize,
    pub claims: usize,
    /// Claims per label (`flipped`, `held`, `discarded`).
    pub labels: BTreeMap<String, usize>,
    /// Discarded claims over all claims (0 when there are none).
    pub discard_rate: f64,
    /// Claims per cause (discarded ones, and import errors counted as flipped).
    pub causes: BTreeMap<String, usize>,
    /// Claims whose restored test file failed to import at the child, whatever their label.
    pub import_errors: usize,
    /// Commits excluded because the child fails its own tests.
    pub broken_commits: Vec<String>,
}

impl OracleSummary {
    /// Summarizes the judgements of `commits` (item ids, in order).
    pub fn new(runs: u32, commits: &[(String, Vec<Judgement>)]) -> Self {
        let mut labels: BTreeMap<String, usize> = ["flipped", "held", "discarded"]
            .into_iter()
            .map(|label| (label.to_string(), 0))
            .collect();
        let mut causes = BTreeMap::new();
        let mut broken_commits = Vec::new();
        let mut claims = 0;
        let mut import_errors = 0;
        let mut discarded = 0;
        for (commit, judgements) in commits {
            let mut broken = false;
            for judgement in judgements {
                claims += 1;
                let label = match judgement.truth.label {
                    Label::Flipped => "flipped",
                    Label::Held => "held",
                    Label::Discarded => {
                        discarded += 1;
                        "discarded"
                    }
                };
                *labels.entry(label.to_string()).or_default() += 1;
                if let Some(cause) = judgement.cause {
                    *causes.entry(cause_name(cause)).or_default() += 1;
                    import_errors += usize::from(cause == Cause::ImportError);
                    broken |= cause == Cause::BrokenChild;
                }
            }
            if broken {
                broken_commits.push(commit.clone());
            }
        }
        OracleSummary {
            runs,
            commits: commits.len(),
            claims,
            labels,
            discard_rate: if claims == 0 {
                0.0
            } else {
                discarded as f64 / claims as f64
            },
            causes,
            import_errors,
            broken_commits,
        }
    }
}

fn cause_name(cause: Cause) -> String {
    serde_json::to_value(cause)
        .ok()
        .and_then(|value| value.as_str().map(str::to_string))
        .unwrap_or_default()
}
