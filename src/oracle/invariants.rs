//! The invariants that broke silently while the paper's pipeline was built (its `repro_smoke`),
//! checked before anything is published: every claim carries its assertion text; every claim that
//! kept a label passed N of N at the parent; no partial post-change verdict is kept (a flipped claim
//! failed all N child runs, a held one passed all N); every claim has exactly one truth record.
//! (The diff invariant — no test files in the diffs shown to a model — belongs to mining.)

use std::collections::BTreeMap;

use super::procedure::{Cause, ImportErrorPolicy, Judgement};
use crate::records::{ClaimRecord, Label, Outcome, RunRecord};

/// Problems with the claims themselves, one message per broken claim.
pub fn check_claims(claims: &[ClaimRecord]) -> Vec<String> {
    claims
        .iter()
        .filter(|claim| {
            claim.assertions.is_empty()
                || claim
                    .assertions
                    .iter()
                    .any(|assertion| assertion.trim().is_empty())
        })
        .map(|claim| format!("claim `{}` carries no assertion text", claim.id))
        .collect()
}

/// Problems with the judgements of the claims with ids `claims`, one message per broken claim.
pub fn check_judgements(
    claims: &[String],
    judgements: &[Judgement],
    runs: u32,
    policy: ImportErrorPolicy,
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut by_claim: BTreeMap<&str, Vec<&Judgement>> = BTreeMap::new();
    for judgement in judgements {
        by_claim
            .entry(judgement.truth.claim.as_str())
            .or_default()
            .push(judgement);
    }
    for claim in claims {
        match by_claim.remove(claim.as_str()).as_deref() {
            None | Some([]) => problems.push(format!("claim `{claim}` has no truth record")),
            Some([judgement]) => problems.extend(check_one(judgement, runs, policy)),
            Some(_) => problems.push(format!("claim `{claim}` has several truth records")),
        }
    }
    for claim in by_claim.keys() {
        problems.push(format!("truth record for unknown claim `{claim}`"));
    }
    problems
}

fn check_one(judgement: &Judgement, runs: u32, policy: ImportErrorPolicy) -> Option<String> {
    let truth = &judgement.truth;
    let all = |records: &[RunRecord], outcome: Outcome| {
        records.len() == runs as usize && records.iter().all(|run| run.outcome == outcome)
    };
    let claim = &truth.claim;
    match truth.label {
        Label::Discarded => judgement
            .cause
            .is_none()
            .then(|| format!("claim `{claim}` is discarded without a cause")),
        Label::Flipped | Label::Held if !all(&truth.parent_runs, Outcome::Passed) => Some(format!(
            "claim `{claim}` is labelled without passing {runs} of {runs} runs at the parent"
        )),
        Label::Flipped
            if judgement.cause == Some(Cause::ImportError) && policy == ImportErrorPolicy::Flip =>
        {
            None
        }
        Label::Flipped if !all(&truth.child_runs, Outcome::Failed) => Some(format!(
            "claim `{claim}` is flipped without failing {runs} of {runs} runs at the child"
        )),
        Label::Held if !all(&truth.child_runs, Outcome::Passed) => Some(format!(
            "claim `{claim}` is held without passing {runs} of {runs} runs at the child"
        )),
        Label::Flipped | Label::Held => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::TruthRecord;

    fn claim(id: &str, assertions: &[&str]) -> ClaimRecord {
        ClaimRecord {
            id: id.into(),
            repo: "demo".into(),
            parent: "p".into(),
            commit: "c".into(),
            node: "tests/test_a.py::test_a".into(),
            source: "def test_a(): assert f() == 1".into(),
            assertions: assertions.iter().map(|text| text.to_string()).collect(),
            fixtures: Vec::new(),
        }
    }

    fn runs(outcomes: &[Outcome]) -> Vec<RunRecord> {
        outcomes
            .iter()
            .zip(0..)
            .map(|(outcome, run)| RunRecord {
                run,
                outcome: *outcome,
                detail: None,
            })
            .collect()
    }

    fn judgement(label: Label, parent: &[Outcome], child: &[Outcome]) -> Judgement {
        Judgement {
            truth: TruthRecord {
                claim: "a".into(),
                label,
                reason: None,
                parent_runs: runs(parent),
                child_runs: runs(child),
            },
            cause: None,
        }
    }

    use Outcome::{Failed, Passed, Unknown};

    #[test]
    fn a_claim_without_assertion_text_is_reported() {
        let problems = check_claims(&[claim("a", &["assert f() == 1"]), claim("b", &[])]);
        assert_eq!(problems, vec!["claim `b` carries no assertion text"]);
    }

    #[test]
    fn a_partial_child_verdict_is_never_kept() {
        let claims = ["a".to_string()];
        let partial = judgement(Label::Flipped, &[Passed; 3], &[Failed, Failed, Unknown]);
        let problems = check_judgements(&claims, &[partial], 3, ImportErrorPolicy::Discard);
        assert_eq!(
            problems,
            vec!["claim `a` is flipped without failing 3 of 3 runs at the child"]
        );
    }

    #[test]
    fn a_labelled_claim_passed_every_parent_run() {
        let claims = ["a".to_string()];
        let held = judgement(Label::Held, &[Passed, Failed, Passed], &[Passed; 3]);
        assert_eq!(
            check_judgements(&claims, &[held], 3, ImportErrorPolicy::Discard),
            vec!["claim `a` is labelled without passing 3 of 3 runs at the parent"]
        );
        let good = judgement(Label::Held, &[Passed; 3], &[Passed; 3]);
        assert!(check_judgements(&claims, &[good], 3, ImportErrorPolicy::Discard).is_empty());
    }

    #[test]
    fn every_claim_has_exactly_one_truth_record() {
        let claims = ["a".to_string(), "b".to_string()];
        let good = judgement(Label::Held, &[Passed; 3], &[Passed; 3]);
        assert_eq!(
            check_judgements(&claims, &[good], 3, ImportErrorPolicy::Discard),
            vec!["claim `b` has no truth record"]
        );
    }
}
