//! The model stage: the claims no cheaper stage decided are asked of a model arm (`a6_risk` by
//! default), by running the pipeline engine on a small pipeline generated in memory: a step that
//! hands the engine the claims, and an `llm-arm` step asking the question. So the calls are the
//! engine's own: keyed exactly as a pipeline's `llm-arm` keys them (the question, the model's
//! settings, the prompt's content, the claim's text and the source-only diff of the range), kept
//! in the content-addressed cache (a repeated check asks nothing), refused by the same guard when a
//! message would show a test file, retried, priced and made offline the same way.
//!
//! This is the one module of `check` that calls into the engine, the step kinds and the models.
//!
//! The engine opens repositories by branch; the range's end may be a detached commit, so the
//! pipeline's repository is a bare repository in the check's workdir that borrows the user's
//! objects (git's `alternates`) and has one branch, `check`, at `--to`. Nothing is written to the
//! user's repository.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::cascade::Decision;
use super::claim::{MemoryClaim, Verdict};
use super::error::CheckError;
use super::range::Range;
use crate::engine::{
    Engine, EngineError, Event, ItemOutput, ItemPlan, ItemResult, NoParams, ParamsDecl, Reporter,
    Role, RunOptions, StepContext, StepError, StepKind, Upstream,
};
use crate::pipeline::{self, ModelSpec, Pipeline, StepSpec};
use crate::records::{ClaimRecord, PredictionRecord, Verdict as PredictionVerdict};
use crate::steps::{LlmArm, Registry};

/// The prompts claimflow ships, by question: used unless `--pipeline` names its own.
const PROMPTS: [(&str, &str); 4] = [
    ("a5", include_str!("../../prompts/a5.txt")),
    ("a5c", include_str!("../../prompts/a5c.txt")),
    ("a6_base", include_str!("../../prompts/a6_base.txt")),
    ("a6_risk", include_str!("../../prompts/a6_risk.txt")),
];

/// The models a check asks when no `--pipeline` names any, by the variable holding the key,
/// tried in this order: (variable, provider, default model id, price in and out per million).
const HOSTED: [(&str, &str, &str, f64, f64); 3] = [
    ("OPENAI_API_KEY", "openai", "gpt-4.1-mini", 0.40, 1.60),
    (
        "ANTHROPIC_API_KEY",
        "anthropic",
        "claude-3-5-haiku-latest",
        0.80,
        4.00,
    ),
    ("GEMINI_API_KEY", "gemini", "gemini-2.0-flash", 0.10, 0.40),
];

/// The local model's entry, when no key is set.
const LOCAL: &str = "{provider: llama-server, max_output_tokens: 128}";

/// How the model stage is set up.
#[derive(Debug, Clone, Default)]
pub struct ModelSettings {
    /// A pipeline whose `models:` (and workdir, and prompt for the question) to use.
    pub pipeline: Option<PathBuf>,
    /// The `models:` entry to ask (default: the one the pipeline's `llm-arm` step for the question
    /// asks, else the pipeline's first).
    pub model: Option<String>,
    /// Ask nothing: cached answers only.
    pub offline: bool,
    /// Where relative paths of `--pipeline` resolve (the directory claimflow runs in).
    pub project_root: PathBuf,
}

/// The models a check may ask and where its cache lives.
pub struct Models {
    /// The entries (one generated, or the `--pipeline`'s).
    specs: BTreeMap<String, ModelSpec>,
    entry: String,
    /// The check's workdir: the pipeline's when one is named.
    pub workdir: PathBuf,
    /// The prompt file's text for each question a `--pipeline` step asks.
    prompts: BTreeMap<String, String>,
    /// What to tell the user once (the model stood in for a missing key).
    pub notices: Vec<String>,
}

impl Models {
    /// The models of `settings`, with `default_workdir` as the cache when no pipeline is named.
    pub fn resolve(
        settings: &ModelSettings,
        question: &str,
        default_workdir: &Path,
    ) -> Result<Models, CheckError> {
        let Some(file) = &settings.pipeline else {
            return generated(default_workdir, settings.model.as_deref());
        };
        let loaded = pipeline::load(file, &settings.project_root, &Registry::builtin())
            .map_err(|diagnostics| CheckError::Input(format!("--pipeline: {diagnostics}")))?;
        let asking = loaded.steps.iter().find(|step| {
            step.uses == "llm-arm"
                && step.with.get("question").and_then(|q| q.as_str()) == Some(question)
        });
        let entry = match (&settings.model, asking) {
            (Some(model), _) => model.clone(),
            (None, Some(step)) => step.with["model"].as_str().unwrap_or_default().to_string(),
            (None, None) => loaded.models.keys().next().cloned().ok_or_else(|| {
                CheckError::Input(format!(
                    "--pipeline {}: it declares no `models:`",
                    file.display()
                ))
            })?,
        };
        if !loaded.models.contains_key(&entry) {
            return Err(CheckError::Input(format!(
                "--model {entry}: {} declares no such model; it declares {}",
                file.display(),
                loaded.models.keys().cloned().collect::<Vec<_>>().join(", ")
            )));
        }
        let mut prompts = BTreeMap::new();
        if let Some(prompt) = asking
            .and_then(|step| step.with.get("prompt"))
            .and_then(|p| p.as_str())
        {
            let path = loaded.resolve(prompt);
            let text = std::fs::read_to_string(&path).map_err(|error| {
                CheckError::Input(format!(
                    "--pipeline: read the prompt {}: {error}",
                    path.display()
                ))
            })?;
            prompts.insert(question.to_string(), text);
        }
        Ok(Models {
            notices: loaded.notices(),
            specs: loaded.models.clone(),
            entry,
            workdir: loaded.workdir.clone(),
            prompts,
        })
    }

    fn prompt(&self, question: &str) -> Option<&str> {
        self.prompts.get(question).map(String::as_str).or_else(|| {
            PROMPTS
                .iter()
                .find(|(name, _)| *name == question)
                .map(|(_, text)| *text)
        })
    }
}

/// The models block of a check without a pipeline: the first hosted model whose key is set,
/// else the local model (said once).
fn generated(workdir: &Path, model: Option<&str>) -> Result<Models, CheckError> {
    let set = |variable: &str| std::env::var_os(variable).is_some_and(|value| !value.is_empty());
    let (entry, yaml, notices) = match HOSTED.iter().find(|(variable, ..)| set(variable)) {
        Some((variable, provider, default, input, output)) => (
            provider.to_string(),
            format!(
                "{{provider: {provider}, model: {}, api_key_env: {variable}, price_per_mtok: {{input: {input}, output: {output}}}}}",
                serde_json::json!(model.unwrap_or(default))
            ),
            Vec::new(),
        ),
        None => (
            "local".to_string(),
            LOCAL.to_string(),
            vec![
                "no OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY is set: the model stage asks \
                 the local model claimflow provisions (SmolLM2-135M: it proves the path, its verdicts \
                 are poor); set a key or pass --pipeline to ask a better one"
                    .to_string(),
            ],
        ),
    };
    Ok(Models {
        specs: BTreeMap::from([(entry.clone(), spec_of(&entry, &yaml)?)]),
        entry,
        workdir: workdir.to_path_buf(),
        prompts: BTreeMap::new(),
        notices,
    })
}

/// The validated entry `yaml` declares (the loader checks it as any pipeline's).
fn spec_of(entry: &str, yaml: &str) -> Result<ModelSpec, CheckError> {
    let text = format!(
        "version: 1\nname: models\nmodels:\n  {entry}: {yaml}\nsteps:\n  claims: {{uses: check-claims}}\n"
    );
    let registry = Registry::with(vec![Arc::new(CheckClaims {
        records: Vec::new(),
    })]);
    let loaded = pipeline::load_str(&text, Path::new("<check>"), Path::new("/"), &registry)
        .map_err(|diagnostics| CheckError::Input(format!("--model: {diagnostics}")))?;
    Ok(loaded.models[entry].clone())
}

/// Asks `question` about `claims` for the range; one decision per claim.
pub fn decide(
    range: &Range,
    models: &Models,
    question: &str,
    offline: bool,
    claims: &[&MemoryClaim],
) -> Result<Vec<Decision>, CheckError> {
    let mut asked: Vec<ClaimRecord> = Vec::new();
    let mut seen = BTreeSet::new();
    let name = repository_name(&range.root);
    for claim in claims {
        if seen.insert(claim.id.clone()) {
            asked.push(record_of(claim, &name, range));
        }
    }
    let setup = Setup::new(range, models, question, &name)?;
    let mut answers: BTreeMap<String, Decision> = BTreeMap::new();
    if offline {
        let cached = setup.cached(&asked)?;
        asked.retain(|claim| {
            let keep = cached.contains(&claim.id);
            if !keep {
                answers.insert(
                    claim.id.clone(),
                    Decision::pass_on("offline, and no cached answer for this claim"),
                );
            }
            keep
        });
    }
    // A call that fails (after the client's retries) leaves its claim without a verdict; the
    // others' answers are cached by then, and a second run publishes them without asking again.
    for _attempt in 0..2 {
        if asked.is_empty() {
            break;
        }
        match setup.run(&asked, offline)? {
            Ran::Answered(predictions) => {
                for prediction in predictions {
                    answers.insert(prediction.claim.clone(), decision_of(&prediction));
                }
                asked.clear();
            }
            Ran::ItemsFailed(failed) => asked.retain(|claim| match failed.get(&claim.id) {
                Some(error) => {
                    answers.insert(
                        claim.id.clone(),
                        Decision::pass_on(format!("the call failed: {error}")),
                    );
                    false
                }
                None => true,
            }),
        }
    }
    Ok(claims
        .iter()
        .map(|claim| {
            answers
                .get(&claim.id)
                .cloned()
                .unwrap_or_else(|| Decision::pass_on("no answer"))
        })
        .collect())
}

/// A claim as the `llm-arm` step reads one: its text (and what it is anchored to) in place of a
/// test's source, the range as its commit pair.
fn record_of(claim: &MemoryClaim, repo: &str, range: &Range) -> ClaimRecord {
    let mut text = claim.text.trim().to_string();
    if !claim.anchors.is_empty() {
        let anchors: Vec<String> = claim
            .anchors
            .iter()
            .map(|anchor| match anchor {
                super::claim::Anchor::File { path } => path.clone(),
                super::claim::Anchor::Symbol { path, name } if path.is_empty() => name.clone(),
                super::claim::Anchor::Symbol { path, name } => format!("{path}::{name}"),
            })
            .collect();
        text.push_str(&format!("\n(about: {})", anchors.join(", ")));
    }
    ClaimRecord {
        id: claim.id.clone(),
        repo: repo.to_string(),
        parent: range.from.to_string(),
        commit: range.to.to_string(),
        node: claim.source.to_string(),
        source: text,
        assertions: Vec::new(),
        fixtures: Vec::new(),
    }
}

fn decision_of(prediction: &PredictionRecord) -> Decision {
    let answer = prediction.evidence["answer"]
        .as_str()
        .unwrap_or_default()
        .trim()
        .to_string();
    let model = prediction.evidence["model"].as_str().unwrap_or("the model");
    let usage = (
        prediction.tokens_in.unwrap_or(0),
        prediction.tokens_out.unwrap_or(0),
        prediction.cost.unwrap_or(0.0),
    );
    let decision = match prediction.verdict {
        PredictionVerdict::Flipped => {
            Decision::decided(Verdict::Flipped, format!("{model} answered {answer}"))
        }
        PredictionVerdict::Held => {
            Decision::decided(Verdict::Held, format!("{model} answered {answer}"))
        }
        PredictionVerdict::None => {
            let problem = prediction.evidence["problem"]
                .as_str()
                .unwrap_or("no verdict in the answer");
            Decision::pass_on(format!(
                "{model}'s answer gave no verdict ({problem}): {answer}"
            ))
        }
    };
    decision.with_usage(usage.0, usage.1, usage.2)
}

/// The repository's name in the generated pipeline: its directory's, as pipelines name theirs.
fn repository_name(root: &Path) -> String {
    let name: String = root
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    // Names become file names: no leading `.` or `-`.
    let name = name.trim_start_matches(['-', '.']);
    if name.is_empty() {
        "repository".to_string()
    } else {
        name.to_string()
    }
}

/// Everything a run of the generated pipeline needs, made once per check.
struct Setup<'a> {
    models: &'a Models,
    question: &'a str,
    /// The generated pipeline's root: its prompt and its repository live here.
    root: PathBuf,
    repository: String,
}

/// What one engine run gave.
enum Ran {
    Answered(Vec<PredictionRecord>),
    /// Calls that failed, by claim id, with the error.
    ItemsFailed(BTreeMap<String, String>),
}

impl<'a> Setup<'a> {
    fn new(
        range: &Range,
        models: &'a Models,
        question: &'a str,
        repository: &str,
    ) -> Result<Self, CheckError> {
        let root = models.workdir.join("check");
        let prompt = models
            .prompt(question)
            .ok_or_else(|| CheckError::Input(format!("no prompt for the question `{question}`")))?;
        let prompt_path = root.join("prompts").join(format!("{question}.txt"));
        write_if_changed(&prompt_path, prompt)?;
        mirror(range, &root.join("repository.git"))?;
        Ok(Setup {
            models,
            question,
            root,
            repository: repository.to_string(),
        })
    }

    /// The generated pipeline over `claims`, with the registry that knows its kinds.
    fn pipeline(
        &self,
        claims: &[ClaimRecord],
        results: &Path,
    ) -> Result<(Pipeline, Registry), CheckError> {
        let text = format!(
            "version: 1\nname: check\nworkdir: {workdir}\nresults: {results}\nrepos:\n  - name: {name}\n    path: {repo}\n    branch: check\n\
             models:\n  {entry}: {{provider: llama-server}}\nsteps:\n  claims: {{uses: check-claims}}\n  \
             {question}: {{uses: llm-arm, needs: [claims], with: {{question: {question}, prompt: prompts/{question}.txt, model: {entry}}}}}\n",
            workdir = serde_json::json!(self.models.workdir),
            results = serde_json::json!(results),
            name = serde_json::json!(self.repository),
            repo = serde_json::json!(self.root.join("repository.git")),
            entry = serde_json::json!(self.models.entry),
            question = self.question,
        );
        let registry = Registry::with(vec![
            Arc::new(CheckClaims {
                records: claims.to_vec(),
            }),
            Arc::new(LlmArm::default()),
        ]);
        let mut generated = pipeline::load_str(&text, Path::new("<check>"), &self.root, &registry)
            .map_err(|diagnostics| {
                CheckError::failed(
                    "generate the model stage's pipeline",
                    diagnostics.to_string(),
                )
            })?;
        // The entry named is the user's (or the generated one), validated where it was read.
        generated.models = self.models.specs.clone();
        Ok((generated, registry))
    }

    /// The claims whose call is cached.
    fn cached(&self, claims: &[ClaimRecord]) -> Result<BTreeSet<String>, CheckError> {
        let results = self.results_dir()?;
        let (generated, registry) = self.pipeline(claims, results.path())?;
        let engine =
            Engine::new(&generated, &registry, &crate::engine::Silent).map_err(engine_error)?;
        let options = RunOptions {
            until: Some("claims".to_string()),
            offline: true,
            ..RunOptions::default()
        };
        engine.run(&options).map_err(engine_error)?;
        Ok(engine
            .explain(self.question, None)
            .map_err(engine_error)?
            .into_iter()
            .filter(|item| item.cached)
            .map(|item| item.item)
            .collect())
    }

    /// Runs the generated pipeline over `claims`.
    fn run(&self, claims: &[ClaimRecord], offline: bool) -> Result<Ran, CheckError> {
        let results = self.results_dir()?;
        let (generated, registry) = self.pipeline(claims, results.path())?;
        let failures = Failures::default();
        let engine = Engine::new(&generated, &registry, &failures).map_err(engine_error)?;
        let options = RunOptions {
            offline,
            ..RunOptions::default()
        };
        match engine.run(&options) {
            Ok(_) => {}
            Err(EngineError::StepsFailed(_) | EngineError::StepsRejectedInput(_)) => {
                let failed = failures.items.lock().expect("failures lock").clone();
                if failed.is_empty() {
                    let steps = failures.steps.lock().expect("failures lock").join("; ");
                    return Err(CheckError::failed("ask the model", steps));
                }
                return Ok(Ran::ItemsFailed(failed));
            }
            Err(error) => return Err(engine_error(error)),
        }
        let file = results
            .path()
            .join("predictions")
            .join(format!("{}.jsonl", self.question));
        let text = std::fs::read_to_string(&file)
            .map_err(|error| CheckError::failed(format!("read {}", file.display()), error))?;
        let mut predictions = Vec::new();
        for line in text.lines().filter(|line| !line.trim().is_empty()) {
            predictions.push(
                serde_json::from_str(line).map_err(|error| {
                    CheckError::failed(format!("read {}", file.display()), error)
                })?,
            );
        }
        Ok(Ran::Answered(predictions))
    }

    /// A results directory of this run alone (two checks at once do not share one).
    fn results_dir(&self) -> Result<tempfile::TempDir, CheckError> {
        let parent = self.root.join("results");
        std::fs::create_dir_all(&parent)
            .map_err(|error| CheckError::failed(format!("create {}", parent.display()), error))?;
        tempfile::tempdir_in(&parent).map_err(|error| {
            CheckError::failed(format!("create a directory in {}", parent.display()), error)
        })
    }
}

fn engine_error(error: EngineError) -> CheckError {
    match error {
        EngineError::Input(message) => CheckError::Input(format!("the model stage: {message}")),
        other => CheckError::failed("the model stage", other),
    }
}

/// Keeps the failures a run reports, by item and by step.
#[derive(Default)]
struct Failures {
    items: Mutex<BTreeMap<String, String>>,
    steps: Mutex<Vec<String>>,
}

impl Reporter for Failures {
    fn event(&self, event: &Event) {
        match event {
            Event::ItemFailed { item, error, .. } => {
                self.items
                    .lock()
                    .expect("failures lock")
                    .insert(item.clone(), error.clone());
            }
            Event::StepFailed { step, error } => {
                self.steps
                    .lock()
                    .expect("failures lock")
                    .push(format!("step `{step}`: {error}"));
            }
            _ => {}
        }
    }
}

fn write_if_changed(path: &Path, text: &str) -> Result<(), CheckError> {
    if std::fs::read_to_string(path).is_ok_and(|existing| existing == text) {
        return Ok(());
    }
    let parent = path.parent().expect("a file in a directory");
    std::fs::create_dir_all(parent)
        .map_err(|error| CheckError::failed(format!("create {}", parent.display()), error))?;
    crate::cache::write_atomic_in(parent, path, text.as_bytes())
        .map_err(|error| CheckError::failed(format!("write {}", path.display()), error))
}

/// A bare repository at `at` reading the range's repository's objects, its `check` branch at the
/// range's end.
fn mirror(range: &Range, at: &Path) -> Result<(), CheckError> {
    let failed = |what: &str| {
        let what = format!("{what} {}", at.display());
        move |error: git2::Error| CheckError::failed(what, error)
    };
    if !at.join("HEAD").is_file() {
        git2::Repository::init_bare(at).map_err(failed("create the repository"))?;
    }
    let objects = range.repository.commondir().join("objects");
    let objects = objects.canonicalize().unwrap_or(objects);
    write_if_changed(
        &at.join("objects").join("info").join("alternates"),
        &format!("{}\n", objects.display()),
    )?;
    let mirror = git2::Repository::open_bare(at).map_err(failed("open"))?;
    mirror
        .reference(
            "refs/heads/check",
            range.to,
            true,
            "claimflow check: the range's end",
        )
        .map_err(failed("point the check branch of"))?;
    Ok(())
}

/// The step kind that hands the generated pipeline its claims (held in memory; their content is
/// the item's key).
struct CheckClaims {
    records: Vec<ClaimRecord>,
}

impl StepKind for CheckClaims {
    fn name(&self) -> &'static str {
        "check-claims"
    }

    fn version(&self) -> u32 {
        1
    }

    fn about(&self) -> &'static str {
        "the claims `claimflow check` asks a model about"
    }

    fn params(&self) -> ParamsDecl {
        ParamsDecl::of::<NoParams>()
    }

    fn role(&self, _step: &StepSpec) -> Role {
        Role::Claims
    }

    fn items(&self, _ctx: &StepContext, _upstream: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        Ok(vec![ItemPlan::new("claims").params(
            serde_json::to_value(&self.records).expect("claims serialize"),
        )])
    }

    fn run(
        &self,
        _ctx: &StepContext,
        _item: &ItemPlan,
        _upstream: &Upstream,
    ) -> Result<ItemOutput, StepError> {
        Ok(ItemOutput::records(&self.records))
    }

    fn publish(&self, _ctx: &StepContext, _items: &[ItemResult]) -> Result<(), StepError> {
        Ok(())
    }
}
