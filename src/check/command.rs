//! `claimflow check`, end to end: open the range, read the claims, run the cascade, and hand the
//! results back for the command line to print. Everything the stages need is made here, once,
//! and only when a stage asks for it (a checkout for `exec`, the changed definitions for `a4`, the
//! models for a model stage).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::anchors::ChangedCode;
use super::cascade::{self, Decision, StageRunner};
use super::claim::{CheckResult, MemoryClaim, SourceFormat, Stage};
use super::error::CheckError;
use super::exec::ExecStage;
use super::model_stage::{self, ModelSettings, Models};
use super::range::{DEFAULT_FROM, DEFAULT_TO, Range};
use super::write_back::{Invalidation, WriteError, WriteReport, write_back};
use crate::engine::Session;
use crate::steps::Environments;

/// What a check is asked to do.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// A directory inside the repository (default: the current directory).
    pub repo: PathBuf,
    pub from: Option<String>,
    pub to: Option<String>,
    /// The stages, in order.
    pub stages: Vec<Stage>,
    /// Claim files (JSON Lines, Markdown memory files, …).
    pub sources: Vec<PathBuf>,
    /// The format of every file of `sources`, where detection cannot tell (`--source-format`).
    pub source_format: Option<SourceFormat>,
    /// Find the memory files of the repository.
    pub discover: bool,
    /// Mark each flipped claim where it lives (`--write`): never deleted, only annotated.
    pub write: bool,
    /// The largest memory file read or written back, in bytes.
    pub max_memory_file_size: u64,
    pub model: ModelSettings,
    /// The check's own cache and scratch space when no pipeline names one.
    pub workdir: Option<PathBuf>,
    /// How long one check command or pytest run may take.
    pub timeout: Duration,
}

/// What a check found.
pub struct CheckOutcome {
    pub results: Vec<CheckResult>,
    /// `from..to`, short ids.
    pub range: String,
    /// Where the claims' files are relative to: the repository's root.
    pub root: PathBuf,
    /// What to tell the user once (a model standing in for a missing key).
    pub notices: Vec<String>,
    /// What `--write` marked, or why it wrote nothing, when it was asked: a refused write leaves
    /// the results standing.
    pub written: Option<Result<WriteReport, WriteError>>,
}

/// Runs a check: the claims of `options.sources`, through `options.stages`.
pub fn check(
    options: &CheckOptions,
    environments: Arc<dyn Environments>,
) -> Result<CheckOutcome, CheckError> {
    let range = Range::open(
        &options.repo,
        options.from.as_deref().unwrap_or(DEFAULT_FROM),
        options.to.as_deref().unwrap_or(DEFAULT_TO),
    )?;
    let claims = super::sources::read_sources_limited(
        &range.root,
        &options.sources,
        options.source_format,
        options.discover,
        &[range.from, range.to],
        options.max_memory_file_size,
    )
    .map_err(|error| CheckError::Sources(Box::new(error)))?;
    let mut outcome = check_claims(options, &range, &claims, environments)?;
    if options.write {
        outcome.written = Some(write(
            &range,
            &claims,
            &outcome.results,
            options.max_memory_file_size,
        ));
    }
    Ok(outcome)
}

/// Marks the flipped claims in their files as false since the range's end, each with its
/// evidence as the reason; a second write of the same range changes nothing.
fn write(
    range: &Range,
    claims: &[MemoryClaim],
    results: &[CheckResult],
    max_file_size: u64,
) -> Result<WriteReport, WriteError> {
    let since = Invalidation::of_commit(&range.repository, range.to).map_err(WriteError::Commit)?;
    write_back(
        claims,
        results,
        &since,
        |result| result.evidence.clone(),
        max_file_size,
    )
}

/// Runs the cascade over claims already read.
pub fn check_claims(
    options: &CheckOptions,
    range: &Range,
    claims: &[MemoryClaim],
    environments: Arc<dyn Environments>,
) -> Result<CheckOutcome, CheckError> {
    let workdir = options
        .workdir
        .clone()
        .unwrap_or_else(|| default_workdir(&range.root));
    let mut runner = Runner {
        options,
        range,
        workdir,
        environments,
        session: Session::new(),
        changed: None,
        models: None,
        notices: Vec::new(),
    };
    let results = cascade::run(&options.stages, claims, &mut runner)?;
    Ok(CheckOutcome {
        results,
        range: range.describe(),
        root: range.root.clone(),
        notices: runner.notices,
        written: None,
    })
}

/// `$CLAIMFLOW_CACHE_DIR/check/<digest of the repository's path>` (else under
/// `~/.cache/claimflow`): outside the repository, so a check leaves its working tree clean.
pub fn default_workdir(root: &Path) -> PathBuf {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let digest = blake3::hash(root.as_os_str().as_encoded_bytes());
    crate::python::cache_dir()
        .join("check")
        .join(&digest.to_hex()[..16])
}

/// Runs each stage, building what it needs on first use.
struct Runner<'a> {
    options: &'a CheckOptions,
    range: &'a Range,
    workdir: PathBuf,
    environments: Arc<dyn Environments>,
    /// One check is one run: its own session.
    session: Arc<Session>,
    changed: Option<ChangedCode<'a>>,
    models: Option<Models>,
    notices: Vec<String>,
}

impl StageRunner for Runner<'_> {
    fn decide(
        &mut self,
        stage: &Stage,
        claims: &[&MemoryClaim],
    ) -> Result<Vec<Decision>, CheckError> {
        match stage {
            Stage::Exec => ExecStage {
                repository: &self.range.repository,
                root: &self.range.root,
                from: self.range.from,
                to: self.range.to,
                to_time: self.range.to_time(),
                workdir: &self.workdir,
                environments: Arc::clone(&self.environments),
                session: &self.session,
                timeout: self.options.timeout,
            }
            .decide(claims),
            Stage::A4 => {
                if self.changed.is_none() {
                    self.changed = Some(ChangedCode::read(
                        &self.range.repository,
                        self.range.from,
                        self.range.to,
                    )?);
                }
                let changed = self.changed.as_mut().expect("read just now");
                Ok(super::anchors::decide(changed, claims))
            }
            Stage::Model(question) => {
                if self.models.is_none() {
                    let models = Models::resolve(&self.options.model, question, &self.workdir)?;
                    self.notices.extend(models.notices.iter().cloned());
                    self.models = Some(models);
                }
                let models = self.models.as_ref().expect("resolved just now");
                model_stage::decide(
                    self.range,
                    models,
                    question,
                    self.options.model.offline,
                    claims,
                )
            }
        }
    }
}
