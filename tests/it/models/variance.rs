//! Run-to-run variance through the binary: a pipeline whose A6-risk arm asks every call three times
//! (`replicates: 3`), at a fake OpenAI-compatible server that answers the same request differently
//! the third time for two of the claims; the report's run-to-run agreement table shows exactly the
//! disagreement the server scripted.

use std::collections::BTreeMap;
use std::sync::Mutex;

use claimflow::pipeline::Provider;
use claimflow::records::{ClaimRecord, PredictionRecord};

use super::fake_server::{FakeServer, Recorded, Reply};
use crate::common::project::Project;

const KEY_VARIABLE: &str = "CLAIMFLOW_VARIANCE_KEY";
const KEY: &str = "sk-variance-4c1d9e";
const REPLICATES: usize = 3;
/// The claims whose third answer differs from their first two.
const WAVERING: [&str; 2] = ["def test_add():", "def test_clear():"];

/// How often the server has seen each prompt.
static SEEN: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());

/// A6 answers `flipped`, except the third time a wavering claim is asked: `held`. Which replicate
/// gets which answer depends on the order the calls arrive in; the agreement figures do not (each
/// wavering claim agrees in one pair of three, whichever replicate its `held` lands in).
fn wavering(_: usize, request: &Recorded) -> Reply {
    let user = request.json()["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let nth = {
        let mut seen = SEEN.lock().unwrap();
        let count = seen.entry(user.clone()).or_insert(0);
        *count += 1;
        *count
    };
    let waver = nth == 3 && WAVERING.iter().any(|claim| user.contains(claim));
    let verdict = if waver { "held" } else { "flipped" };
    Reply::json(super::answer(
        Provider::Openai,
        &format!(r#"{{"verdict": "{verdict}"}}"#),
    ))
}

fn jsonl<T: serde::de::DeserializeOwned>(text: &str) -> Vec<T> {
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|error| panic!("{error}: {line}")))
        .collect()
}

#[test]
fn the_report_shows_the_run_to_run_agreement_of_a_replicated_model_arm() {
    let repository = crate::invariants::repro_smoke::fixture();
    let server = FakeServer::start(wavering);
    let project = Project::new();
    project.file("prompts/a6_risk.txt", &super::prompt("a6_risk.txt"));
    project.file(
        "pipeline.yaml",
        &format!(
            r#"version: 1
name: variance
repos:
  - {{name: fixture, path: "{repository}", branch: main, python: ["3.11"]}}
models:
  judge: {{provider: openai, model: test-model, base_url: "{url}", api_key_env: {KEY_VARIABLE}}}
steps:
  rank:    {{uses: rank-commits, with: {{by: assertion-deletions, top: 3}}}}
  claims:  {{uses: mine-claims, needs: [rank]}}
  truth:   {{uses: oracle, needs: [claims], with: {{runs: 2}}}}
  a6_risk: {{uses: llm-arm, needs: [claims], with: {{question: a6_risk, prompt: prompts/a6_risk.txt, model: judge, replicates: {REPLICATES}}}}}
  stats:   {{uses: stats, needs: [truth, a6_risk], with: {{bootstrap: 1000, seed: 1}}}}
  report:  {{uses: report, needs: [stats]}}
"#,
            repository = repository.path().display(),
            url = server.url("/v1"),
        ),
    );
    let ran = project
        .command(&["run", "pipeline.yaml", "-q"])
        .env(KEY_VARIABLE, KEY)
        .output()
        .unwrap();
    crate::common::assert_ran(&ran, "the run");

    let claims: Vec<ClaimRecord> = jsonl(&project.read("results/variance/claims.jsonl"));
    let n = claims.len();
    let wavering = claims
        .iter()
        .filter(|claim| WAVERING.iter().any(|text| claim.source.contains(text)))
        .count();
    assert_eq!(
        wavering, 2,
        "the fixture's test_add and test_clear are claims"
    );
    assert_eq!(
        server.count(),
        REPLICATES * n,
        "one call per claim and replicate"
    );
    // The server's script, read back from the prediction sets: two `held` among 3n verdicts.
    let mut held = 0;
    for replicate in 0..REPLICATES {
        let file = match replicate {
            0 => "results/variance/predictions/a6_risk.jsonl".to_string(),
            k => format!("results/variance/replicates/a6_risk/{k}.jsonl"),
        };
        let set: Vec<PredictionRecord> = jsonl(&project.read(&file));
        assert_eq!(set.len(), n, "{file}");
        held += set
            .iter()
            .filter(|prediction| prediction.verdict == claimflow::records::Verdict::Held)
            .count();
    }
    assert_eq!(held, 2);

    // Three pairs of replicates, n claims each; a steady claim agrees in all three pairs, a
    // wavering one in one. The lowest pair holds both wavering claims' disagreements (the two
    // replicates their `held` answers landed in, or any pair with the one they share).
    let compared = 3 * n;
    let agreed = 3 * (n - 2) + 2;
    let pooled = agreed as f64 / compared as f64;
    let lowest = (n - 2) as f64 / n as f64;
    let csv = project.read("results/variance/tables/replicate_agreement.csv");
    let rows: Vec<Vec<&str>> = csv.lines().map(|line| line.split(',').collect()).collect();
    assert_eq!(rows.len(), 2, "{csv}");
    let row = &rows[1];
    assert_eq!(row[0], "a6_risk", "{csv}");
    assert_eq!(row[1], REPLICATES.to_string(), "{csv}");
    let close = |cell: &str, expected: f64| {
        let value: f64 = cell.parse().unwrap_or_else(|_| panic!("{cell}: {csv}"));
        assert!(
            (value - expected).abs() < 5e-4,
            "{value} ≠ {expected}: {csv}"
        );
    };
    close(row[2], pooled);
    close(row[3], lowest);
    assert!(pooled < 1.0 && lowest < pooled);
    assert_eq!(row[4], compared.to_string(), "{csv}");
    assert_eq!(row[5], "0", "{csv}");

    // The same figures in report.md, under the table's title.
    let report = project.read("results/variance/report.md");
    let table = report
        .split("Run-to-run agreement")
        .nth(1)
        .unwrap_or_else(|| panic!("no run-to-run table:\n{report}"));
    let line = table
        .lines()
        .find(|line| line.starts_with("| a6_risk"))
        .unwrap_or_else(|| panic!("no a6_risk row:\n{table}"));
    assert_eq!(
        line,
        format!("| a6_risk | {REPLICATES} | {pooled:.3} | {lowest:.3} | {compared} | 0 |"),
        "{table}"
    );
}
