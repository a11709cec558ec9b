//! The `stats` and `report` step kinds over a fixed, generated benchmark: numbers cross-checked
//! against scipy and statsmodels, the report snapshotted, the figures parsed.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use claimflow::cache::{Digest, Store};
use claimflow::engine::{
    ItemOutput, ItemResult, StepContext, StepError, StepKind, StepOutput, Upstream,
};
use claimflow::pipeline::{ModelSpec, Pipeline, Price, RepoSource, RepoSpec, StepSpec};
use claimflow::records::{ClaimRecord, Label, PredictionRecord, TruthRecord, Verdict, claim_id};
use claimflow::stats::evaluation::{ArmInput, Origins};
use claimflow::stats::{AnalysisOptions, ArmInfo, Evaluation, Resample, SplitMix64, StatsDocument};
use claimflow::steps::{ReportStep, StatsStep};
use serde_json::json;

use crate::common::pytools;

/// `(name, split, source, commits, claims per commit, flip probability)`.
const REPOSITORIES: &[(&str, &str, &str, u64, u64, f64)] = &[
    (
        "alpha",
        "heldout",
        "https://example.org/alpha.git",
        4,
        9,
        0.35,
    ),
    (
        "beta",
        "heldout",
        "https://example.org/beta.git",
        3,
        8,
        0.20,
    ),
    (
        "click",
        "heldout",
        "https://example.org/click.git",
        3,
        7,
        0.30,
    ),
    (
        "click_post",
        "postcutoff",
        "https://example.org/click.git",
        2,
        6,
        0.40,
    ),
    (
        "gamma",
        "heldout",
        "https://example.org/gamma.git",
        2,
        8,
        0.25,
    ),
    (
        "quiet",
        "heldout",
        "https://example.org/quiet.git",
        2,
        5,
        0.0,
    ),
];

/// `(step, uses, true-positive rate, false-positive rate, share without verdict, model)`.
const ARMS: &[(&str, &str, f64, f64, f64, Option<&str>)] = &[
    ("a0", "arm", 1.0, 1.0, 0.0, None),
    ("a1", "arm", 0.0, 0.0, 0.0, None),
    ("a3", "arm", 0.95, 0.6, 0.0, None),
    ("a4", "arm", 0.55, 0.25, 0.0, None),
    ("a4b", "testmon", 0.87, 0.45, 0.2, None),
    ("a5", "llm-arm", 0.7, 0.6, 0.0, Some("budget")),
    ("a5c", "llm-arm", 0.75, 0.62, 0.0, Some("budget")),
    ("a6_base", "llm-arm", 0.6, 0.1, 0.0, Some("budget")),
    ("a6_risk", "llm-arm", 0.72, 0.07, 0.03, Some("budget")),
    ("a6_frontier", "llm-arm", 0.8, 0.03, 0.0, Some("frontier")),
    ("prose", "llm-arm", 0.65, 0.1, 0.0, Some("budget")),
    (
        "a6_shuffled",
        "shuffle-control",
        0.02,
        0.02,
        0.0,
        Some("budget"),
    ),
];

const STATIC_ARMS: &[&str] = &["a0", "a1", "a3", "a4"];

/// The generated benchmark.
struct Fixture {
    claims: Vec<ClaimRecord>,
    truth: Vec<TruthRecord>,
    predictions: BTreeMap<String, Vec<PredictionRecord>>,
}

fn uniform(rng: &SplitMix64, counter: u64) -> f64 {
    (rng.at(counter) >> 11) as f64 / (1u64 << 53) as f64
}

fn fixture() -> Fixture {
    let rng = SplitMix64::new(2026);
    let mut counter = 0;
    let mut next = || {
        counter += 1;
        uniform(&rng, counter)
    };
    let mut claims = Vec::new();
    let mut truth = Vec::new();
    for &(repository, _, _, commits, per_commit, flip_rate) in REPOSITORIES {
        for commit in 0..commits {
            let parent = format!("{repository}{commit:02}aa");
            for test in 0..per_commit {
                let node = format!("tests/test_{commit}.py::test_{test}");
                let id = claim_id(repository, &parent, &node);
                let label = if (claims.len() + 1) % 19 == 0 {
                    Label::Discarded
                } else if next() < flip_rate {
                    Label::Flipped
                } else {
                    Label::Held
                };
                claims.push(ClaimRecord {
                    id: id.clone(),
                    repo: repository.to_string(),
                    parent: parent.clone(),
                    commit: format!("{repository}{commit:02}bb"),
                    node,
                    source: "def test(): assert f() == 1".into(),
                    assertions: vec!["assert f() == 1".into()],
                    fixtures: vec![],
                });
                truth.push(TruthRecord {
                    claim: id,
                    label,
                    reason: (label == Label::Discarded).then(|| "flaky".to_string()),
                    parent_runs: vec![],
                    child_runs: vec![],
                });
            }
        }
    }
    let mut predictions = BTreeMap::new();
    for &(step, _, hit, false_alarm, silent, model) in ARMS {
        let records = truth
            .iter()
            .map(|record| {
                let fire = if record.label == Label::Flipped {
                    hit
                } else {
                    false_alarm
                };
                let verdict = if next() < silent {
                    Verdict::None
                } else if next() < fire {
                    Verdict::Flipped
                } else {
                    Verdict::Held
                };
                let frontier = model == Some("frontier");
                PredictionRecord {
                    claim: record.claim.clone(),
                    verdict,
                    evidence: json!({"rule": step}),
                    tokens_in: model.map(|_| 1500),
                    tokens_out: model.map(|_| 12),
                    // The frontier arm records its cost; the others are priced from tokens.
                    cost: frontier.then_some(0.0123),
                }
            })
            .collect();
        predictions.insert(step.to_string(), records);
    }
    Fixture {
        claims,
        truth,
        predictions,
    }
}

fn step(name: &str, uses: &str, needs: &[&str], with: serde_json::Value) -> StepSpec {
    StepSpec {
        name: name.into(),
        uses: uses.into(),
        needs: needs.iter().map(|need| need.to_string()).collect(),
        with,
        line: 1,
    }
}

fn arm_with(step: &str) -> serde_json::Value {
    let (_, _, _, _, _, model) = ARMS.iter().find(|arm| arm.0 == step).unwrap();
    let mut with = json!({});
    if let Some(model) = model {
        with["model"] = json!(model);
    }
    if step == "a6_shuffled" {
        with["arm"] = json!("a6_risk");
    }
    with
}

fn pipeline(root: &Path, arms: &[&str], stats_with: serde_json::Value) -> Pipeline {
    let model = |model: &str, input: f64, output: f64| ModelSpec {
        provider: "openai".into(),
        model: model.into(),
        base_url: None,
        api_key_env: None,
        price_per_mtok: Some(Price { input, output }),
        concurrency: 1,
    };
    let mut steps = vec![
        step("claims", "mine-claims", &[], json!({})),
        step("truth", "oracle", &["claims"], json!({})),
    ];
    for arm in arms {
        let uses = ARMS.iter().find(|entry| entry.0 == *arm).unwrap().1;
        steps.push(step(arm, uses, &["truth"], arm_with(arm)));
    }
    let mut needs = vec!["truth", "claims"];
    needs.extend(arms);
    steps.push(step("stats", "stats", &needs, stats_with));
    steps.push(step("report", "report", &["stats"], json!({})));
    Pipeline {
        file: "pipeline.yaml".into(),
        root: root.to_path_buf(),
        version: 1,
        name: "fixture".into(),
        workdir: root.join(".claimflow"),
        results: root.join("results"),
        repos: REPOSITORIES
            .iter()
            .map(|&(name, split, source, ..)| RepoSpec {
                name: name.into(),
                source: RepoSource::Url(source.into()),
                branch: "main".into(),
                split: Some(split.into()),
                python: vec![],
                extra: BTreeMap::new(),
            })
            .collect(),
        models: BTreeMap::from([
            ("budget".to_string(), model("budget-1", 0.025, 0.10)),
            ("frontier".to_string(), model("frontier-1", 1.0, 4.0)),
        ]),
        steps,
    }
}

fn output(step: &str, kind: &str, records: Vec<serde_json::Value>) -> Arc<StepOutput> {
    let output = ItemOutput {
        records,
        blobs: BTreeMap::new(),
    };
    let digest = Digest::of(&serde_json::to_vec(&output).unwrap());
    Arc::new(StepOutput {
        step: step.into(),
        kind: kind.into(),
        items: vec![ItemResult {
            plan: claimflow::engine::ItemPlan::new("all"),
            digest,
            output: Arc::new(output),
            cached: false,
        }],
    })
}

fn values<T: serde::Serialize>(records: &[T]) -> Vec<serde_json::Value> {
    records
        .iter()
        .map(|record| serde_json::to_value(record).unwrap())
        .collect()
}

/// Runs one step kind the way the engine does: items, run each, publish.
fn run_kind(
    kind: &dyn StepKind,
    pipeline: &Pipeline,
    name: &str,
    store: &Store,
    upstream: &Upstream,
) -> Result<Arc<StepOutput>, StepError> {
    let spec = pipeline.step(name).unwrap();
    let ctx = StepContext {
        pipeline,
        step: spec,
        root: &pipeline.root,
        workdir: &pipeline.workdir,
        results: &pipeline.results,
        store,
    };
    let mut items = Vec::new();
    for plan in kind.items(&ctx, upstream)? {
        let output = kind.run(&ctx, &plan, upstream)?;
        let digest = Digest::of(&serde_json::to_vec(&output).unwrap());
        items.push(ItemResult {
            plan,
            digest,
            output: Arc::new(output),
            cached: false,
        });
    }
    kind.publish(&ctx, &items)?;
    Ok(Arc::new(StepOutput {
        step: name.into(),
        kind: kind.name().into(),
        items,
    }))
}

/// Runs `stats` then `report` over the fixture with `arms`; returns the results directory.
fn run_pipeline(
    root: &Path,
    arms: &[&str],
    stats_with: serde_json::Value,
) -> Result<Pipeline, StepError> {
    let fixture = fixture();
    let pipeline = pipeline(root, arms, stats_with);
    let store = Store::open(pipeline.workdir.join("cache")).unwrap();
    let mut upstream = Upstream::default();
    upstream.steps.insert(
        "claims".into(),
        output("claims", "mine-claims", values(&fixture.claims)),
    );
    upstream.steps.insert(
        "truth".into(),
        output("truth", "oracle", values(&fixture.truth)),
    );
    for arm in arms {
        let kind = ARMS.iter().find(|entry| entry.0 == *arm).unwrap().1;
        let records = values(&fixture.predictions[*arm]);
        upstream
            .steps
            .insert(arm.to_string(), output(arm, kind, records));
    }
    let stats = run_kind(&StatsStep, &pipeline, "stats", &store, &upstream)?;
    let mut downstream = Upstream::default();
    downstream.steps.insert("stats".into(), stats);
    run_kind(&ReportStep, &pipeline, "report", &store, &downstream)?;
    Ok(pipeline)
}

fn all_arms() -> Vec<&'static str> {
    ARMS.iter().map(|arm| arm.0).collect()
}

fn read(pipeline: &Pipeline, relative: &str) -> String {
    std::fs::read_to_string(pipeline.results.join(relative))
        .unwrap_or_else(|error| panic!("read {relative}: {error}"))
}

#[test]
fn report_with_every_arm_matches_snapshot() {
    let root = tempfile::tempdir().unwrap();
    let pipeline = run_pipeline(
        root.path(),
        &all_arms(),
        json!({"bootstrap": 1000, "seed": 7, "compare": [["a6_risk", "a4"], ["a6_risk", "a4b"]]}),
    )
    .unwrap();
    insta::assert_snapshot!(read(&pipeline, "report.md"));
    insta::assert_snapshot!(
        "loro_csv",
        read(&pipeline, "tables/table5_loro_a6_risk_a4.csv")
    );
}

#[test]
fn report_with_static_arms_leaves_tables_out_in_one_line_each() {
    let root = tempfile::tempdir().unwrap();
    let pipeline = run_pipeline(
        root.path(),
        STATIC_ARMS,
        json!({"bootstrap": 1000, "seed": 7, "split": "heldout"}),
    )
    .unwrap();
    let report = read(&pipeline, "report.md");
    insta::assert_snapshot!(report);
    assert!(!pipeline.results.join("tables/table3_testmon.csv").exists());
    assert!(!pipeline.results.join("figures/cost.svg").exists());
}

#[test]
fn stats_json_carries_the_contract_fields() {
    let root = tempfile::tempdir().unwrap();
    let pipeline = run_pipeline(
        root.path(),
        &all_arms(),
        json!({"bootstrap": 200, "seed": 1, "resample": "commit", "natural_rate": 0.02}),
    )
    .unwrap();
    let stats: serde_json::Value = serde_json::from_str(&read(&pipeline, "stats.json")).unwrap();
    for arm in ["a0", "a4", "a6_risk"] {
        let fields = stats["arms"][arm].as_object().unwrap();
        for key in [
            "precision",
            "recall",
            "fire_rate",
            "coverage",
            "precision_ci",
            "recall_ci",
            "tp",
            "fp",
            "fn",
            "tn",
        ] {
            assert!(fields.contains_key(key), "arms.{arm} lacks {key}");
        }
    }
    // A1 never fires: its precision is unknown, not zero.
    assert_eq!(stats["arms"]["a1"]["precision"], serde_json::Value::Null);
    assert_eq!(stats["controls"]["a6_shuffled"]["of"], "a6_risk");
    assert!(stats["arms"].get("a6_shuffled").is_none());
    assert_eq!(stats["bootstrap"]["resample"], "commit");
    assert_eq!(stats["natural_rate"]["source"], "param");
    assert!(stats["sample"]["discarded"].as_u64().unwrap() > 0);
    let a6 = &stats["arms"]["a6_risk"];
    assert!(a6["none"].as_u64().unwrap() > 0);
    assert_eq!(a6["cost"]["source"], "tokens x price");
    assert_eq!(stats["arms"]["a6_frontier"]["cost"]["source"], "recorded");
}

#[test]
fn figures_are_svg_with_one_mark_per_arm() {
    let root = tempfile::tempdir().unwrap();
    let pipeline = run_pipeline(
        root.path(),
        &all_arms(),
        json!({"bootstrap": 200, "seed": 3}),
    )
    .unwrap();
    let stats: StatsDocument = serde_json::from_str(&read(&pipeline, "stats.json")).unwrap();
    let circles = |figure: &str| {
        let text = read(&pipeline, figure);
        let document = roxmltree::Document::parse(&text)
            .unwrap_or_else(|error| panic!("{figure} is not XML: {error}"));
        assert_eq!(document.root_element().tag_name().name(), "svg");
        document
            .descendants()
            .filter(|node| node.has_tag_name("circle"))
            .count()
    };
    // Table II's arms with both rates defined (A1 never fires, so it has no point).
    let plotted = ["a0", "a3", "a4", "a4b", "a5", "a6_risk"];
    for arm in plotted {
        assert!(stats.arms[arm].precision.is_some());
    }
    assert_eq!(circles("figures/arms.svg"), plotted.len());
    assert_eq!(circles("figures/question_information.svg"), 4);
    let priced = stats.arms.values().filter(|arm| arm.cost.is_some()).count();
    assert_eq!(circles("figures/cost.svg"), priced);
    assert!(read(&pipeline, "figures/arms.svg").contains("base rate"));
}

#[test]
fn an_upstream_step_without_predictions_is_named() {
    let root = tempfile::tempdir().unwrap();
    let mut pipeline = pipeline(root.path(), &["a0"], json!({}));
    let store = Store::open(root.path().join("cache")).unwrap();
    let mut upstream = Upstream::default();
    upstream.steps.insert(
        "truth".into(),
        output("truth", "oracle", values(&fixture().truth)),
    );
    upstream.steps.insert(
        "a0".into(),
        output("a0", "command", vec![json!({"file": "out.txt"})]),
    );
    pipeline.steps[2].uses = "command".into();
    let error = run_kind(&StatsStep, &pipeline, "stats", &store, &upstream).unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("needed step `a0` (uses: command) is scored as an arm"),
        "{message}"
    );
}

#[test]
fn an_unknown_split_is_a_user_error() {
    let root = tempfile::tempdir().unwrap();
    let error = run_pipeline(root.path(), &["a0"], json!({"split": "nowhere"})).unwrap_err();
    assert!(matches!(error, StepError::Input(_)));
    assert_eq!(
        error.to_string(),
        "step `stats`: no repository has `split: nowhere`"
    );
}

/// The evaluation of the fixture on the held-out split, none read as held.
fn evaluation() -> Evaluation {
    let fixture = fixture();
    let arms = fixture
        .predictions
        .iter()
        .filter(|(step, _)| *step != "a6_shuffled")
        .map(|(step, predictions)| {
            let input = ArmInput {
                info: ArmInfo::default(),
                predictions: predictions.clone(),
            };
            (step.clone(), input)
        })
        .collect();
    Evaluation::build(
        &fixture.truth,
        &Origins::from_claims(&fixture.claims),
        &arms,
        None,
    )
    .unwrap()
}

fn close(left: f64, right: f64, tolerance: f64, what: &str) {
    assert!(
        (left - right).abs() <= tolerance,
        "{what}: claimflow {left} against python {right}"
    );
}

#[test]
fn statistics_match_scipy_and_statsmodels() {
    let python = pytools::python_with("stats-venv", pytools::STATS_PACKAGES);
    let evaluation = evaluation();
    let seed = 11;
    let resamples = 10_000;
    let pairs = [
        ("a6_risk", "a4"),
        ("a6_risk", "a4b"),
        ("a4", "a3"),
        ("a6_risk", "a6_frontier"),
        ("a5", "a5c"),
    ];
    let as_bits = |verdicts: &Vec<Verdict>| -> Vec<u8> {
        verdicts
            .iter()
            .map(|verdict| u8::from(*verdict == Verdict::Flipped))
            .collect()
    };
    let input = json!({
        "labels": evaluation.labels().iter().map(|&flipped| u8::from(flipped)).collect::<Vec<_>>(),
        "arms": evaluation.verdicts.iter().map(|(step, verdicts)| (step.clone(), as_bits(verdicts))).collect::<BTreeMap<_, _>>(),
        "claims": evaluation.claims.iter().map(|claim| claim.id.clone()).collect::<Vec<_>>(),
        "commits": evaluation.claims.iter().map(|claim| claim.commit.clone()).collect::<Vec<_>>(),
        "seed": seed,
        "resamples": resamples,
        "pairs": pairs,
    });
    let mut child = Command::new(&python)
        .arg("-c")
        .arg(include_str!("python/stats_crosscheck.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    serde_json::to_writer(child.stdin.take().unwrap(), &input).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let python: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    // Guard against a cross-check that silently compares nothing.
    assert!(python["scipy"]["a4"]["precision"].is_array());
    assert!(python["same_resamples"]["commit"]["a6_risk"]["recall"].is_array());

    let analyse = |resample| {
        let options = AnalysisOptions {
            resamples,
            seed,
            resample,
            ..AnalysisOptions::default()
        };
        claimflow::stats::analyze(&evaluation, vec![], BTreeMap::new(), &options)
    };
    let by_claim = analyse(Resample::Claim);
    let by_commit = analyse(Resample::Commit);

    for (step, stats) in &by_claim.arms {
        // Precision and recall: exact.
        match (stats.precision, python["precision"][step].as_f64()) {
            (Some(ours), Some(theirs)) => close(ours, theirs, 1e-12, &format!("{step} precision")),
            (ours, theirs) => assert_eq!(ours, theirs, "{step} precision"),
        }
        close(
            stats.recall.unwrap(),
            python["recall"][step].as_f64().unwrap(),
            1e-12,
            &format!("{step} recall"),
        );
        // The same resamples give the same intervals as numpy.
        for (document, mode) in [(&by_claim, "claim"), (&by_commit, "commit")] {
            let arm = &document.arms[step];
            for (ours, rate) in [(arm.precision_ci, "precision"), (arm.recall_ci, "recall")] {
                let theirs = &python["same_resamples"][mode][step][rate];
                match ours {
                    None => assert!(theirs.is_null(), "{step} {rate} {mode}"),
                    Some([low, high]) => {
                        close(
                            low,
                            theirs[0].as_f64().unwrap(),
                            1e-12,
                            &format!("{step} {rate} {mode} low"),
                        );
                        close(
                            high,
                            theirs[1].as_f64().unwrap(),
                            1e-12,
                            &format!("{step} {rate} {mode} high"),
                        );
                    }
                }
            }
        }
        // scipy's own resamples: within Monte-Carlo tolerance.
        for (ours, rate) in [
            (stats.precision_ci, "precision"),
            (stats.recall_ci, "recall"),
        ] {
            let theirs = &python["scipy"][step][rate];
            if let (Some([low, high]), false) = (ours, theirs.is_null()) {
                close(
                    low,
                    theirs[0].as_f64().unwrap(),
                    0.02,
                    &format!("{step} {rate} scipy low"),
                );
                close(
                    high,
                    theirs[1].as_f64().unwrap(),
                    0.02,
                    &format!("{step} {rate} scipy high"),
                );
            }
        }
    }
    for (first, second) in pairs {
        let ours = by_claim
            .comparisons
            .iter()
            .find(|found| {
                (found.arm == first && found.other == second)
                    || (found.arm == second && found.other == first)
            })
            .unwrap();
        let theirs = &python["mcnemar"][format!("{first}|{second}")];
        let (b, c) = if ours.arm == first {
            (ours.b, ours.c)
        } else {
            (ours.c, ours.b)
        };
        assert_eq!(
            (b, c),
            (theirs["b"].as_u64().unwrap(), theirs["c"].as_u64().unwrap()),
            "{first}/{second}"
        );
        let p = theirs["p"].as_f64().unwrap();
        close(
            ours.p,
            p,
            1e-9 * p.max(1e-300),
            &format!("{first}/{second} McNemar p"),
        );
        let binomial = theirs["binomtest"].as_f64().unwrap();
        close(
            ours.p,
            binomial,
            1e-9 * binomial.max(1e-300),
            &format!("{first}/{second} binomtest p"),
        );
    }
}
