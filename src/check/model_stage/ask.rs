//! Asking the model: the claims as the `llm-arm` step reads them, the generated pipeline run by
//! the engine (once to find what is cached under `--offline`, once to ask), and its predictions
//! read back as decisions. A call that fails leaves its claim without a verdict.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::claims_kind::CheckClaims;
use super::mirror::{mirror, write_if_changed};
use super::models::Models;
use crate::check::cascade::Decision;
use crate::check::claim::{MemoryClaim, Verdict};
use crate::check::error::CheckError;
use crate::check::range::Range;
use crate::engine::{Engine, EngineError, Event, Reporter, RunOptions};
use crate::pipeline::{self, Pipeline};
use crate::records::{ClaimRecord, PredictionRecord, Verdict as PredictionVerdict};
use crate::steps::{LlmArm, Registry};

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
                crate::check::claim::Anchor::File { path } => path.clone(),
                crate::check::claim::Anchor::Symbol { path, name } if path.is_empty() => {
                    name.clone()
                }
                crate::check::claim::Anchor::Symbol { path, name } => format!("{path}::{name}"),
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
            Event::StepFailed { step, error, .. } => {
                self.steps
                    .lock()
                    .expect("failures lock")
                    .push(format!("step `{step}`: {error}"));
            }
            _ => {}
        }
    }
}
