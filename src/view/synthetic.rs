//! A made-up results set of any size, for the page's bench and tests: claims over a few
//! repositories and commits, labels with their runs, and ten arms (the baselines, testmon and the
//! model arms with answers, tokens and cost), shaped like a real run's outputs so the page is
//! measured on what it will hold. Seeded: the same size and seed give the same inputs.

use std::collections::BTreeMap;

use serde_json::json;

use super::model::{ArmView, DiffKey, Inputs, Provenance};
use crate::mining::DEFAULT_DIFF_LIMIT;
use crate::records::{
    ClaimRecord, CommitRecord, Label, Outcome, PredictionRecord, RunRecord, TruthRecord, Verdict,
};

/// The shipped arms' steps: (step, strategy, asks a model).
const ARMS: [(&str, &str, bool); 10] = [
    ("a0", "a0", false),
    ("a1", "a1", false),
    ("a3", "a3", false),
    ("a4", "a4", false),
    ("a4b", "a4b", false),
    ("a5", "a5", true),
    ("a5c", "a5c", true),
    ("a6_base", "a6_base", true),
    ("a6_risk", "a6_risk", true),
    ("prose", "prose", true),
];

const REASONS: [&str; 4] = [
    "flaky",
    "unknown: collection error",
    "unknown: timeout",
    "child broken",
];

fn hex(random: &mut fastrand::Rng) -> String {
    (0..40)
        .map(|_| char::from_digit(random.u32(0..16), 16).expect("a hex digit"))
        .collect()
}

fn diff_text(random: &mut fastrand::Rng, commit: usize) -> String {
    let mut text = String::new();
    let files = random.usize(1..4);
    for file in 0..files {
        let path = format!("src/pkg/module_{commit}_{file}.py");
        text.push_str(&format!(
            "diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n--- a/{path}\n+++ b/{path}\n"
        ));
        for hunk in 0..random.usize(1..5) {
            text.push_str(&format!(
                "@@ -{0},7 +{0},8 @@ def helper_{hunk}(value):\n",
                10 + hunk * 40
            ));
            for line in 0..random.usize(6..40) {
                let mark = [' ', ' ', '+', '-'][random.usize(0..4)];
                text.push_str(&format!(
                    "{mark}    result_{line} = compute_{hunk}(value, limit={line}) + offset\n"
                ));
            }
        }
    }
    let total = text.chars().count();
    if total > DEFAULT_DIFF_LIMIT {
        let mut cut: String = text.chars().take(DEFAULT_DIFF_LIMIT).collect();
        if !cut.ends_with('\n') {
            cut.push('\n');
        }
        cut.push_str(&format!(
            "[diff truncated: {DEFAULT_DIFF_LIMIT} of {total} characters shown]\n"
        ));
        return cut;
    }
    text
}

fn runs(outcome: Outcome, detail: Option<&str>) -> Vec<RunRecord> {
    (0..10)
        .map(|run| RunRecord {
            run,
            outcome,
            detail: detail.map(str::to_string),
        })
        .collect()
}

fn claim(random: &mut fastrand::Rng, commit: &CommitRecord, index: usize) -> ClaimRecord {
    let node = format!("tests/test_module_{}.py::test_case_{index}", index % 97);
    let assertions = vec![
        format!("assert compute(value_{index}) == {}", index % 13),
        "assert result.is_valid()".to_string(),
    ];
    let mut source =
        format!("def test_case_{index}(fixture):\n    value_{index} = build({index})\n");
    for line in 0..random.usize(4..14) {
        source.push_str(&format!(
            "    step_{line} = fixture.call({line}, value_{index})\n"
        ));
    }
    source.push_str(&format!(
        "    {}\n    result = make(step_0)\n    {}\n",
        assertions[0], assertions[1]
    ));
    ClaimRecord {
        id: crate::records::claim_id(&commit.repo, &commit.parent, &node),
        repo: commit.repo.clone(),
        parent: commit.parent.clone(),
        commit: commit.commit.clone(),
        node,
        source,
        assertions,
        fixtures: vec!["fixture".to_string()],
    }
}

fn truth(random: &mut fastrand::Rng, claim: &ClaimRecord) -> TruthRecord {
    let roll = random.u32(0..100);
    let (label, reason, child) = if roll < 20 {
        (
            Label::Flipped,
            Some("AssertionError"),
            runs(Outcome::Failed, Some("AssertionError")),
        )
    } else if roll < 80 {
        (Label::Held, None, runs(Outcome::Passed, None))
    } else {
        let reason = REASONS[random.usize(0..REASONS.len())];
        (
            Label::Discarded,
            Some(reason),
            runs(Outcome::Unknown, Some(reason)),
        )
    };
    TruthRecord {
        claim: claim.id.clone(),
        label,
        reason: reason.map(str::to_string),
        parent_runs: runs(Outcome::Passed, None),
        child_runs: child,
    }
}

fn prediction(
    random: &mut fastrand::Rng,
    claim: &str,
    step: &str,
    model: bool,
) -> PredictionRecord {
    let verdict = match random.u32(0..20) {
        _ if step == "a0" => Verdict::Flipped,
        _ if step == "a1" => Verdict::Held,
        0 if model => Verdict::None,
        roll if roll < 7 => Verdict::Flipped,
        _ => Verdict::Held,
    };
    let (evidence, tokens_in, tokens_out, cost) = if model {
        // Every answer its own, as a model's are: evidence is not shared between claims.
        let answer = format!(
            "The change rewrites helper_{} that {} calls; the assertion on its return value {} \
             because the new code path returns a different value for the inputs the test builds \
             (limit {}). VERDICT: {}",
            random.u32(0..1000),
            claim.rsplit("::").next().unwrap_or(claim),
            if verdict == Verdict::Flipped {
                "no longer holds"
            } else {
                "still holds"
            },
            random.u32(0..100_000),
            if verdict == Verdict::Flipped {
                "FLIPPED"
            } else {
                "HELD"
            }
        );
        let evidence = json!({"question": step, "model": "synthetic-model", "answer": answer,
                               "problem": null, "stop": "stop", "shared_call": false});
        let (tokens_in, tokens_out) = (random.u64(800..4000), random.u64(20..200));
        let cost = (tokens_in as f64 * 0.4 + tokens_out as f64 * 1.6) / 1e6;
        (evidence, Some(tokens_in), Some(tokens_out), Some(cost))
    } else {
        let evidence = match step {
            "a4" => {
                json!({"changed": ["pkg.module.compute"], "referenced": ["pkg.module.compute", "pkg.module.make"], "via_fixture": []})
            }
            "a4b" => {
                json!({"tracked": true, "selected": verdict == Verdict::Flipped, "selected_tests": 3, "tracked_tests": 40})
            }
            "a3" => json!({"touched": ["src/pkg/module.py"], "imported": ["pkg.module"]}),
            _ => json!({"constant": step}),
        };
        (evidence, None, None, None)
    };
    PredictionRecord {
        claim: claim.to_string(),
        verdict,
        evidence,
        tokens_in,
        tokens_out,
        cost,
    }
}

/// A results set of `claims` claims (about six a commit, over eight repositories) judged by
/// `arms` arms (at most ten).
pub fn inputs(claims: usize, arms: usize, seed: u64) -> Inputs {
    let mut random = fastrand::Rng::with_seed(seed);
    let repositories: BTreeMap<String, Option<String>> = (0..8)
        .map(|index| {
            let split = if index < 5 { "heldout" } else { "dev" };
            (format!("repository{index}"), Some(split.to_string()))
        })
        .collect();
    let names: Vec<&String> = repositories.keys().collect();
    let mut commits = Vec::new();
    let mut diffs = BTreeMap::new();
    let mut claim_records = Vec::new();
    while claim_records.len() < claims {
        let index = commits.len();
        let commit = CommitRecord {
            repo: names[index % names.len()].clone(),
            commit: hex(&mut random),
            parent: hex(&mut random),
            score: 1.0,
            subject: format!("Refactor helper {index} and drop the old API"),
            test_files: vec![],
            source_files: vec![],
            by: "assertion-deletions".to_string(),
            rank: 1,
            assertions_deleted: 1,
            deleted_assertion_lines: 1,
            keyword_hits: 0,
            merge: false,
            time: 1_700_000_000 + index as i64 * 3600,
        };
        let key = DiffKey {
            repository: commit.repo.clone(),
            commit: commit.commit.clone(),
            limit: DEFAULT_DIFF_LIMIT,
        };
        diffs.insert(key, diff_text(&mut random, index));
        for _ in 0..random.usize(1..12).min(claims - claim_records.len()) {
            let index = claim_records.len();
            claim_records.push(claim(&mut random, &commit, index));
        }
        commits.push(commit);
    }
    let truth = claim_records
        .iter()
        .map(|claim| truth(&mut random, claim))
        .collect();
    let arms = ARMS[..arms.min(ARMS.len())]
        .iter()
        .map(|(step, strategy, model)| ArmView {
            step: step.to_string(),
            kind: if *model { "llm-arm" } else { "arm" }.to_string(),
            strategy: Some(strategy.to_string()),
            model: model.then(|| "judge".to_string()),
            diff_limit: model.then_some(DEFAULT_DIFF_LIMIT),
            predictions: claim_records
                .iter()
                .map(|claim| prediction(&mut random, &claim.id, step, *model))
                .collect(),
            ..ArmView::default()
        })
        .collect();
    Inputs {
        title: format!("claimflow report: synthetic ({claims} claims)"),
        provenance: Provenance {
            version: env!("CARGO_PKG_VERSION").to_string(),
            pipeline: "synthetic".to_string(),
            pipeline_digest: crate::cache::Digest::of(format!("{claims}/{seed}").as_bytes())
                .to_string(),
            models: BTreeMap::from([("judge".to_string(), "openai synthetic-model".to_string())]),
            latest_commit: commits.iter().map(|commit| commit.time).max(),
        },
        repositories,
        commits,
        claims: claim_records,
        truth,
        arms,
        diffs,
        report: Default::default(),
    }
}
