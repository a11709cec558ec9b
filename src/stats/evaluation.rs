//! The evaluation set: the labelled claims of one split, aligned with every arm's verdicts.
//!
//! Only claims labelled `flipped` or `held` are scored; `discarded` ones are excluded and counted.
//! A labelled claim an arm has no prediction for is that arm's `none`, never a verdict.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::records::{ClaimRecord, Label, PredictionRecord, TruthRecord, Verdict};

/// One labelled claim.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Claim {
    pub id: String,
    /// The `repos:` entry it was mined from.
    pub repository: String,
    /// `<repo>@<parent>`: the commit whose diff every claim of it shares.
    pub commit: String,
    pub flipped: bool,
}

/// What the pipeline says about an arm step: its kind, model and what it wraps.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ArmInfo {
    /// The step kind (`uses:`).
    pub kind: String,
    /// The `models:` entry it calls, if any (`with: {model: …}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Dollars per million input tokens of that model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_input: Option<f64>,
    /// Dollars per million output tokens of that model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_output: Option<f64>,
    /// The arm a control wraps (`with: {arm: …}`); a control is reported beside its arm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_of: Option<String>,
    /// What the `models:` entry resolved to for the run (`llama-server SmolLM2-…`): an entry
    /// whose key was not set is its fallback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_id: Option<String>,
    /// The sample (or split) the arm judged when it needs one: only those claims have its verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged_selection: Option<JudgedSelection>,
    /// Pairwise agreement between the arm's replicates (`replicates: k`, k > 1): run-to-run
    /// variance, the yardstick for every other agreement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicates: Option<crate::stats::agreement::Agreement>,
    /// The manipulation a control runs under, as the step it needs declares it
    /// (`shuffled-diff`, `paraphrase`); `None` for a control that wraps its arm directly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<String>,
    /// The paper's id of the strategy the arm declares (`a4`, `a6_risk`); tables pick arms by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
}

/// The selection step an arm judged, and how many claims it judged there.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JudgedSelection {
    pub step: String,
    pub claims: usize,
}

/// Token and cost totals of one arm's predictions over the evaluated claims.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spend {
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// Sum of the recorded `cost` fields.
    pub cost: f64,
    /// Predictions that recorded a cost.
    pub priced: u64,
    /// Predictions that recorded tokens.
    pub metered: u64,
}

/// The labelled claims and every arm's verdict on each, in claim-id order.
#[derive(Debug, Clone, Default)]
pub struct Evaluation {
    pub claims: Vec<Claim>,
    /// Claims of the split the oracle discarded (flaky or without a verdict).
    pub discarded: u64,
    /// Per arm step, one verdict per claim, aligned with `claims`.
    pub verdicts: BTreeMap<String, Vec<Verdict>>,
    pub info: BTreeMap<String, ArmInfo>,
    pub spend: BTreeMap<String, Spend>,
    /// Per arm, predictions for claims outside the evaluation set (other splits, discarded).
    pub unmatched: BTreeMap<String, u64>,
}

/// Why the evaluation set could not be built.
#[derive(Debug, thiserror::Error)]
pub enum EvaluationError {
    /// The oracle labelled one claim twice.
    #[error("claim `{0}` has two oracle labels")]
    DuplicateLabel(String),
    /// An arm predicted one claim twice.
    #[error("arm `{arm}` has two predictions for claim `{claim}`")]
    DuplicatePrediction { arm: String, claim: String },
    /// A claim id is not `<repo>@<parent>::<node>` and no claim record names its repository.
    #[error("claim id `{0}` is not of the form <repo>@<parent>::<node>")]
    BadClaimId(String),
}

/// Where a claim comes from: its repository and parent commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub repository: String,
    pub parent: String,
}

/// Reads `<repo>@<parent>::<node>` (see [`crate::records::claim_id`]).
pub fn parse_claim_id(id: &str) -> Option<Origin> {
    let (head, _node) = id.split_once("::")?;
    let (repository, parent) = head.rsplit_once('@')?;
    (!repository.is_empty() && !parent.is_empty()).then(|| Origin {
        repository: repository.to_string(),
        parent: parent.to_string(),
    })
}

/// Maps claim ids to their origin, preferring claim records over parsing the id.
#[derive(Debug, Clone, Default)]
pub struct Origins {
    known: BTreeMap<String, Origin>,
}

impl Origins {
    pub fn from_claims(claims: &[ClaimRecord]) -> Self {
        let known = claims
            .iter()
            .map(|claim| {
                let origin = Origin {
                    repository: claim.repo.clone(),
                    parent: claim.parent.clone(),
                };
                (claim.id.clone(), origin)
            })
            .collect();
        Origins { known }
    }

    pub fn of(&self, id: &str) -> Result<Origin, EvaluationError> {
        match self.known.get(id) {
            Some(origin) => Ok(origin.clone()),
            None => parse_claim_id(id).ok_or_else(|| EvaluationError::BadClaimId(id.to_string())),
        }
    }
}

/// One arm's input: what the pipeline says about it and its predictions.
#[derive(Debug, Clone)]
pub struct ArmInput {
    pub info: ArmInfo,
    pub predictions: Vec<PredictionRecord>,
}

impl Evaluation {
    /// Aligns `truth` with each arm's predictions. When `repositories` is given, only claims of
    /// those repositories (one split) are kept.
    pub fn build(
        truth: &[TruthRecord],
        origins: &Origins,
        arms: &BTreeMap<String, ArmInput>,
        repositories: Option<&BTreeSet<String>>,
    ) -> Result<Self, EvaluationError> {
        let mut labelled = BTreeMap::new();
        let mut discarded = 0;
        for record in truth {
            let origin = origins.of(&record.claim)?;
            if repositories.is_some_and(|keep| !keep.contains(&origin.repository)) {
                continue;
            }
            let flipped = match record.label {
                Label::Flipped => true,
                Label::Held => false,
                Label::Discarded => {
                    discarded += 1;
                    continue;
                }
            };
            let claim = Claim {
                id: record.claim.clone(),
                commit: format!("{}@{}", origin.repository, origin.parent),
                repository: origin.repository,
                flipped,
            };
            if labelled.insert(record.claim.clone(), claim).is_some() {
                return Err(EvaluationError::DuplicateLabel(record.claim.clone()));
            }
        }
        let claims: Vec<Claim> = labelled.into_values().collect();
        let position: BTreeMap<&str, usize> = claims
            .iter()
            .enumerate()
            .map(|(index, claim)| (claim.id.as_str(), index))
            .collect();

        let mut evaluation = Evaluation {
            discarded,
            ..Evaluation::default()
        };
        for (arm, input) in arms {
            let mut verdicts = vec![Verdict::None; claims.len()];
            let mut seen = vec![false; claims.len()];
            let mut spend = Spend::default();
            let mut unmatched = 0;
            for prediction in &input.predictions {
                let Some(&index) = position.get(prediction.claim.as_str()) else {
                    unmatched += 1;
                    continue;
                };
                if std::mem::replace(&mut seen[index], true) {
                    return Err(EvaluationError::DuplicatePrediction {
                        arm: arm.clone(),
                        claim: prediction.claim.clone(),
                    });
                }
                verdicts[index] = prediction.verdict;
                if prediction.tokens_in.is_some() || prediction.tokens_out.is_some() {
                    spend.metered += 1;
                    spend.tokens_in += prediction.tokens_in.unwrap_or(0);
                    spend.tokens_out += prediction.tokens_out.unwrap_or(0);
                }
                if let Some(cost) = prediction.cost {
                    spend.priced += 1;
                    spend.cost += cost;
                }
            }
            evaluation.verdicts.insert(arm.clone(), verdicts);
            evaluation.info.insert(arm.clone(), input.info.clone());
            evaluation.spend.insert(arm.clone(), spend);
            evaluation.unmatched.insert(arm.clone(), unmatched);
        }
        evaluation.claims = claims;
        Ok(evaluation)
    }

    /// Labels aligned with `claims`.
    pub fn labels(&self) -> Vec<bool> {
        self.claims.iter().map(|claim| claim.flipped).collect()
    }

    /// The arms that are not controls, in name order.
    pub fn arms(&self) -> impl Iterator<Item = &str> {
        self.info
            .iter()
            .filter(|(_, info)| info.control_of.is_none())
            .map(|(name, _)| name.as_str())
    }

    /// The controls, in name order.
    pub fn controls(&self) -> impl Iterator<Item = (&str, &str)> {
        self.info
            .iter()
            .filter_map(|(name, info)| info.control_of.as_deref().map(|arm| (name.as_str(), arm)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::claim_id;

    fn truth(claim: &str, label: Label) -> TruthRecord {
        TruthRecord {
            claim: claim.to_string(),
            label,
            reason: None,
            parent_runs: vec![],
            child_runs: vec![],
        }
    }

    fn prediction(claim: &str, verdict: Verdict) -> PredictionRecord {
        PredictionRecord {
            claim: claim.to_string(),
            verdict,
            evidence: serde_json::Value::Null,
            tokens_in: None,
            tokens_out: None,
            cost: Some(0.5),
        }
    }

    #[test]
    fn parses_claim_ids_whose_node_has_colons() {
        let id = claim_id("attrs", "abc123", "tests/test_x.py::TestA::test_b[1]");
        assert_eq!(
            parse_claim_id(&id),
            Some(Origin {
                repository: "attrs".into(),
                parent: "abc123".into()
            })
        );
        assert_eq!(parse_claim_id("no-separator"), None);
    }

    #[test]
    fn discarded_claims_are_counted_and_missing_predictions_are_none() {
        let a = claim_id("r", "p1", "t.py::a");
        let b = claim_id("r", "p1", "t.py::b");
        let c = claim_id("s", "p2", "t.py::c");
        let records = [
            truth(&a, Label::Flipped),
            truth(&b, Label::Held),
            truth(&c, Label::Discarded),
        ];
        let arms = BTreeMap::from([(
            "a0".to_string(),
            ArmInput {
                info: ArmInfo::default(),
                predictions: vec![
                    prediction(&a, Verdict::Flipped),
                    prediction(&c, Verdict::Held),
                ],
            },
        )]);
        let evaluation = Evaluation::build(&records, &Origins::default(), &arms, None).unwrap();
        assert_eq!(evaluation.claims.len(), 2);
        assert_eq!(evaluation.discarded, 1);
        assert_eq!(
            evaluation.verdicts["a0"],
            vec![Verdict::Flipped, Verdict::None]
        );
        assert_eq!(evaluation.unmatched["a0"], 1);
        assert_eq!(evaluation.spend["a0"].priced, 1);
        assert_eq!(evaluation.claims[0].commit, "r@p1");
    }

    #[test]
    fn a_split_keeps_only_its_repositories() {
        let a = claim_id("r", "p1", "t.py::a");
        let c = claim_id("s", "p2", "t.py::c");
        let records = [truth(&a, Label::Flipped), truth(&c, Label::Discarded)];
        let keep = BTreeSet::from(["r".to_string()]);
        let evaluation =
            Evaluation::build(&records, &Origins::default(), &BTreeMap::new(), Some(&keep))
                .unwrap();
        assert_eq!(evaluation.claims.len(), 1);
        assert_eq!(evaluation.discarded, 0);
    }

    #[test]
    fn a_duplicate_prediction_names_the_arm_and_claim() {
        let a = claim_id("r", "p1", "t.py::a");
        let arms = BTreeMap::from([(
            "a3".to_string(),
            ArmInput {
                info: ArmInfo::default(),
                predictions: vec![prediction(&a, Verdict::Held), prediction(&a, Verdict::Held)],
            },
        )]);
        let error = Evaluation::build(&[truth(&a, Label::Held)], &Origins::default(), &arms, None)
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("arm `a3` has two predictions for claim `{a}`")
        );
    }
}
