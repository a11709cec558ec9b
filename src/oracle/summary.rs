//! `oracle_summary.json`: how many claims got each label, and why the discarded ones were
//! discarded, so a reader can judge the discard rate before trusting the labels; of the claims
//! without a verdict, why their run gave none (`unknown_causes`), since a step whose unknowns are
//! mostly timeouts says more about its time limit than about its tests.

use std::collections::BTreeMap;

use serde::Serialize;

use super::classify::UnknownReason;
use super::procedure::{Cause, Judgement};
use crate::records::{Label, Outcome};

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
    /// Claims without a verdict (`unknown_at_parent`, `unknown_at_child`) per why their first
    /// run without one gave none: `timeout`, `crash`, `collection_error`, `not_collected`,
    /// `exit_code`, `missing_record`, `skipped`, `other`.
    pub unknown_causes: BTreeMap<String, usize>,
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
        let mut unknown_causes = BTreeMap::new();
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
                if let Some(name) = unknown_cause(judgement) {
                    *unknown_causes.entry(name.to_string()).or_default() += 1;
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
            unknown_causes,
            import_errors,
            broken_commits,
        }
    }
}

impl OracleSummary {
    /// One line for the run's output: the labels, the discards by cause, and the claims without
    /// a verdict by why their run gave none (the counts of `oracle_summary.json`).
    pub fn labels_note(&self) -> String {
        let count = |label: &str| self.labels.get(label).copied().unwrap_or(0);
        let listed = |counts: &BTreeMap<String, usize>| {
            counts
                .iter()
                .map(|(name, count)| format!("{name} {count}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut note = format!(
            "{} at {}: {} flipped, {} held, {} discarded ({:.1}%",
            counted(self.claims, "claim"),
            counted(self.commits, "commit"),
            count("flipped"),
            count("held"),
            count("discarded"),
            100.0 * self.discard_rate
        );
        if !self.causes.is_empty() {
            note.push_str(&format!(": {}", listed(&self.causes)));
        }
        note.push(')');
        let unknown: usize = self.unknown_causes.values().sum();
        if unknown > 0 {
            note.push_str(&format!(
                "; {unknown} without a verdict, by cause: {}",
                listed(&self.unknown_causes)
            ));
        }
        note
    }

    /// A warning when most of the claims without a verdict timed out: their tests hung under
    /// the time limit (a run starved of CPU fails its item instead), which a reader should look
    /// at before trusting the discard rate.
    pub fn timeout_note(&self) -> Option<String> {
        let unknown: usize = self.unknown_causes.values().sum();
        let timeouts = self.unknown_causes.get("timeout").copied().unwrap_or(0);
        (timeouts > 0 && 2 * timeouts > unknown).then(|| {
            format!(
                "warning: {timeouts} of the {unknown} claims without a verdict timed out (their \
                 runs hung, they were not starved of CPU): look at those tests, or raise \
                 `timeout:` if they are merely slow"
            )
        })
    }
}

/// `1 claim`, `2 claims`.
fn counted(count: usize, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

/// Why a claim without a verdict has none: the reason of its first unknown run at the stage
/// that gave none (`missing_record` when that stage recorded too few runs).
fn unknown_cause(judgement: &Judgement) -> Option<&'static str> {
    let runs = match judgement.cause? {
        Cause::UnknownAtParent => &judgement.truth.parent_runs,
        Cause::UnknownAtChild => &judgement.truth.child_runs,
        _ => return None,
    };
    Some(
        runs.iter()
            .find(|run| run.outcome == Outcome::Unknown)
            .map_or("missing_record", |run| {
                UnknownReason::name_of_detail(run.detail.as_deref().unwrap_or_default())
            }),
    )
}

fn cause_name(cause: Cause) -> String {
    serde_json::to_value(cause)
        .ok()
        .and_then(|value| value.as_str().map(str::to_string))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{RunRecord, TruthRecord};

    fn unknown(claim: &str, cause: Cause, detail: &str) -> Judgement {
        let run = RunRecord {
            run: 0,
            outcome: Outcome::Unknown,
            detail: Some(detail.to_string()),
        };
        let (parent_runs, child_runs) = match cause {
            Cause::UnknownAtParent => (vec![run], Vec::new()),
            _ => (Vec::new(), vec![run]),
        };
        Judgement {
            truth: TruthRecord {
                claim: claim.to_string(),
                label: Label::Discarded,
                reason: Some(detail.to_string()),
                parent_runs,
                child_runs,
            },
            cause: Some(cause),
        }
    }

    #[test]
    fn unknowns_are_counted_by_why_their_run_gave_no_verdict() {
        let judgements = vec![
            unknown("a", Cause::UnknownAtParent, "timeout"),
            unknown("b", Cause::UnknownAtChild, "timeout"),
            unknown("c", Cause::UnknownAtChild, "crash: signal 9"),
        ];
        let summary = OracleSummary::new(3, &[("demo@c1".to_string(), judgements)]);
        assert_eq!(
            summary.unknown_causes,
            BTreeMap::from([("crash".to_string(), 1), ("timeout".to_string(), 2)])
        );
        let note = summary.timeout_note().expect("most unknowns are timeouts");
        assert!(note.contains("2 of the 3 claims"), "{note}");
        assert_eq!(
            summary.labels_note(),
            "3 claims at 1 commit: 0 flipped, 0 held, 3 discarded (100.0%: unknown_at_child 2, \
             unknown_at_parent 1); 3 without a verdict, by cause: crash 1, timeout 2"
        );
    }

    #[test]
    fn the_run_is_told_the_labels_even_when_every_claim_has_one() {
        let held = Judgement {
            truth: TruthRecord {
                claim: "a".to_string(),
                label: Label::Held,
                reason: None,
                parent_runs: Vec::new(),
                child_runs: Vec::new(),
            },
            cause: None,
        };
        let summary = OracleSummary::new(3, &[("demo@c1".to_string(), vec![held])]);
        assert_eq!(
            summary.labels_note(),
            "1 claim at 1 commit: 0 flipped, 1 held, 0 discarded (0.0%)"
        );
    }

    #[test]
    fn no_warning_when_timeouts_are_not_most_unknowns() {
        let judgements = vec![
            unknown("a", Cause::UnknownAtParent, "timeout"),
            unknown("b", Cause::UnknownAtChild, "collection error: ImportError"),
        ];
        let summary = OracleSummary::new(3, &[("demo@c1".to_string(), judgements)]);
        assert_eq!(summary.timeout_note(), None);
        assert_eq!(OracleSummary::new(3, &[]).timeout_note(), None);
    }
}
