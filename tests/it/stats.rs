//! The `stats` and `report` step kinds over a fixed, generated benchmark: numbers cross-checked
//! against scipy and statsmodels, the report snapshotted, the figures parsed.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use claimflow::cache::{Digest, Store};
use claimflow::engine::{
    ItemOutput, ItemResult, Role, StepContext, StepError, StepKind, StepOutput, Upstream,
};
use claimflow::pipeline::Provider;
use claimflow::pipeline::{ModelSpec, Pipeline, Price, RepoSource, RepoSpec, StepSpec};
use claimflow::records::{
    ClaimRecord, CommitRecord, Label, PredictionRecord, TruthRecord, Verdict, claim_id,
};
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

/// How a generated arm behaves.
struct ArmRule {
    step: &'static str,
    uses: &'static str,
    /// The chance it fires on a flipped claim.
    hit: f64,
    /// The chance it fires on a held claim.
    false_alarm: f64,
    /// The chance it gives no verdict.
    silent: f64,
    model: Option<&'static str>,
}

const ARMS: &[ArmRule] = &[
    ArmRule {
        step: "a0",
        uses: "arm",
        hit: 1.0,
        false_alarm: 1.0,
        silent: 0.0,
        model: None,
    },
    ArmRule {
        step: "a1",
        uses: "arm",
        hit: 0.0,
        false_alarm: 0.0,
        silent: 0.0,
        model: None,
    },
    ArmRule {
        step: "a3",
        uses: "arm",
        hit: 0.95,
        false_alarm: 0.6,
        silent: 0.0,
        model: None,
    },
    ArmRule {
        step: "a4",
        uses: "arm",
        hit: 0.55,
        false_alarm: 0.25,
        silent: 0.0,
        model: None,
    },
    ArmRule {
        step: "a4b",
        uses: "testmon",
        hit: 0.87,
        false_alarm: 0.45,
        silent: 0.2,
        model: None,
    },
    ArmRule {
        step: "a5",
        uses: "llm-arm",
        hit: 0.7,
        false_alarm: 0.6,
        silent: 0.0,
        model: Some("budget"),
    },
    ArmRule {
        step: "a5c",
        uses: "llm-arm",
        hit: 0.75,
        false_alarm: 0.62,
        silent: 0.0,
        model: Some("budget"),
    },
    ArmRule {
        step: "a6_base",
        uses: "llm-arm",
        hit: 0.6,
        false_alarm: 0.1,
        silent: 0.0,
        model: Some("budget"),
    },
    ArmRule {
        step: "a6_risk",
        uses: "llm-arm",
        hit: 0.72,
        false_alarm: 0.07,
        silent: 0.03,
        model: Some("budget"),
    },
    ArmRule {
        step: "a6_frontier",
        uses: "llm-arm",
        hit: 0.8,
        false_alarm: 0.03,
        silent: 0.0,
        model: Some("frontier"),
    },
    ArmRule {
        step: "prose",
        uses: "llm-arm",
        hit: 0.65,
        false_alarm: 0.1,
        silent: 0.0,
        model: Some("budget"),
    },
    ArmRule {
        step: "a6_shuffled",
        uses: "shuffle-control",
        hit: 0.02,
        false_alarm: 0.02,
        silent: 0.0,
        model: Some("budget"),
    },
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
    for rule in ARMS {
        let (step, hit, false_alarm, silent, model) = (
            rule.step,
            rule.hit,
            rule.false_alarm,
            rule.silent,
            rule.model,
        );
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
    StepSpec::parsed(name, uses, needs, with, &fixed_registry(BTreeMap::new())).unwrap()
}

/// What a fixed step's records are: the miner's claims, the oracle's labels, a sample of them, a
/// control of `a6_risk`, or the predictions of an arm whose strategy is its step name.
fn fixed_role(kind: &str, step: &str) -> Role {
    let model = ARMS
        .iter()
        .find(|arm| arm.step == step)
        .and_then(|arm| arm.model)
        .map(str::to_string);
    match kind {
        "rank-commits" => Role::Commits,
        "mine-claims" => Role::Claims,
        "oracle" => Role::Labels,
        "stratify" => Role::LabelSample,
        _ if step == "a6_shuffled" => Role::Control {
            of: "a6_risk".into(),
            control: "shuffle".into(),
            model,
        },
        _ => Role::Predictions {
            strategy: step.into(),
            model,
        },
    }
}

/// Fixed kinds under every name the fixtures use, with `stats` and `report`.
fn fixed_registry(
    mut records: BTreeMap<&'static str, BTreeMap<String, Vec<serde_json::Value>>>,
) -> claimflow::steps::Registry {
    let mut kinds: Vec<Arc<dyn StepKind>> = Vec::new();
    let names = ["mine-claims", "oracle", "stratify"]
        .into_iter()
        .chain(ARMS.iter().map(|arm| arm.uses));
    let mut seen = std::collections::BTreeSet::new();
    for kind in names {
        if seen.insert(kind) {
            let records = records.remove(kind).unwrap_or_default();
            kinds.push(Arc::new(Fixed { kind, records }));
        }
    }
    kinds.push(Arc::new(claimflow::steps::RankCommits));
    kinds.push(Arc::new(StatsStep));
    kinds.push(Arc::new(ReportStep));
    claimflow::steps::Registry::with(kinds)
}

fn arm_with(step: &str) -> serde_json::Value {
    let model = ARMS.iter().find(|arm| arm.step == step).unwrap().model;
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
        price_per_mtok: Some(Price { input, output }),
        concurrency: 1,
        ..ModelSpec::new(Provider::Openai, model)
    };
    let mut steps = vec![
        step("claims", "mine-claims", &[], json!({})),
        step("truth", "oracle", &["claims"], json!({})),
    ];
    for arm in arms {
        let uses = ARMS.iter().find(|entry| entry.step == *arm).unwrap().uses;
        // A control needs the arm it wraps, as the loader requires.
        let needs: &[&str] = if *arm == "a6_shuffled" {
            &["truth", "a6_risk"]
        } else {
            &["truth"]
        };
        steps.push(step(arm, uses, needs, arm_with(arm)));
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
                test_patterns: None,
                dependencies: Vec::new(),
                merges: None,
                releases: claimflow::pipeline::Releases::Newest,
            })
            .collect(),
        models: BTreeMap::from([
            ("budget".to_string(), model("budget-1", 0.025, 0.10)),
            ("frontier".to_string(), model("frontier-1", 1.0, 4.0)),
        ]),
        executor: Default::default(),
        steps,
    }
}

fn output(step: &str, kind: &str, records: Vec<serde_json::Value>) -> Arc<StepOutput> {
    let role = fixed_role(kind, step);
    let output = ItemOutput {
        records: records.into(),
        blobs: Default::default(),
    };
    let digest = Digest::of(&serde_json::to_vec(&output).unwrap());
    Arc::new(StepOutput {
        step: step.into(),
        kind: kind.into(),
        role,
        items: vec![ItemResult {
            plan: claimflow::engine::ItemPlan::new("all"),
            digest,
            output: Arc::new(output),
            cached: false,
            in_place: false,
        }],
        reduced: None,
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
    let ctx = StepContext::new(pipeline, spec, store);
    let mut items = Vec::new();
    for plan in kind.items(&ctx, upstream)? {
        let output = kind.run(&ctx, &plan, upstream)?;
        let digest = Digest::of(&serde_json::to_vec(&output).unwrap());
        items.push(ItemResult {
            plan,
            digest,
            output: Arc::new(output),
            cached: false,
            in_place: false,
        });
    }
    kind.publish(&ctx, &items)?;
    Ok(Arc::new(StepOutput {
        step: name.into(),
        kind: kind.name().into(),
        role: spec.role.clone(),
        items,
        reduced: None,
    }))
}

/// Runs `stats` then `report` over the fixture with `arms`; returns the results directory.
pub(crate) fn run_pipeline(
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
        let kind = ARMS.iter().find(|entry| entry.step == *arm).unwrap().uses;
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

pub(crate) fn all_arms() -> Vec<&'static str> {
    ARMS.iter().map(|arm| arm.step).collect()
}

/// Every arm through `stats` and `report` with a short bootstrap: what the figure tests read.
pub(crate) fn every_arm_reported(root: &Path) -> Pipeline {
    run_pipeline(root, &all_arms(), json!({"bootstrap": 200, "seed": 3})).unwrap()
}

pub(crate) fn read(pipeline: &Pipeline, relative: &str) -> String {
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
    let pipeline = every_arm_reported(root.path());
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
    crate::common::assert_ran(&output, "the command");
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

/// A step kind that emits fixed records per step: stands in for the miner, the oracle and the arms
/// so `stats` and `report` run under the real engine.
struct Fixed {
    kind: &'static str,
    records: BTreeMap<String, Vec<serde_json::Value>>,
}

/// What a fixed step may say: the model an arm asks, the arm a control wraps.
#[derive(Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct FixedParams {
    /// The model.
    #[serde(default)]
    model: Option<claimflow::engine::ModelName>,
    /// The arm a control wraps.
    #[serde(default)]
    arm: Option<claimflow::engine::StepName>,
}

impl StepKind for Fixed {
    fn name(&self) -> &'static str {
        self.kind
    }

    fn version(&self) -> u32 {
        1
    }

    fn about(&self) -> &'static str {
        "fixed records for tests"
    }

    fn params(&self) -> claimflow::engine::ParamsDecl {
        claimflow::engine::ParamsDecl::of::<FixedParams>()
    }

    fn role(&self, step: &StepSpec) -> Role {
        fixed_role(self.kind, &step.name)
    }

    fn items(
        &self,
        ctx: &StepContext,
        _upstream: &Upstream,
    ) -> Result<Vec<claimflow::engine::ItemPlan>, StepError> {
        let records = &self.records[&ctx.step.name];
        let digest = Digest::of(&serde_json::to_vec(records).unwrap());
        Ok(vec![
            claimflow::engine::ItemPlan::new("all").params(json!({"records": digest})),
        ])
    }

    fn run(
        &self,
        ctx: &StepContext,
        _item: &claimflow::engine::ItemPlan,
        _upstream: &Upstream,
    ) -> Result<ItemOutput, StepError> {
        Ok(ItemOutput {
            records: self.records[&ctx.step.name].clone().into(),
            blobs: Default::default(),
        })
    }

    fn publish(&self, _ctx: &StepContext, _items: &[ItemResult]) -> Result<(), StepError> {
        Ok(())
    }
}

#[test]
fn the_engine_runs_stats_and_report_and_restores_them_from_the_cache() {
    use claimflow::engine::{Engine, RunOptions, Silent};

    let fixture = fixture();
    let mut by_kind: BTreeMap<&str, BTreeMap<String, Vec<serde_json::Value>>> = BTreeMap::new();
    by_kind
        .entry("mine-claims")
        .or_default()
        .insert("claims".into(), values(&fixture.claims));
    by_kind
        .entry("oracle")
        .or_default()
        .insert("truth".into(), values(&fixture.truth));
    for rule in ARMS {
        by_kind
            .entry(rule.uses)
            .or_default()
            .insert(rule.step.into(), values(&fixture.predictions[rule.step]));
    }
    let registry = fixed_registry(by_kind);

    let mut yaml = String::from("version: 1\nname: engine\nrepos:\n");
    for &(name, split, source, ..) in REPOSITORIES {
        yaml.push_str(&format!(
            "  - {{name: {name}, url: \"{source}\", branch: main, split: {split}}}\n"
        ));
    }
    yaml.push_str(
        "models:\n  budget: {provider: openai, model: budget-1, price_per_mtok: {input: 0.025, \
         output: 0.1}}\n  frontier: {provider: openai, model: frontier-1, price_per_mtok: \
         {input: 1.0, output: 4.0}}\nsteps:\n  claims: {uses: mine-claims}\n  truth: {uses: \
         oracle, needs: [claims]}\n",
    );
    let mut needs = vec!["truth".to_string(), "claims".to_string()];
    for rule in ARMS {
        let mut with = Vec::new();
        if let Some(model) = rule.model {
            with.push(format!("model: {model}"));
        }
        if rule.step == "a6_shuffled" {
            with.push("arm: a6_risk".to_string());
        }
        // A control reads the arm it wraps, so it needs it.
        let arm_needs = if rule.step == "a6_shuffled" {
            "truth, a6_risk"
        } else {
            "truth"
        };
        yaml.push_str(&format!(
            "  {}: {{uses: {}, needs: [{arm_needs}], with: {{{}}}}}\n",
            rule.step,
            rule.uses,
            with.join(", ")
        ));
        needs.push(rule.step.to_string());
    }
    yaml.push_str(&format!(
        "  stats: {{uses: stats, needs: [{}], with: {{bootstrap: 500, seed: 5, resample: commit, \
         compare: [[a6_risk, a4]]}}}}\n  report: {{uses: report, needs: [stats], with: {{title: \
         Engine run, tables: {{arms: [a0, a4, a6_risk]}}}}}}\n",
        needs.join(", ")
    ));

    let root = tempfile::tempdir().unwrap();
    let pipeline =
        claimflow::pipeline::load_str(&yaml, Path::new("pipeline.yaml"), root.path(), &registry)
            .unwrap_or_else(|diagnostics| panic!("{diagnostics}\n{yaml}"));
    let options = RunOptions {
        jobs: 2,
        ..RunOptions::default()
    };
    let first = Engine::new(&pipeline, &registry, &Silent)
        .unwrap()
        .run(&options)
        .unwrap();
    assert_eq!(first.cached(), 0);
    let report = std::fs::read_to_string(pipeline.results.join("report.md")).unwrap();
    assert!(report.starts_with("# Engine run\n"), "{report}");
    assert!(report.contains("| a6_risk |"));
    let stats: StatsDocument =
        serde_json::from_slice(&std::fs::read(pipeline.results.join("stats.json")).unwrap())
            .unwrap();
    assert_eq!(stats.bootstrap.resample, Resample::Commit);
    assert_eq!(stats.loro.len(), 1);

    // A second run computes nothing and writes the report back from the cache.
    std::fs::remove_file(pipeline.results.join("report.md")).unwrap();
    std::fs::remove_dir_all(pipeline.results.join("figures")).unwrap();
    let second = Engine::new(&pipeline, &registry, &Silent)
        .unwrap()
        .run(&options)
        .unwrap();
    assert_eq!(second.computed(), 0);
    assert_eq!(
        std::fs::read_to_string(pipeline.results.join("report.md")).unwrap(),
        report
    );
    assert!(pipeline.results.join("figures/arms.svg").exists());
}

#[test]
fn a_sampling_step_supplies_the_labels_and_the_natural_rate() {
    let root = tempfile::tempdir().unwrap();
    let fixture = fixture();
    let mut pipeline = pipeline(root.path(), &["a0", "a4"], json!({"bootstrap": 100}));
    pipeline
        .steps
        .push(step("sample", "stratify", &["truth"], json!({})));
    let stats = pipeline
        .steps
        .iter_mut()
        .find(|spec| spec.name == "stats")
        .unwrap();
    stats.needs.push("sample".into());
    let store = Store::open(root.path().join("cache")).unwrap();

    // The sample keeps every other labelled claim and records the rate before sampling.
    let mut sample: Vec<serde_json::Value> = fixture
        .truth
        .iter()
        .step_by(2)
        .map(|record| serde_json::to_value(record).unwrap())
        .collect();
    sample.push(json!({
        "record": "sample", "split": null, "seed": 0, "size": null, "labels_from": "truth",
        "natural_rate": 0.0178, "claims": [], "population_flipped": 0, "population_held": 0,
        "flipped": 0, "held": 0, "target_rate": 0.25, "achieved_rate": null,
    }));
    let mut upstream = Upstream::default();
    upstream.steps.insert(
        "truth".into(),
        output("truth", "oracle", values(&fixture.truth)),
    );
    upstream
        .steps
        .insert("sample".into(), output("sample", "stratify", sample));
    for arm in ["a0", "a4"] {
        let records = values(&fixture.predictions[arm]);
        upstream
            .steps
            .insert(arm.into(), output(arm, "arm", records));
    }
    run_kind(&StatsStep, &pipeline, "stats", &store, &upstream).unwrap();
    let stats: StatsDocument = serde_json::from_str(&read(&pipeline, "stats.json")).unwrap();
    assert_eq!(stats.sample.labels_from, "sample");
    let sampled = fixture.truth.iter().step_by(2).count() as u64;
    assert_eq!(stats.sample.claims + stats.sample.discarded, sampled);
    let rate = stats.natural_rate.unwrap();
    assert_eq!((rate.value, rate.source.as_str()), (0.0178, "step:sample"));
    // The corpus still counts the whole oracle population.
    let corpus_claims: u64 = stats.corpus.iter().map(|row| row.claims).sum();
    assert_eq!(corpus_claims, fixture.truth.len() as u64);
    // Always-invalidate reweights to exactly the natural rate.
    let natural = stats.arms["a0"].natural_precision.unwrap();
    assert!((natural - 0.0178).abs() < 1e-12);
}

/// Commit records of the fixture's commits whose index `keep` accepts, plus one commit per
/// repository that gave no claims, ranked `by`.
fn ranked(by: &str, keep: impl Fn(u64) -> bool) -> Vec<CommitRecord> {
    let mut records = Vec::new();
    for &(repository, _, _, commits, ..) in REPOSITORIES {
        for commit in (0..commits).filter(|commit| keep(*commit)).chain([99]) {
            records.push(CommitRecord {
                repo: repository.into(),
                commit: format!("{repository}{commit:02}bb"),
                parent: format!("{repository}{commit:02}aa"),
                score: 1.0,
                subject: format!("commit {commit}"),
                test_files: vec![format!("tests/test_{commit}.py")],
                source_files: vec!["src/lib.py".into()],
                by: by.into(),
                rank: 1,
                assertions_deleted: 1,
                deleted_assertion_lines: 1,
                keyword_hits: 0,
                merge: false,
                time: 0,
            });
        }
    }
    records
}

/// Runs `stats` and `report` with a second ranking beside the first: `rank` picks every commit of
/// the fixture, `rank_kw` the even-numbered ones (each also one commit that gave no claims), and
/// `truth_kw` labels the claims of those the way `truth` does.
fn run_two_rankings(root: &Path, stats_with: serde_json::Value) -> Pipeline {
    let fixture = fixture();
    let mut pipeline = pipeline(root, STATIC_ARMS, stats_with);
    pipeline.steps[0].needs = vec!["rank".into()];
    pipeline.steps.extend([
        step("rank", "rank-commits", &[], json!({})),
        step("rank_kw", "rank-commits", &[], json!({"by": "keywords"})),
        step("claims_kw", "mine-claims", &["rank_kw"], json!({})),
        step("truth_kw", "oracle", &["claims_kw"], json!({})),
    ]);
    let stats = pipeline
        .steps
        .iter_mut()
        .find(|spec| spec.name == "stats")
        .unwrap();
    stats
        .needs
        .extend(["rank", "rank_kw", "truth_kw"].map(String::from));

    let commits = ranked("assertion-deletions", |_| true);
    let commits_kw = ranked("keywords", |commit| commit % 2 == 0);
    let truth_kw: Vec<TruthRecord> = fixture
        .truth
        .iter()
        .filter(|record| {
            commits_kw.iter().any(|commit| {
                record
                    .claim
                    .starts_with(&format!("{}@{}::", commit.repo, commit.parent))
            })
        })
        .cloned()
        .collect();
    let store = Store::open(pipeline.workdir.join("cache")).unwrap();
    let mut upstream = Upstream::default();
    for (name, kind, records) in [
        ("rank", "rank-commits", values(&commits)),
        ("rank_kw", "rank-commits", values(&commits_kw)),
        ("claims", "mine-claims", values(&fixture.claims)),
        ("truth", "oracle", values(&fixture.truth)),
        ("truth_kw", "oracle", values(&truth_kw)),
    ] {
        upstream
            .steps
            .insert(name.into(), output(name, kind, records));
    }
    for arm in STATIC_ARMS {
        let records = values(&fixture.predictions[*arm]);
        upstream
            .steps
            .insert(arm.to_string(), output(arm, "arm", records));
    }
    let stats = run_kind(&StatsStep, &pipeline, "stats", &store, &upstream).unwrap();
    let mut downstream = Upstream::default();
    downstream.steps.insert("stats".into(), stats);
    run_kind(&ReportStep, &pipeline, "report", &store, &downstream).unwrap();
    pipeline
}

/// The section of `report.md` whose title starts with `title`, up to the next section.
fn section<'a>(report: &'a str, title: &str) -> &'a str {
    let start = report
        .find(&format!("## {title}"))
        .unwrap_or_else(|| panic!("no section {title} in:\n{report}"));
    let rest = &report[start..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |end| end + 4);
    &rest[..end]
}

#[test]
fn two_rankings_get_their_flip_density_and_its_difference() {
    let root = tempfile::tempdir().unwrap();
    let pipeline = run_two_rankings(
        root.path(),
        json!({"bootstrap": 2000, "seed": 3, "rankings": ["rank", "rank_kw"]}),
    );
    let stats: StatsDocument = serde_json::from_str(&read(&pipeline, "stats.json")).unwrap();
    let rankings = stats.rankings.as_ref().expect("a rankings section");

    // Counted from the fixture itself.
    let fixture = fixture();
    let count = |keep: &dyn Fn(&str) -> bool, label: Label| {
        fixture
            .truth
            .iter()
            .filter(|record| keep(&record.claim) && record.label == label)
            .count() as u64
    };
    let even = |claim: &str| {
        let parent = claim.split("::").next().unwrap();
        parent[parent.len() - 4..parent.len() - 2]
            .parse::<u64>()
            .unwrap()
            % 2
            == 0
    };
    let all_commits: u64 = REPOSITORIES.iter().map(|repository| repository.3).sum();
    let even_commits: u64 = REPOSITORIES
        .iter()
        .map(|repository| repository.3.div_ceil(2))
        .sum();
    let extra = REPOSITORIES.len() as u64;
    let [rank, keywords] = rankings.steps.as_slice() else {
        panic!("two rankings: {rankings:?}");
    };
    assert_eq!(
        (
            rank.step.as_str(),
            rank.by.as_str(),
            rank.labels_from.as_str()
        ),
        ("rank", "assertion-deletions", "truth")
    );
    assert_eq!(
        (
            keywords.step.as_str(),
            keywords.by.as_str(),
            keywords.labels_from.as_str()
        ),
        ("rank_kw", "keywords", "truth_kw")
    );
    assert_eq!(rank.commits, all_commits + extra);
    assert_eq!(keywords.commits, even_commits + extra);
    assert_eq!(rank.commits_labelled, all_commits);
    assert_eq!(rank.flipped, count(&|_| true, Label::Flipped));
    assert_eq!(rank.held, count(&|_| true, Label::Held));
    assert_eq!(rank.discarded, count(&|_| true, Label::Discarded));
    assert_eq!(keywords.flipped, count(&even, Label::Flipped));
    assert_eq!(keywords.held, count(&even, Label::Held));
    assert_eq!(keywords.discarded, count(&even, Label::Discarded));
    assert_eq!(
        rank.flips_per_commit,
        Some(rank.flipped as f64 / rank.commits as f64)
    );
    assert_eq!(
        keywords.flip_rate,
        Some(keywords.flipped as f64 / keywords.claims as f64)
    );
    let difference = &rankings.differences[0];
    assert_eq!(difference.shared_commits, keywords.commits);
    assert_eq!(rankings.commits, rank.commits);
    // The arms are still scored against `truth`, the oracle whose claims they read.
    assert_eq!(stats.sample.labels_from, "truth");
    assert_eq!(stats.sample.claims, rank.claims);
    // Table I now knows the commits ranked, from `rank`.
    let ranked_total: u64 = stats.corpus.iter().filter_map(|row| row.commits).sum();
    assert_eq!(ranked_total, rank.commits);

    insta::assert_json_snapshot!("two_rankings_stats", rankings);
    let report = read(&pipeline, "report.md");
    insta::assert_snapshot!(
        "two_rankings_report",
        section(&report, "Flip density by ranking")
    );
    insta::assert_snapshot!(
        "two_rankings_csv",
        read(&pipeline, "tables/flip_density_by_ranking.csv")
    );
}

/// Loads `yaml` with the shipped step kinds, as `pipelines/rankings.yaml`.
fn load_rankings(yaml: &str) -> Result<Pipeline, claimflow::pipeline::Diagnostics> {
    let root = tempfile::tempdir().unwrap();
    claimflow::pipeline::load_str(
        yaml,
        Path::new("pipelines/rankings.yaml"),
        root.path(),
        &claimflow::steps::Registry::builtin(),
    )
}

const TWO_CHAINS: &str = r#"version: 1
name: rankings
repos:
  - {name: demo, url: https://example.org/demo.git, branch: main}
steps:
  rank:      {uses: rank-commits}
  claims:    {uses: mine-claims, needs: [rank]}
  truth:     {uses: oracle, needs: [claims]}
  rank_kw:   {uses: rank-commits, with: {by: keywords}}
  claims_kw: {uses: mine-claims, needs: [rank_kw]}
  truth_kw:  {uses: oracle, needs: [claims_kw]}
  a0:        {uses: arm, needs: [claims], with: {arm: a0}}
"#;

#[test]
fn a_bad_rankings_config_is_rejected_when_the_pipeline_loads() {
    let good = format!(
        "{TWO_CHAINS}  stats: {{uses: stats, needs: [rank, truth, rank_kw, truth_kw, a0], \
         with: {{rankings: [rank, rank_kw]}}}}\n"
    );
    load_rankings(&good).unwrap_or_else(|problems| panic!("{problems}"));
    // A rank step needed only to order two steps is not a ranking the later oracle labels.
    let ordered = good.replace(
        "rank_kw:   {uses: rank-commits,",
        "rank_kw:   {uses: rank-commits, needs: [rank],",
    );
    assert_ne!(ordered, good);
    load_rankings(&ordered).unwrap_or_else(|problems| panic!("{problems}"));

    let cases = [
        // A mine-claims step where a ranking belongs, and a ranking whose oracle is not needed.
        "  stats:\n    uses: stats\n    needs: [rank, truth, rank_kw, claims_kw, a0]\n    with: \
         {rankings: [rank, claims_kw, rank_kw]}\n",
        // One ranking compares nothing.
        "  stats: {uses: stats, needs: [rank, truth, a0], with: {rankings: [rank]}}\n",
        // A ranking the stats step does not need.
        "  stats: {uses: stats, needs: [rank, truth, truth_kw, a0], with: {rankings: [rank, \
         rank_kw]}}\n",
        // Two oracle steps, and neither an arm nor a ranking to say which labels are the
        // sample.
        "  stats: {uses: stats, needs: [truth, truth_kw]}\n",
    ];
    let reports: Vec<String> = cases
        .iter()
        .map(|stats| {
            load_rankings(&format!("{TWO_CHAINS}{stats}"))
                .expect_err("a bad rankings config must not load")
                .to_string()
        })
        .collect();
    insta::assert_snapshot!(reports.join("\n\n"));
}
