//! The model step kinds end to end on the engine, against a fake OpenAI-compatible server: every
//! arm writes predictions, A5 asks once per commit, a failed prose rendering is reported, and
//! editing one prompt file re-asks exactly the calls that use it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

use claimflow::cache::Digest;
use claimflow::engine::{
    Engine, ItemOutput, ItemPlan, ItemResult, NoParams, ParamsDecl, Recording, Role, RunOptions,
    RunSummary, StepContext, StepError, StepKind, StepStatus, Upstream,
};
use claimflow::pipeline::{Pipeline, StepSpec, load_str};
use claimflow::records::{ClaimRecord, Label, PredictionRecord, TruthRecord, Verdict};
use claimflow::steps::scored::Scored;
use claimflow::steps::{LlmArm, ProseRender, Registry, StatsStep, Stratify};
use serde_json::json;

use super::fake_server::{FakeServer, Recorded, Reply};
use super::{KEY, answer};
use crate::common::git::FixtureRepo;
use claimflow::pipeline::Provider;

/// The variable the test pipeline names for its key.
const KEY_VARIABLE: &str = "CLAIMFLOW_IT_MODELS_KEY";

/// A stand-in for `mine-claims`: the claims written in the project's `claims.json`.
struct ClaimsFromFile;

impl StepKind for ClaimsFromFile {
    fn name(&self) -> &'static str {
        "mine-claims"
    }
    fn version(&self) -> u32 {
        1
    }
    fn about(&self) -> &'static str {
        "claims read from claims.json, for tests"
    }
    fn params(&self) -> ParamsDecl {
        ParamsDecl::of::<NoParams>()
    }
    fn role(&self, _: &StepSpec) -> Role {
        Role::Claims
    }
    fn items(&self, ctx: &StepContext, _: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        let bytes = std::fs::read(ctx.root.join("claims.json")).expect("claims.json");
        Ok(vec![
            ItemPlan::new("all").file("claims.json", Digest::of(&bytes)),
        ])
    }
    fn run(&self, ctx: &StepContext, _: &ItemPlan, _: &Upstream) -> Result<ItemOutput, StepError> {
        let bytes = std::fs::read(ctx.root.join("claims.json")).expect("claims.json");
        let claims: Vec<ClaimRecord> = serde_json::from_slice(&bytes).expect("claims");
        Ok(ItemOutput::records(claims))
    }
    fn publish(&self, _: &StepContext, _: &[ItemResult]) -> Result<(), StepError> {
        Ok(())
    }
}

/// A stand-in for `oracle`: the labels written in the project's `labels.json`.
struct LabelsFromFile;

impl StepKind for LabelsFromFile {
    fn name(&self) -> &'static str {
        "oracle"
    }
    fn version(&self) -> u32 {
        1
    }
    fn about(&self) -> &'static str {
        "labels read from labels.json, for tests"
    }
    fn params(&self) -> ParamsDecl {
        ParamsDecl::of::<NoParams>()
    }
    fn role(&self, _: &StepSpec) -> Role {
        Role::Labels
    }
    fn items(&self, ctx: &StepContext, _: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        let bytes = std::fs::read(ctx.root.join("labels.json")).expect("labels.json");
        Ok(vec![
            ItemPlan::new("all").file("labels.json", Digest::of(&bytes)),
        ])
    }
    fn run(&self, ctx: &StepContext, _: &ItemPlan, _: &Upstream) -> Result<ItemOutput, StepError> {
        let bytes = std::fs::read(ctx.root.join("labels.json")).expect("labels.json");
        let labels: Vec<TruthRecord> = serde_json::from_slice(&bytes).expect("labels");
        Ok(ItemOutput::records(labels))
    }
    fn publish(&self, _: &StepContext, _: &[ItemResult]) -> Result<(), StepError> {
        Ok(())
    }
}

fn registry() -> Registry {
    Registry::with(vec![
        Arc::new(ClaimsFromFile) as Arc<dyn StepKind>,
        Arc::new(LabelsFromFile),
        Arc::new(Stratify),
        Arc::new(LlmArm::default()),
        Arc::new(ProseRender),
    ])
}

/// Answers as a model would, by the prompt: a prose note (empty for `test_empty`), a behaviour
/// verdict, or a claim verdict.
fn model(_: usize, request: &Recorded) -> Reply {
    let body = request.json();
    let system = body["messages"][0]["content"].as_str().unwrap_or_default();
    let user = body["messages"][1]["content"].as_str().unwrap_or_default();
    let text = if system.contains("prose") {
        if user.contains("test_empty") {
            "   ".to_string()
        } else {
            format!("A note about {}.", user.lines().next().unwrap_or_default())
        }
    } else if system.contains("semantics_preserving") {
        r#"{"semantics_preserving": false}"#.to_string()
    } else {
        r#"{"verdict": "flipped"}"#.to_string()
    };
    Reply::json(answer(Provider::Openai, &text))
}

struct Setup {
    project: tempfile::TempDir,
    _repository: FixtureRepo,
    server: FakeServer,
}

impl Setup {
    fn new() -> Self {
        Self::with_model(model)
    }

    fn with_model(script: fn(usize, &Recorded) -> Reply) -> Self {
        let mut repository = FixtureRepo::new();
        repository
            .commit(
                "base",
                &[
                    ("pkg/a.py", Some("def f():\n    return 1\n")),
                    (
                        "tests/test_a.py",
                        Some("from pkg.a import f\n\ndef test_f():\n    assert f() == 1\n"),
                    ),
                ],
            )
            .commit(
                "f returns 2",
                &[
                    ("pkg/a.py", Some("def f():\n    return 2\n")),
                    (
                        "tests/test_a.py",
                        Some("from pkg.a import f\n\ndef test_f():\n    assert f() == 2\n"),
                    ),
                ],
            )
            .commit(
                "g",
                &[(
                    "pkg/a.py",
                    Some("def f():\n    return 2\n\ndef g():\n    return 3\n"),
                )],
            );
        let commits: Vec<String> = repository
            .commits()
            .iter()
            .map(ToString::to_string)
            .collect();
        let claim = |parent: &str, commit: &str, test: &str| {
            let source = format!("def {test}():\n    assert f() == 1 and {test:?}\n");
            json!({
                "id": format!("lib@{parent}::tests/test_a.py::{test}"),
                "repo": "lib", "parent": parent, "commit": commit,
                "node": format!("tests/test_a.py::{test}"),
                "source": source,
                "assertions": [format!("assert f() == 1 and {test:?}")],
                "fixtures": [],
            })
        };
        let claims = json!([
            claim(&commits[0], &commits[1], "test_f"),
            claim(&commits[0], &commits[1], "test_empty"),
            claim(&commits[0], &commits[1], "test_h"),
            claim(&commits[1], &commits[2], "test_f"),
            claim(&commits[1], &commits[2], "test_k"),
        ]);
        let project = tempfile::tempdir().expect("a project dir");
        let root = project.path();
        std::fs::write(root.join("claims.json"), claims.to_string()).unwrap();
        std::fs::create_dir(root.join("prompts")).unwrap();
        for name in ["a5", "a5c", "a6_base", "a6_risk", "prose_render"] {
            let text = super::prompt(&format!("{name}.txt"));
            std::fs::write(root.join(format!("prompts/{name}.txt")), text).unwrap();
        }
        let server = FakeServer::start(script);
        let pipeline = format!(
            r#"version: 1
name: arms
repos:
  - {{name: lib, path: "{repo}", branch: main}}
models:
  judge:
    provider: openai
    model: test-model
    base_url: "{url}"
    api_key_env: {KEY_VARIABLE}
    price_per_mtok: {{input: 0.25, output: 1.0}}
    concurrency: 4
steps:
  claims: {{uses: mine-claims}}
  a5: {{uses: llm-arm, needs: [claims], with: {{question: a5, prompt: prompts/a5.txt, model: judge}}}}
  a5c: {{uses: llm-arm, needs: [claims], with: {{question: a5c, prompt: prompts/a5c.txt, model: judge}}}}
  a6_base: {{uses: llm-arm, needs: [claims], with: {{question: a6_base, prompt: prompts/a6_base.txt, model: judge}}}}
  a6_risk: {{uses: llm-arm, needs: [claims], with: {{question: a6_risk, prompt: prompts/a6_risk.txt, model: judge}}}}
  prose_render: {{uses: prose-render, needs: [claims], with: {{prompt: prompts/prose_render.txt, model: judge}}}}
  prose:
    uses: llm-arm
    needs: [claims, prose_render]
    with: {{question: a6_risk, prompt: prompts/a6_risk.txt, model: judge, notes: prose_render}}
"#,
            repo = repository.path().display(),
            url = server.url("/v1"),
        );
        std::fs::write(root.join("pipeline.yaml"), pipeline).unwrap();
        // SAFETY: the variable is read by this test's model clients alone, and every test that
        // sets it sets the same value.
        unsafe { std::env::set_var(KEY_VARIABLE, KEY) };
        Setup {
            project,
            _repository: repository,
            server,
        }
    }

    fn root(&self) -> &Path {
        self.project.path()
    }

    fn pipeline(&self) -> Pipeline {
        self.pipeline_in(&registry())
    }

    fn pipeline_in(&self, registry: &Registry) -> Pipeline {
        let text = std::fs::read_to_string(self.root().join("pipeline.yaml")).unwrap();
        load_str(&text, Path::new("pipeline.yaml"), self.root(), registry)
            .unwrap_or_else(|problems| panic!("{problems}"))
    }

    /// Items to run per step, as `plan` shows them.
    fn to_run(&self) -> BTreeMap<String, usize> {
        let pipeline = self.pipeline();
        let registry = registry();
        let recording = Recording::default();
        let engine = Engine::new(&pipeline, &registry, &recording).unwrap();
        engine
            .plan(&[], None)
            .unwrap()
            .steps
            .into_iter()
            .map(|step| (step.name, step.items_to_run.expect("every step plans")))
            .collect()
    }

    fn run(&self) -> Result<(), String> {
        self.run_with(false)
    }

    /// A run, with `--offline` or without.
    fn run_with(&self, offline: bool) -> Result<(), String> {
        let pipeline = self.pipeline();
        let registry = registry();
        let recording = Recording::default();
        let engine = Engine::new(&pipeline, &registry, &recording).unwrap();
        let options = RunOptions {
            offline,
            ..RunOptions::default()
        };
        engine
            .run(&options)
            .map(|_| ())
            .map_err(|error| format!("{error}: {:?}", recording.events()))
    }

    /// Keeps only the steps `claims` and `keep` of the pipeline.
    fn only(&self, keep: &str) {
        let path = self.root().join("pipeline.yaml");
        let text = std::fs::read_to_string(&path).unwrap();
        let (head, steps) = text.split_once("steps:\n").unwrap();
        let kept: Vec<&str> = steps
            .lines()
            .filter(|line| line.starts_with("  claims:") || line.starts_with(&format!("  {keep}:")))
            .collect();
        std::fs::write(&path, format!("{head}steps:\n{}\n", kept.join("\n"))).unwrap();
    }

    fn predictions(&self, step: &str) -> Vec<PredictionRecord> {
        let path = self
            .root()
            .join(format!("results/arms/predictions/{step}.jsonl"));
        std::fs::read_to_string(&path)
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()))
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

fn counts(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
    pairs
        .iter()
        .map(|(name, count)| (name.to_string(), *count))
        .collect()
}

#[test]
fn every_model_arm_predicts_and_a_prompt_edit_costs_exactly_its_calls() {
    let setup = Setup::new();
    setup.run().unwrap();
    // A5 asks once per commit (2); every other arm once per claim (5); the prose arm skips the
    // claim whose note came back empty.
    assert_eq!(setup.server.count(), 2 + 5 + 5 + 5 + 5 + 4);
    let a5 = setup.predictions("a5");
    assert_eq!(a5.len(), 5);
    assert!(a5.iter().all(|p| p.verdict == Verdict::Flipped));
    let charged: Vec<_> = a5.iter().map(|p| p.tokens_in).collect();
    assert_eq!(charged, [Some(1000), Some(0), Some(0), Some(1000), Some(0)]);
    for step in ["a5c", "a6_base", "a6_risk"] {
        let predictions = setup.predictions(step);
        assert_eq!(predictions.len(), 5, "{step}");
        assert!(
            predictions.iter().all(|p| p.verdict == Verdict::Flipped),
            "{step}"
        );
        assert!(
            predictions.iter().all(|p| p.cost == Some(0.00026)),
            "{step}"
        );
    }
    let prose = setup.predictions("prose");
    assert_eq!(
        prose.len(),
        5,
        "a claim without a note is reported, not dropped"
    );
    let unjudged: Vec<_> = prose
        .iter()
        .filter(|p| p.verdict == Verdict::None)
        .collect();
    assert_eq!(unjudged.len(), 1);
    assert!(unjudged[0].claim.ends_with("test_empty"));
    assert_eq!(
        unjudged[0].evidence["problem"],
        "no prose note: the renderer gave an empty note"
    );
    let notes = std::fs::read_to_string(setup.root().join("results/arms/notes/prose_render.jsonl"))
        .unwrap();
    assert_eq!(notes.lines().count(), 5);
    // The prose arm's user message holds the note, not the test source.
    let prose_requests: Vec<_> = setup
        .server
        .requests()
        .into_iter()
        .filter(|request| request.body.contains("CLAIM:\\nA note about"))
        .collect();
    assert_eq!(prose_requests.len(), 4);

    // Nothing changed: nothing to run, no request.
    let nothing = counts(&[
        ("claims", 0),
        ("a5", 0),
        ("a5c", 0),
        ("a6_base", 0),
        ("a6_risk", 0),
        ("prose_render", 0),
        ("prose", 0),
    ]);
    assert_eq!(setup.to_run(), nothing);
    let before = setup.server.count();
    setup.run().unwrap();
    assert_eq!(setup.server.count(), before);

    // One sentence appended to the A6 risk prompt: the two steps that use it, one call per claim
    // they judge, and nothing else.
    let prompt = setup.root().join("prompts/a6_risk.txt");
    let original = std::fs::read_to_string(&prompt).unwrap();
    std::fs::write(&prompt, format!("{original}Be brief.\n")).unwrap();
    let edited = counts(&[
        ("claims", 0),
        ("a5", 0),
        ("a5c", 0),
        ("a6_base", 0),
        ("a6_risk", 5),
        ("prose_render", 0),
        ("prose", 4),
    ]);
    assert_eq!(setup.to_run(), edited);

    // Offline, a miss fails clearly and sends nothing.
    let offline = setup.run_with(true);
    let error = offline.unwrap_err();
    assert!(
        error.contains("--offline and no cached answer of model `judge`"),
        "{error}"
    );
    assert_eq!(setup.server.count(), before);

    setup.run().unwrap();
    assert_eq!(setup.server.count(), before + 9);
    let all = setup.server.requests();
    let edited_requests = &all[before..];
    assert!(
        edited_requests
            .iter()
            .all(|request| request.body.contains("Be brief."))
    );

    // Reverting makes everything cached again.
    std::fs::write(&prompt, original).unwrap();
    assert_eq!(setup.to_run(), nothing);
    setup.run().unwrap();
    assert_eq!(setup.server.count(), before + 9);

    // The key is nowhere under the project: workdir, cache, results.
    let mut files = vec![setup.root().to_path_buf()];
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(
                std::fs::read_dir(&path)
                    .unwrap()
                    .map(|entry| entry.unwrap().path()),
            );
        } else {
            let bytes = std::fs::read(&path).unwrap();
            let text = String::from_utf8_lossy(&bytes);
            assert!(!text.contains(KEY), "the key is in {}", path.display());
        }
    }
    let recorded = setup.server.requests();
    assert!(
        recorded
            .iter()
            .all(|request| request.header("authorization") == Some(&format!("Bearer {KEY}")))
    );
}

/// A model ladder: `model: [judge, second]` repeats a step per entry, named `<step>@<entry>`, each
/// asking its own model; the prose arm's rungs read the renderer's rung of the same model.
#[test]
fn a_list_of_models_runs_each_arm_once_per_model_under_predictable_names() {
    let setup = Setup::new();
    let path = setup.root().join("pipeline.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let url = setup.server.url("/v1");
    let text = text
        .replace(
            "steps:\n",
            &format!(
                "  second: {{provider: openai, model: second-model, base_url: \"{url}\", api_key_env: {KEY_VARIABLE}}}\nsteps:\n"
            ),
        )
        .replace(
            "prompt: prompts/a6_risk.txt, model: judge}",
            "prompt: prompts/a6_risk.txt, model: [judge, second]}",
        )
        .replace(
            "prompt: prompts/prose_render.txt, model: judge}",
            "prompt: prompts/prose_render.txt, model: [judge, second]}",
        )
        .replace(
            "model: judge, notes: prose_render}",
            "model: [judge, second], notes: prose_render}",
        );
    std::fs::write(&path, text).unwrap();
    let pipeline = setup.pipeline();
    let names: Vec<&str> = pipeline
        .steps
        .iter()
        .map(|step| step.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "claims",
            "a5",
            "a5c",
            "a6_base",
            "a6_risk@judge",
            "a6_risk@second",
            "prose_render@judge",
            "prose_render@second",
            "prose@judge",
            "prose@second"
        ]
    );
    assert_eq!(
        pipeline.step("prose@second").unwrap().needs,
        ["claims", "prose_render@second"]
    );
    setup.run().unwrap();
    for model in ["judge", "second"] {
        for step in ["a6_risk", "prose"] {
            let predictions = setup.predictions(&format!("{step}@{model}"));
            assert_eq!(predictions.len(), 5, "{step}@{model}");
            let expected = if model == "judge" {
                "test-model"
            } else {
                "second-model"
            };
            assert!(
                predictions
                    .iter()
                    .filter(|p| p.verdict != Verdict::None)
                    .all(|p| p.evidence["model"] == expected),
                "{step}@{model}"
            );
        }
    }
    // Each rung asked its own model: a6_risk and the renderer once per claim, the prose arm once
    // per rendered claim.
    let by_model = |model: &str| {
        setup
            .server
            .requests()
            .into_iter()
            .filter(|request| request.json()["model"] == model)
            .count()
    };
    assert_eq!(by_model("second-model"), 5 + 5 + 4);
}

/// An entry whose key is not set runs as its fallback: the same keys as the fallback entry named
/// directly, so what one run asked the other finds cached.
#[test]
fn an_entry_without_its_key_uses_its_fallback_with_the_fallbacks_keys() {
    let setup = Setup::new();
    let path = setup.root().join("pipeline.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let url = setup.server.url("/v1");
    let text = text.replace(
        "steps:\n",
        &format!(
            "  hosted: {{provider: openai, model: hosted-model, api_key_env: CLAIMFLOW_IT_NEVER_SET_KEY, fallback: judge}}\n  other: {{provider: openai, model: other-model, base_url: \"{url}\", api_key_env: CLAIMFLOW_IT_NEVER_SET_KEY, fallback: judge}}\nsteps:\n"
        ),
    );
    std::fs::write(&path, &text).unwrap();
    let pipeline = setup.pipeline();
    assert_eq!(pipeline.models["hosted"].model, "test-model");
    assert_eq!(
        pipeline.notices(),
        [
            "model hosted: CLAIMFLOW_IT_NEVER_SET_KEY is not set; using judge (openai, test-model) — set CLAIMFLOW_IT_NEVER_SET_KEY to use hosted-model",
            "model other: CLAIMFLOW_IT_NEVER_SET_KEY is not set; using judge (openai, test-model) — set CLAIMFLOW_IT_NEVER_SET_KEY to use other-model"
        ]
    );
    setup.run().unwrap();
    let asked = setup.server.count();
    // The arms now name `hosted`: every call is the one `judge` already made.
    std::fs::write(&path, text.replace("model: judge}", "model: hosted}")).unwrap();
    assert!(setup.to_run().values().all(|count| *count == 0));
    setup.run().unwrap();
    assert_eq!(setup.server.count(), asked);
}

/// How often the coin has seen each request body.
static SEEN: Mutex<BTreeMap<String, u64>> = Mutex::new(BTreeMap::new());

/// A model that answers A6 at random, seeded: the n-th time a request is asked, the verdict is a
/// seeded draw of (its text, n), so the answers a claim's replicates get are the same whatever the
/// order the requests arrive in.
fn coin(index: usize, request: &Recorded) -> Reply {
    let body = request.json();
    let system = body["messages"][0]["content"].as_str().unwrap_or_default();
    if system.contains("prose") || system.contains("semantics_preserving") {
        return model(index, request);
    }
    let user = body["messages"][1]["content"].as_str().unwrap_or_default();
    let nth = {
        let mut seen = SEEN.lock().unwrap();
        let count = seen.entry(user.to_string()).or_insert(0);
        *count += 1;
        *count - 1
    };
    let seed = u64::from_le_bytes(
        Digest::of(user.as_bytes()).as_bytes()[..8]
            .try_into()
            .unwrap(),
    );
    let draw = claimflow::stats::SplitMix64::new(seed).at(nth);
    let verdict = if draw.is_multiple_of(2) {
        "held"
    } else {
        "flipped"
    };
    Reply::json(answer(
        Provider::Openai,
        &format!(r#"{{"verdict": "{verdict}"}}"#),
    ))
}

/// `replicates: k` asks each call k times under k sample indices: k prediction sets, their
/// pairwise agreement recomputable from the sets, and one more replicate costs one more call per
/// claim.
#[test]
fn replicates_ask_each_call_again_and_report_their_agreement() {
    let setup = Setup::with_model(coin);
    let path = setup.root().join("pipeline.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let with = |k: u32| {
        text.replace(
            "prompt: prompts/a6_risk.txt, model: judge}",
            &format!("prompt: prompts/a6_risk.txt, model: judge, replicates: {k}}}"),
        )
    };
    std::fs::write(&path, with(3)).unwrap();
    setup.run().unwrap();
    let sets: Vec<Vec<PredictionRecord>> = (0..3)
        .map(|replicate| {
            let file = if replicate == 0 {
                "results/arms/predictions/a6_risk.jsonl".to_string()
            } else {
                format!("results/arms/replicates/a6_risk/{replicate}.jsonl")
            };
            std::fs::read_to_string(setup.root().join(file))
                .unwrap()
                .lines()
                .map(|line| serde_json::from_str(line).unwrap())
                .collect()
        })
        .collect();
    for set in &sets {
        assert_eq!(set.len(), 5);
    }
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(setup.root().join("results/arms/calls/a6_risk.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["replicates"], 3);
    let pairs = summary["replicate_agreement"]["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 3);
    let mut pooled = (0, 0);
    for pair in pairs {
        let (first, second) = (
            pair["first"].as_str().unwrap().parse::<usize>().unwrap(),
            pair["second"].as_str().unwrap().parse::<usize>().unwrap(),
        );
        let agreed = sets[first]
            .iter()
            .zip(&sets[second])
            .filter(|(left, right)| {
                assert_eq!(left.claim, right.claim);
                left.verdict == right.verdict
            })
            .count();
        assert_eq!(pair["agreed"], agreed, "{pair}");
        assert_eq!(pair["compared"], 5, "{pair}");
        pooled = (pooled.0 + agreed, pooled.1 + 5);
    }
    let expected = pooled.0 as f64 / pooled.1 as f64;
    assert!((summary["replicate_agreement"]["pooled"].as_f64().unwrap() - expected).abs() < 1e-12);
    // The coin is fair over 15 answers: not every replicate can agree with every other.
    assert!(expected < 1.0, "{summary}");

    // One more replicate: one more call per claim, and nothing else.
    let before = setup.server.count();
    std::fs::write(&path, with(4)).unwrap();
    setup.run().unwrap();
    assert_eq!(setup.server.count() - before, 5);
    assert!(
        setup
            .root()
            .join("results/arms/replicates/a6_risk/3.jsonl")
            .is_file()
    );
}

/// A model arm over a seeded sample asks only the sampled claims; a larger `size` with the same
/// seed contains the smaller sample, and a call is keyed by its claim, not by the sample it came
/// from, so enlarging the sample asks only the claims it adds.
#[test]
fn enlarging_a_sample_asks_only_the_claims_it_adds() {
    let setup = Setup::new();
    let (path, head) = labelled_pipeline(&setup);
    let with = |size: u32| {
        format!(
            "{head}steps:
  claims: {{uses: mine-claims}}
  truth: {{uses: oracle, needs: [claims]}}
  sample: {{uses: stratify, needs: [truth], with: {{flip_rate: 0.5, seed: 1, size: {size}}}}}
  a6_risk: {{uses: llm-arm, needs: [claims, sample], with: {{question: a6_risk, prompt: prompts/a6_risk.txt, model: judge}}}}
"
        )
    };
    let judged = || -> BTreeSet<String> {
        setup
            .predictions("a6_risk")
            .into_iter()
            .map(|prediction| prediction.claim)
            .collect()
    };

    std::fs::write(&path, with(2)).unwrap();
    setup.run().unwrap();
    let small = judged();
    assert_eq!(small.len(), 2, "{small:?}");
    assert_eq!(setup.server.count(), 2, "one call per sampled claim");

    std::fs::write(&path, with(4)).unwrap();
    setup.run().unwrap();
    let large = judged();
    assert_eq!(large.len(), 4, "{large:?}");
    assert!(small.is_subset(&large), "{small:?} not in {large:?}");
    assert_eq!(
        setup.server.count(),
        4,
        "the larger sample asked only the two claims it added"
    );
}

/// How the stand-in `llm-arm` below reduces its calls into predictions.
#[derive(Clone, Copy)]
enum Rule {
    /// As shipped.
    Shipped,
    /// As shipped, under a bumped reduction version.
    Bumped,
    /// Every verdict the other way, under another reduction version: a changed publish rule.
    Inverted,
}

/// `llm-arm` with its reduction (what it publishes as predictions) replaced by `rule`; every
/// call is `llm-arm`'s own, under the same keys.
struct Reworked {
    arm: LlmArm,
    rule: Rule,
}

impl StepKind for Reworked {
    fn name(&self) -> &'static str {
        self.arm.name()
    }
    fn version(&self) -> u32 {
        self.arm.version()
    }
    fn about(&self) -> &'static str {
        self.arm.about()
    }
    fn params(&self) -> ParamsDecl {
        self.arm.params()
    }
    fn role(&self, step: &StepSpec) -> Role {
        self.arm.role(step)
    }
    fn strategy_version(&self, step: &StepSpec) -> Option<u32> {
        self.arm.strategy_version(step)
    }
    fn execution(&self) -> claimflow::engine::Execution {
        self.arm.execution()
    }
    fn plan(
        &self,
        ctx: &StepContext,
        upstream: &Upstream,
    ) -> Result<claimflow::engine::Planned, StepError> {
        self.arm.plan(ctx, upstream)
    }
    fn run_async<'a>(
        &'a self,
        ctx: &'a StepContext<'a>,
        item: &'a ItemPlan,
        upstream: &'a Upstream,
    ) -> claimflow::engine::ItemFuture<'a> {
        self.arm.run_async(ctx, item, upstream)
    }
    fn reduction(&self, step: &StepSpec) -> Option<u32> {
        let shipped = self.arm.reduction(step)?;
        Some(match self.rule {
            Rule::Shipped => shipped,
            Rule::Bumped => shipped + 1,
            Rule::Inverted => shipped + 2,
        })
    }
    fn reduce(&self, ctx: &StepContext, items: &[ItemResult]) -> Result<ItemOutput, StepError> {
        let reduced = self.arm.reduce(ctx, items)?;
        let Rule::Inverted = self.rule else {
            return Ok(reduced);
        };
        let mut scored: Vec<Scored> = reduced.decode()?;
        for prediction in &mut scored[0].predictions {
            prediction.verdict = match prediction.verdict {
                Verdict::Flipped => Verdict::Held,
                Verdict::Held => Verdict::Flipped,
                Verdict::None => Verdict::None,
            };
        }
        Ok(ItemOutput::records(scored))
    }
    fn publish(&self, ctx: &StepContext, items: &[ItemResult]) -> Result<(), StepError> {
        self.arm.publish(ctx, items)
    }
}

/// `stats` reads what an arm reduced its calls into, keyed: before, it read the arm's
/// predictions file back from the results directory, outside its key, so a changed publish rule
/// (or an edited results file) left it served from the cache with verdicts it never saw.
#[test]
fn stats_recomputes_when_an_arms_publish_rule_changes_and_only_then() {
    let setup = Setup::new();
    let (path, head) = labelled_pipeline(&setup);
    std::fs::write(
        &path,
        format!(
            "{head}steps:
  claims: {{uses: mine-claims}}
  truth: {{uses: oracle, needs: [claims]}}
  a6_risk: {{uses: llm-arm, needs: [claims], with: {{question: a6_risk, prompt: prompts/a6_risk.txt, model: judge}}}}
  stats: {{uses: stats, needs: [claims, truth, a6_risk], with: {{bootstrap: 100}}}}
"
        ),
    )
    .unwrap();
    let run = |rule: Rule| -> BTreeMap<String, (usize, usize)> {
        let registry = Registry::with(vec![
            Arc::new(ClaimsFromFile) as Arc<dyn StepKind>,
            Arc::new(LabelsFromFile),
            Arc::new(StatsStep),
            Arc::new(Reworked {
                arm: LlmArm::default(),
                rule,
            }),
        ]);
        let pipeline = setup.pipeline_in(&registry);
        let recording = Recording::default();
        let engine = Engine::new(&pipeline, &registry, &recording).unwrap();
        let summary = engine
            .run(&RunOptions::default())
            .unwrap_or_else(|error| panic!("{error}: {:?}", recording.events()));
        summary
            .steps
            .into_iter()
            .map(|(step, status)| match status {
                StepStatus::Done { computed, cached } => (step, (computed, cached)),
                other => panic!("step `{step}`: {other:?}"),
            })
            .collect()
    };
    let stats = || std::fs::read_to_string(setup.root().join("results/arms/stats.json")).unwrap();
    let flipped = || {
        setup
            .predictions("a6_risk")
            .iter()
            .filter(|prediction| prediction.verdict == Verdict::Flipped)
            .count()
    };

    let first = run(Rule::Shipped);
    assert_eq!(first["a6_risk"], (5, 0));
    assert_eq!(first["stats"], (1, 0));
    assert_eq!(flipped(), 5, "the model says every claim flipped");
    let (calls, shipped) = (setup.server.count(), stats());

    // Unchanged: served from the cache, even with the predictions file gone (it is written again).
    std::fs::remove_file(setup.root().join("results/arms/predictions/a6_risk.jsonl")).unwrap();
    let again = run(Rule::Shipped);
    assert_eq!(again["stats"], (0, 1));
    assert_eq!(flipped(), 5);

    // A new reduction version that derives the same predictions: reduced again, but `stats` reads
    // the same output and is served from the cache.
    let bumped = run(Rule::Bumped);
    assert_eq!(bumped["a6_risk"], (0, 5));
    assert_eq!(bumped["stats"], (0, 1));

    // A changed publish rule: no call is asked again, and `stats` scores what it now derives.
    let inverted = run(Rule::Inverted);
    assert_eq!(inverted["a6_risk"], (0, 5));
    assert_eq!(inverted["stats"], (1, 0));
    assert_eq!(setup.server.count(), calls, "no call was asked again");
    assert_eq!(flipped(), 0, "every verdict is now `held`");
    assert_ne!(stats(), shipped, "stats scored the inverted verdicts");
}

/// What a run's model calls cost is the run's own: two runs in one process at once each report
/// their own calls and cost (the running total used to live in a static, summed over every run
/// of the process), and a run served from the cache spent nothing.
#[test]
fn two_runs_in_one_process_each_report_their_own_spend() {
    let (first, second) = (Setup::new(), Setup::new());
    first.only("a6_risk");
    second.only("a5");
    let (pipelines, registry) = ([first.pipeline(), second.pipeline()], registry());
    let summary = |pipeline: &Pipeline| -> RunSummary {
        let recording = Recording::default();
        let engine = Engine::new(pipeline, &registry, &recording).unwrap();
        engine
            .run(&RunOptions::default())
            .unwrap_or_else(|error| panic!("{error}: {:?}", recording.events()))
    };
    let (one, two) = std::thread::scope(|scope| {
        let one = scope.spawn(|| summary(&pipelines[0]));
        let two = scope.spawn(|| summary(&pipelines[1]));
        (one.join().unwrap(), two.join().unwrap())
    });
    assert_eq!(one.spent.calls, 5, "one call per claim");
    assert_eq!(two.spent.calls, 2, "one call per commit");
    for (setup, step, summary) in [(&first, "a6_risk", &one), (&second, "a5", &two)] {
        assert_eq!(summary.spent.calls, setup.server.count() as u64);
        let cost: f64 = setup
            .predictions(step)
            .iter()
            .filter_map(|prediction| prediction.cost)
            .sum();
        assert!(cost > 0.0);
        assert!(
            (summary.spent.cost - cost).abs() < 1e-12,
            "{step}: {summary:?}"
        );
    }
    let again = summary(&first.pipeline());
    assert_eq!((again.spent.calls, again.spent.cost), (0, 0.0));
}

/// Writes `labels.json` (the claims of `test_f` flipped, the others held) for the setup's
/// pipeline; returns the pipeline's path and its text up to its `steps:`.
fn labelled_pipeline(setup: &Setup) -> (std::path::PathBuf, String) {
    let claims: Vec<ClaimRecord> =
        serde_json::from_str(&std::fs::read_to_string(setup.root().join("claims.json")).unwrap())
            .unwrap();
    let labels: Vec<TruthRecord> = claims
        .iter()
        .map(|claim| TruthRecord {
            claim: claim.id.clone(),
            label: if claim.node.ends_with("::test_f") {
                Label::Flipped
            } else {
                Label::Held
            },
            reason: None,
            parent_runs: Vec::new(),
            child_runs: Vec::new(),
        })
        .collect();
    std::fs::write(
        setup.root().join("labels.json"),
        serde_json::to_string(&labels).unwrap(),
    )
    .unwrap();
    let path = setup.root().join("pipeline.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let (head, _) = text.split_once("steps:\n").unwrap();
    (path, head.to_string())
}

/// The pipeline's model arms share the cut and the guard with `check`: a commit whose source diff
/// is over 12,000 characters is asked about with the cut diff, marked, and gets a verdict. The
/// guard used to refuse the cut's own marker, so every claim of such a commit had none.
#[test]
fn a_commit_whose_diff_is_over_the_cut_is_asked_about_and_gets_a_verdict() {
    let mut repository = FixtureRepo::new();
    let big: String = (0..600)
        .map(|index| format!("VALUE_{index:04} = {index}  # a constant of the table\n"))
        .collect();
    repository
        .commit(
            "base",
            &[
                ("pkg/a.py", Some("def f():\n    return 1\n")),
                (
                    "tests/test_a.py",
                    Some("from pkg.a import f\n\ndef test_f():\n    assert f() == 1\n"),
                ),
            ],
        )
        .commit(
            "f returns 2, and a big table",
            &[
                ("pkg/a.py", Some("def f():\n    return 2\n")),
                ("pkg/table.py", Some(&big)),
            ],
        );
    let commits: Vec<String> = repository
        .commits()
        .iter()
        .map(ToString::to_string)
        .collect();
    let claims = json!([{
        "id": format!("lib@{}::tests/test_a.py::test_f", commits[0]),
        "repo": "lib", "parent": commits[0], "commit": commits[1],
        "node": "tests/test_a.py::test_f",
        "source": "def test_f():\n    assert f() == 1\n",
        "assertions": ["assert f() == 1"],
        "fixtures": [],
    }]);
    let project = tempfile::tempdir().unwrap();
    let root = project.path();
    std::fs::write(root.join("claims.json"), claims.to_string()).unwrap();
    std::fs::create_dir(root.join("prompts")).unwrap();
    std::fs::write(
        root.join("prompts/a6_risk.txt"),
        super::prompt("a6_risk.txt"),
    )
    .unwrap();
    let server = FakeServer::start(model);
    let pipeline = format!(
        r#"version: 1
name: big-diff
repos:
  - {{name: lib, path: "{repo}", branch: main}}
models:
  judge: {{provider: openai, model: test-model, base_url: "{url}", api_key_env: {KEY_VARIABLE}, retries: 0}}
steps:
  claims: {{uses: mine-claims}}
  a6_risk: {{uses: llm-arm, needs: [claims], with: {{question: a6_risk, prompt: prompts/a6_risk.txt, model: judge}}}}
"#,
        repo = repository.path().display(),
        url = server.url("/v1"),
    );
    // SAFETY: as in `Setup::with_model`: every test that sets the variable sets the same value.
    unsafe { std::env::set_var(KEY_VARIABLE, KEY) };
    let registry = registry();
    let pipeline = load_str(&pipeline, Path::new("pipeline.yaml"), root, &registry)
        .unwrap_or_else(|problems| panic!("{problems}"));
    let recording = Recording::default();
    let engine = Engine::new(&pipeline, &registry, &recording).unwrap();
    engine
        .run(&RunOptions::default())
        .unwrap_or_else(|error| panic!("{error}: {:?}", recording.events()));

    let requests = server.requests();
    assert_eq!(requests.len(), 1, "the claim is asked about");
    let user = requests[0].json()["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        user.lines()
            .any(|line| line.starts_with("[diff truncated: 12000 of ")),
        "{user}"
    );
    let published = root.join("results/big-diff/predictions/a6_risk.jsonl");
    let text = std::fs::read_to_string(&published).unwrap_or_else(|error| {
        let listing: Vec<_> = walk(root);
        panic!(
            "{}: {error}; the project holds {listing:#?}",
            published.display()
        )
    });
    let predictions: Vec<PredictionRecord> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(predictions.len(), 1);
    assert_eq!(predictions[0].verdict, Verdict::Flipped, "{text}");
}

/// Every file under `root`, for a failure's message.
fn walk(root: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(path) = pending.pop() {
        match std::fs::read_dir(&path) {
            Ok(entries) => pending.extend(entries.flatten().map(|entry| entry.path())),
            Err(_) => files.push(path),
        }
    }
    files
}
