//! The cascade: each claim goes through the stages in order, cheapest first, and the first stage
//! that decides it gives its verdict. A stage that cannot decide a claim passes it on with the
//! reason, and a claim no stage decided gets the verdict `none`, never a guess: the reasons every
//! stage gave become its evidence.
//!
//! The default order is `exec,a4,a6_risk`: execution first (a claim's own test or check command
//! is the truth), then symbol anchoring (a claim whose anchors the range did not touch is held,
//! with no call), then a model arm for what is left.

use super::claim::{CheckResult, MemoryClaim, Stage, Verdict};
use super::error::CheckError;

/// The stages run when `--cascade` is not given.
pub const DEFAULT_CASCADE: &str = "exec,a4,a6_risk";

/// What a stage says of one claim.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// `Flipped` or `Held` when the stage decided; `None` when it passes the claim on.
    pub verdict: Verdict,
    /// Why (the test's outcome, the touched anchors, the model's answer), or why it passed on.
    pub evidence: String,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub cost: f64,
}

impl Decision {
    /// The stage decided `verdict` (flipped or held).
    pub fn decided(verdict: Verdict, evidence: impl Into<String>) -> Self {
        Decision {
            verdict,
            evidence: evidence.into(),
            tokens_in: 0,
            tokens_out: 0,
            cost: 0.0,
        }
    }

    /// The stage could not decide: the claim goes on to the next one.
    pub fn pass_on(why: impl Into<String>) -> Self {
        Decision::decided(Verdict::None, why)
    }

    /// The same decision, charged a model call's usage.
    pub fn with_usage(mut self, tokens_in: u64, tokens_out: u64, cost: f64) -> Self {
        self.tokens_in = tokens_in;
        self.tokens_out = tokens_out;
        self.cost = cost;
        self
    }
}

/// Parses `--cascade` (`exec,a4,a6_risk`) or `--arm` (one stage): `exec`, `a4`, or one model
/// question (`a5`, `a5c`, `a6_base`, `a6_risk`); each at most once, one model stage at most.
pub fn parse_stages(list: &str) -> Result<Vec<Stage>, CheckError> {
    let mut stages = Vec::new();
    for name in list.split(',').map(str::trim) {
        let stage = Stage::try_from(name.to_string()).map_err(|problem| {
            CheckError::Input(format!(
                "--cascade {list}: {problem}; name stages like exec,a4,a6_risk"
            ))
        })?;
        if let Stage::Model(question) = &stage
            && crate::models::Question::parse(question).is_none()
        {
            return Err(CheckError::Input(format!(
                "--cascade {list}: unknown stage `{question}`; the stages are exec, a4 and a model \
                 question ({})",
                crate::models::Question::names().join(", ")
            )));
        }
        if stages.contains(&stage) {
            return Err(CheckError::Input(format!(
                "--cascade {list}: `{stage}` is named twice"
            )));
        }
        if matches!(stage, Stage::Model(_)) && stages.iter().any(|s| matches!(s, Stage::Model(_))) {
            return Err(CheckError::Input(format!(
                "--cascade {list}: one model stage at most"
            )));
        }
        stages.push(stage);
    }
    Ok(stages)
}

/// Decides a batch of claims at one stage: one decision per claim, in order.
pub trait StageRunner {
    fn decide(
        &mut self,
        stage: &Stage,
        claims: &[&MemoryClaim],
    ) -> Result<Vec<Decision>, CheckError>;
}

/// Runs `claims` through `stages` with `runner`; one result per claim, in order.
pub fn run(
    stages: &[Stage],
    claims: &[MemoryClaim],
    runner: &mut dyn StageRunner,
) -> Result<Vec<CheckResult>, CheckError> {
    let mut results: Vec<CheckResult> = claims
        .iter()
        .map(|claim| CheckResult {
            id: claim.id.clone(),
            source: claim.source.to_string(),
            text: claim.text.clone(),
            verdict: Verdict::None,
            decided_by: None,
            evidence: String::new(),
            tokens_in: 0,
            tokens_out: 0,
            cost: 0.0,
        })
        .collect();
    let mut passed_on: Vec<Vec<String>> = vec![Vec::new(); claims.len()];
    for stage in stages {
        let open: Vec<usize> = (0..claims.len())
            .filter(|&index| results[index].decided_by.is_none())
            .collect();
        if open.is_empty() {
            break;
        }
        let asked: Vec<&MemoryClaim> = open.iter().map(|&index| &claims[index]).collect();
        let decisions = runner.decide(stage, &asked)?;
        if decisions.len() != asked.len() {
            return Err(CheckError::failed(
                format!("stage {stage}"),
                format!("{} decisions for {} claims", decisions.len(), asked.len()),
            ));
        }
        for (index, decision) in open.into_iter().zip(decisions) {
            let result = &mut results[index];
            result.tokens_in += decision.tokens_in;
            result.tokens_out += decision.tokens_out;
            result.cost += decision.cost;
            if decision.verdict == Verdict::None {
                passed_on[index].push(format!("{stage}: {}", decision.evidence));
            } else {
                result.verdict = decision.verdict;
                result.decided_by = Some(stage.clone());
                result.evidence = decision.evidence;
            }
        }
    }
    for (result, reasons) in results.iter_mut().zip(passed_on) {
        if result.decided_by.is_none() {
            result.evidence = if reasons.is_empty() {
                "no stage was run".to_string()
            } else {
                reasons.join("; ")
            };
        }
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::claim::{SourceFormat, SourceSpan};

    fn claim(id: &str) -> MemoryClaim {
        MemoryClaim {
            id: id.into(),
            text: format!("claim {id}"),
            source: SourceSpan {
                file: "claims.jsonl".into(),
                line: 1,
            },
            format: SourceFormat::Jsonl,
            anchors: Vec::new(),
            test: None,
            check: None,
            record_key: None,
            origin: None,
        }
    }

    /// Decides by a table of (stage, claim) → verdict; everything else passes on.
    struct Table(
        Vec<(&'static str, &'static str, Verdict)>,
        Vec<(String, usize)>,
    );

    impl StageRunner for Table {
        fn decide(
            &mut self,
            stage: &Stage,
            claims: &[&MemoryClaim],
        ) -> Result<Vec<Decision>, CheckError> {
            self.1.push((stage.to_string(), claims.len()));
            Ok(claims
                .iter()
                .map(|claim| {
                    self.0
                        .iter()
                        .find(|(s, id, _)| *s == stage.name() && *id == claim.id)
                        .map_or_else(
                            || Decision::pass_on("cannot tell"),
                            |(_, _, verdict)| Decision::decided(*verdict, "told"),
                        )
                })
                .collect())
        }
    }

    #[test]
    fn the_first_stage_that_decides_wins_and_later_stages_see_only_the_rest() {
        let stages = parse_stages("exec,a4,a6_risk").unwrap();
        let claims = [claim("x"), claim("y"), claim("z")];
        let mut runner = Table(
            vec![
                ("exec", "x", Verdict::Flipped),
                ("a4", "y", Verdict::Held),
                ("a4", "x", Verdict::Held),
            ],
            Vec::new(),
        );
        let results = run(&stages, &claims, &mut runner).unwrap();
        assert_eq!(results[0].verdict, Verdict::Flipped);
        assert_eq!(results[0].decided_by, Some(Stage::Exec));
        assert_eq!(results[1].decided_by, Some(Stage::A4));
        assert_eq!(results[2].verdict, Verdict::None);
        assert_eq!(results[2].decided_by, None);
        assert_eq!(
            results[2].evidence,
            "exec: cannot tell; a4: cannot tell; a6_risk: cannot tell"
        );
        assert_eq!(
            runner.1,
            vec![("exec".into(), 3), ("a4".into(), 2), ("a6_risk".into(), 1)]
        );
    }

    #[test]
    fn stage_lists_are_checked() {
        assert!(
            parse_stages("exec,a9")
                .unwrap_err()
                .to_string()
                .contains("unknown stage `a9`")
        );
        assert!(
            parse_stages("a4,a4")
                .unwrap_err()
                .to_string()
                .contains("twice")
        );
        assert!(
            parse_stages("a6_risk,a5")
                .unwrap_err()
                .to_string()
                .contains("one model stage")
        );
        assert!(parse_stages("exec,,a4").is_err());
        assert_eq!(
            parse_stages("a6_base").unwrap(),
            vec![Stage::Model("a6_base".into())]
        );
    }

    #[test]
    fn a_stage_name_round_trips_through_json_as_a_string() {
        let json = serde_json::to_string(&Some(Stage::Model("a6_risk".into()))).unwrap();
        assert_eq!(json, "\"a6_risk\"");
        let stage: Stage = serde_json::from_str("\"a4\"").unwrap();
        assert_eq!(stage, Stage::A4);
    }
}
