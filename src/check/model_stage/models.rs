//! Which model the model stage asks, and where its cache lives: the `models:` of `--pipeline`
//! (and that pipeline's workdir and prompt for the question), or a models block of its own — the
//! first hosted model whose key variable is set, else the local model claimflow provisions.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::claims_kind::CheckClaims;
use crate::check::error::CheckError;
use crate::pipeline::{self, ModelSpec};
use crate::steps::Registry;

/// The prompts claimflow ships, by question: used unless `--pipeline` names its own.
const PROMPTS: [(&str, &str); 4] = [
    ("a5", include_str!("../../../prompts/a5.txt")),
    ("a5c", include_str!("../../../prompts/a5c.txt")),
    ("a6_base", include_str!("../../../prompts/a6_base.txt")),
    ("a6_risk", include_str!("../../../prompts/a6_risk.txt")),
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
    pub(super) specs: BTreeMap<String, ModelSpec>,
    pub(super) entry: String,
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

    pub(super) fn prompt(&self, question: &str) -> Option<&str> {
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
