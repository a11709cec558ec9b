//! `--format sarif`: SARIF 2.1.0 for code-scanning uploads. One rule per stage of the cascade
//! (`claimflow/exec`, `claimflow/a4`, `claimflow/a6_risk`), one result per flipped claim at its
//! memory file's line, the claim's id as its fingerprint so an upload tracks it across runs.

use serde_json::{Value, json};

use super::claim::{CheckResult, Stage, Verdict};
use super::report::{location, stage_name};

/// What each stage's rule says.
fn rule_text(stage: &Stage) -> String {
    match stage {
        Stage::Exec => "the claim's own test or check command failed at the range's end".to_string(),
        Stage::A4 => "symbol anchoring clears claims whose anchors the range did not touch; it never flips one".to_string(),
        Stage::Model(question) => format!("the model arm `{question}` judged the claim false after the diff"),
    }
}

/// The SARIF log of a check over `stages`.
pub fn log(results: &[CheckResult], stages: &[Stage], range: &str) -> Value {
    let rules: Vec<Value> = stages
        .iter()
        .map(|stage| {
            json!({
                "id": format!("claimflow/{stage}"),
                "name": format!("claim-falsified-{stage}"),
                "shortDescription": {"text": format!("A memory claim was falsified ({stage})")},
                "fullDescription": {"text": rule_text(stage)},
                "defaultConfiguration": {"level": "warning"},
            })
        })
        .collect();
    let findings: Vec<Value> = results
        .iter()
        .filter(|result| result.verdict == Verdict::Flipped)
        .map(|result| {
            let (file, line) = location(result);
            let stage = stage_name(result.decided_by.as_ref());
            json!({
                "ruleId": format!("claimflow/{stage}"),
                "level": "warning",
                "message": {"text": format!(
                    "{} — falsified by {range} (decided by {stage}: {})",
                    result.text.trim(),
                    result.evidence
                )},
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": {"uri": file, "uriBaseId": "%SRCROOT%"},
                        "region": {"startLine": line},
                    }
                }],
                "partialFingerprints": {"claimflowClaimId/v1": result.id},
            })
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "claimflow",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "results": findings,
        }],
    })
}
