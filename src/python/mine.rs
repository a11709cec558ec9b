//! Mining one candidate commit: with its parent checked out, choose interpreters, build (or reuse)
//! an environment for each in turn, ask pytest what the touched test modules define (and what the
//! untouched modules importing a touched file inherit from it), and turn that into claims. The
//! first interpreter under which pytest collects the files wins; a commit that no interpreter can
//! collect is excluded with every attempt's reason.
//!
//! Trying interpreters is bounded: at most [`MineSettings::interpreters`] of them per commit, and
//! none after a failure no interpreter can fix (a pinned requirement with no release at all) or
//! after two interpreters in a row failed to install the same requirement. An environment that
//! failed to build is not built again for the next commit (see `ensure_environment`). Only a
//! failure of the machine or the network (the index unreachable) is an error to retry; every other
//! environment failure excludes the commit, kind `environment`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use super::build_error::BuildFailure;
use super::claims::{ClaimSummary, claims_from_collection};
use super::collect::{
    CollectError, CollectRequest, CollectionProblem, collect_tests, test_modules,
};
use super::dated_index::ReleaseBound;
use super::environment::{FailedBuilds, ensure_environment};
use super::environment_request::EnvironmentRequest;
use super::importers::files_reaching;
use super::interpreters::{choose_interpreters_at, installed_interpreters};
use super::metadata::{ProjectMetadata, parses_as_python_3};
use crate::records::{AttemptRecord, CommitRecord, ExclusionKind, ExclusionRecord, MinedClaim};

/// How to mine: what the pipeline says about interpreters, pins and limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MineSettings {
    /// Interpreters to try (`3.11`, `3.9`); empty means choose from the commit's metadata.
    pub python: Vec<String>,
    /// The repository's pinned requirements, which may pin pytest.
    pub dependencies: Vec<String>,
    /// At most this many claims per commit.
    pub limit: Option<usize>,
    /// How long one collection may take.
    pub timeout: Duration,
    /// At most this many interpreters are tried for a commit.
    pub interpreters: usize,
    /// The parent commit's date (seconds since the epoch): it chooses the pytest of its era.
    pub date: Option<i64>,
    /// The bound on the releases installed (the repository's `releases: at-commit`: the parent's
    /// committer time); `None` installs the newest.
    pub released_before: Option<ReleaseBound>,
}

/// How many interpreters a commit gets when the pipeline does not say: the commit's own era first,
/// then two more chances, rather than a fresh install under every interpreter on the machine.
pub const DEFAULT_INTERPRETERS: usize = 3;

/// Why a commit could not be mined at all (as opposed to being excluded, which is a result).
#[derive(Debug, thiserror::Error)]
pub enum MineError {
    /// An environment build failed for a reason of the machine or the network (the package index
    /// unreachable, a timeout): an error to retry, never a result to cache.
    #[error("no environment could be built for commit {commit}: {reason}")]
    NoEnvironment { commit: String, reason: String },
}

/// What mining one commit gave.
pub struct MinedCommit {
    /// The claims, in collection order.
    pub claims: Vec<MinedClaim>,
    /// Counts and versions, once pytest has answered.
    pub summary: Option<ClaimSummary>,
    /// Why the commit gave no claims, if it gave none.
    pub exclusion: Option<ExclusionRecord>,
}

impl MinedCommit {
    fn excluded(
        record: &CommitRecord,
        kind: ExclusionKind,
        reason: String,
        attempts: Vec<AttemptRecord>,
    ) -> Self {
        MinedCommit {
            claims: Vec::new(),
            summary: None,
            exclusion: Some(ExclusionRecord {
                repo: record.repo.clone(),
                commit: record.commit.clone(),
                parent: record.parent.clone(),
                kind,
                reason,
                attempts,
            }),
        }
    }
}

/// The test modules among `files` that failed to collect only because an import failed (a missing
/// optional dependency: structlog's `tests/test_twisted.py` without Twisted), with pytest's message,
/// when some other module is left to collect. Any other error (syntax, a broken conftest) gives
/// `None`: it may be the interpreter's fault, and the next interpreter should get the whole set.
fn import_failures(
    errors: &[CollectionProblem],
    files: &[String],
) -> Option<BTreeMap<String, String>> {
    let mut failing = BTreeMap::new();
    for error in errors {
        let file = error.node.split("::").next().unwrap_or(&error.node);
        let import_error =
            error.message.contains("ImportError") || error.message.contains("ModuleNotFoundError");
        if !import_error || !files.iter().any(|candidate| candidate == file) {
            return None;
        }
        failing.insert(file.to_string(), last_error_line(&error.message));
    }
    (!failing.is_empty() && failing.len() < files.len()).then_some(failing)
}

/// The test modules to collect at the parent: the touched ones, and the untouched ones that import
/// a touched file, since a test class there may inherit tests defined in it (a mixin in
/// `tests/mixins.py` or `tests/__init__.py`). Which of an importer's tests become claims is decided
/// after collection, by where pytest says each test function is defined.
/// Returns every module to collect, and which of them are such untouched importers.
fn files_to_collect(worktree: &Path, touched: &[String]) -> (Vec<String>, BTreeSet<String>) {
    let mut files = test_modules(worktree, touched);
    let own: BTreeSet<String> = files.iter().cloned().collect();
    let importers: BTreeSet<String> = test_modules(worktree, &files_reaching(worktree, touched))
        .into_iter()
        .filter(|file| !own.contains(file))
        .collect();
    files.extend(importers.iter().cloned());
    files.sort();
    files.dedup();
    (files, importers)
}

/// The untouched importers among `files` that failed to collect, for any reason, with pytest's
/// message, when some other module is left to collect. Such a module is collected only for what
/// it inherits from a touched file; its own trouble (a syntax error under this interpreter, a
/// missing optional dependency, a broken class body) must not cost the touched modules' claims.
fn failing_importers(
    errors: &[CollectionProblem],
    files: &[String],
    importers: &BTreeSet<String>,
) -> Option<BTreeMap<String, String>> {
    let mut failing = BTreeMap::new();
    for error in errors {
        let file = error.node.split("::").next().unwrap_or(&error.node);
        if importers.contains(file) && files.iter().any(|candidate| candidate == file) {
            failing.insert(file.to_string(), last_error_line(&error.message));
        }
    }
    (!failing.is_empty() && failing.len() < files.len()).then_some(failing)
}

/// The line of a pytest collection message that names the error, else a generic one.
fn last_error_line(message: &str) -> String {
    message
        .lines()
        .rev()
        .find(|line| line.contains("Error"))
        .unwrap_or("failed to collect")
        .trim()
        .to_string()
}

/// Mines the commit whose parent is checked out at `worktree`, using `scratch` for collection files;
/// an environment already in `failed` (the run's failed builds) is not built again. `notify` hears a plain line whenever mining falls back to another interpreter. `Err` only when
/// an environment build failed for a reason of the machine or the network (see [`MineError`]).
pub fn mine_commit(
    record: &CommitRecord,
    settings: &MineSettings,
    worktree: &Path,
    scratch: &Path,
    failed: &FailedBuilds,
    notify: &dyn Fn(&str),
) -> Result<MinedCommit, MineError> {
    let (files, importers) = files_to_collect(worktree, &record.test_files);
    let interpreters = match interpreters_for(record, settings, worktree, &files) {
        Ok(interpreters) => interpreters,
        Err(excluded) => return Ok(*excluded),
    };
    let cap = settings.interpreters.max(1);
    let mut tries = Tries::default();
    for (index, interpreter) in interpreters.iter().enumerate() {
        if index == cap {
            tries.stopped = Some(untried(&interpreters[cap..], cap));
            break;
        }
        if let Some(last) = tries.attempts.last() {
            let tried = Fallback {
                index,
                of: cap.min(interpreters.len()),
                last,
            };
            notify(&tried.line(record, interpreter));
        }
        let version = interpreter.version.to_string();
        let request = EnvironmentRequest::for_commit_at(
            interpreter,
            worktree,
            &settings.dependencies,
            settings.date,
        )
        .released_before(settings.released_before.clone());
        let environment = match tries.build(record, &request, &version, failed)? {
            Built::Ready(environment) => *environment,
            Built::TryNext => continue,
            Built::Stop => break,
        };
        let attempt = Attempt {
            environment: &environment,
            worktree,
            scratch: &scratch.join(format!("python-{version}")),
            timeout: settings.timeout,
            version: &version,
        };
        if let Some(mined) = tries.collect(record, settings, &attempt, &files, &importers) {
            return Ok(mined);
        }
    }
    Ok(tries.excluded(record))
}

/// What mining one commit has tried so far, across interpreters.
#[derive(Default)]
struct Tries {
    /// Each failed interpreter's reason, in the order tried.
    attempts: Vec<AttemptRecord>,
    /// Whether some environment was built, so pytest was asked.
    reached_pytest: bool,
    /// Why no further interpreter is tried, when that is not simply the end of the list.
    stopped: Option<String>,
    /// The requirement the previous environment build blamed, if the previous attempt was one.
    previous_culprit: Option<String>,
}

/// What building one interpreter's environment leaves the loop over interpreters to do.
enum Built {
    /// The environment is ready: collect under it.
    Ready(Box<super::environment_request::Environment>),
    /// The build failed; the next interpreter may do better.
    TryNext,
    /// The build failed in a way no further interpreter can fix.
    Stop,
}

impl Tries {
    /// Builds (or reuses) the environment `request` asks for; a failure is recorded as an attempt
    /// and read for what it means for the next interpreters. `Err` when the machine or the network
    /// failed.
    fn build(
        &mut self,
        record: &CommitRecord,
        request: &EnvironmentRequest,
        version: &str,
        failed: &FailedBuilds,
    ) -> Result<Built, MineError> {
        let error = match ensure_environment(request, failed) {
            Ok(environment) => {
                self.previous_culprit = None;
                self.reached_pytest = true;
                return Ok(Built::Ready(Box::new(environment)));
            }
            Err(error) => error,
        };
        self.attempts.push(AttemptRecord {
            interpreter: version.to_string(),
            error: format!("environment: {error}"),
        });
        let previous = self.previous_culprit.as_deref();
        match after_failed_build(&error, &self.attempts, previous, version) {
            AfterFailedBuild::Infrastructure => Err(MineError::NoEnvironment {
                commit: record.commit.clone(),
                reason: joined(&self.attempts),
            }),
            AfterFailedBuild::Stop(reason) => {
                self.stopped = Some(reason);
                Ok(Built::Stop)
            }
            AfterFailedBuild::TryNext(culprit) => {
                self.previous_culprit = culprit;
                Ok(Built::TryNext)
            }
        }
    }

    /// Collects the commit's test modules under one interpreter: its claims, or `None` with the
    /// failure recorded as an attempt.
    fn collect(
        &mut self,
        record: &CommitRecord,
        settings: &MineSettings,
        attempt: &Attempt,
        files: &[String],
        importers: &BTreeSet<String>,
    ) -> Option<MinedCommit> {
        let (collected, collected_files, left_out) = collect_leaving_out(attempt, files, importers);
        match collected {
            Ok(collection) => {
                let collected = Collected {
                    files: &collected_files,
                    collection: &collection,
                    left_out,
                    environment: attempt.environment,
                    version: attempt.version,
                };
                Some(mined_from(record, settings, collected, &self.attempts))
            }
            Err(error) => {
                self.attempts.push(AttemptRecord {
                    interpreter: attempt.version.to_string(),
                    error: format!("collection: {error}"),
                });
                None
            }
        }
    }

    /// The exclusion of a commit no interpreter could collect, with every attempt's reason.
    fn excluded(self, record: &CommitRecord) -> MinedCommit {
        let mut reason = joined(&self.attempts);
        if let Some(stopped) = self.stopped {
            reason = format!("{reason}; stopped: {stopped}");
        }
        let kind = if self.reached_pytest {
            ExclusionKind::Collection
        } else {
            ExclusionKind::Environment
        };
        MinedCommit::excluded(record, kind, reason, self.attempts)
    }
}

/// A fall back to another interpreter after the previous one failed.
struct Fallback<'a> {
    /// The position of the interpreter now tried, from 0.
    index: usize,
    /// How many interpreters may be tried at most.
    of: usize,
    /// The previous interpreter's failure.
    last: &'a AttemptRecord,
}

impl Fallback<'_> {
    /// The progress line announcing the fall back to `interpreter`.
    fn line(
        &self,
        record: &CommitRecord,
        interpreter: &super::interpreters::Interpreter,
    ) -> String {
        let short: String = record.commit.chars().take(10).collect();
        format!(
            "{}@{short}: trying python {} ({} of at most {}) after python {} failed: {}",
            record.repo,
            interpreter.version,
            self.index + 1,
            self.of,
            self.last.interpreter,
            one_line(&self.last.error)
        )
    }
}

/// The interpreters to try for a commit, newest first; or its exclusion, when none fits or it
/// has no test module to collect.
fn interpreters_for(
    record: &CommitRecord,
    settings: &MineSettings,
    worktree: &Path,
    files: &[String],
) -> Result<Vec<super::interpreters::Interpreter>, Box<MinedCommit>> {
    let mut metadata = ProjectMetadata::read(worktree);
    // Test modules in Python 2 syntax say more about the era than an absent python_requires.
    metadata.python_2_source |= files.iter().any(|file| {
        std::fs::read_to_string(worktree.join(file)).is_ok_and(|text| !parses_as_python_3(&text))
    });
    let interpreters = match choose_interpreters_at(
        &metadata,
        &settings.python,
        installed_interpreters(),
        settings.date,
    ) {
        Ok(interpreters) => interpreters,
        Err(error) => {
            return Err(Box::new(MinedCommit::excluded(
                record,
                ExclusionKind::NoInterpreter,
                error.to_string(),
                vec![],
            )));
        }
    };
    if files.is_empty() {
        return Err(Box::new(MinedCommit::excluded(
            record,
            ExclusionKind::NoTestModules,
            format!(
                "none of the touched test files ({}) is a test module at the parent or imported by one",
                record.test_files.join(", ")
            ),
            vec![],
        )));
    }
    Ok(interpreters)
}

/// What one interpreter collected.
struct Collected<'a> {
    files: &'a [String],
    collection: &'a super::collect::Collection,
    left_out: Vec<AttemptRecord>,
    environment: &'a super::environment_request::Environment,
    version: &'a str,
}

/// The claims of a collection, with the attempts before it; a commit whose tests hold no
/// assertion statement is excluded.
fn mined_from(
    record: &CommitRecord,
    settings: &MineSettings,
    collected: Collected,
    attempts: &[AttemptRecord],
) -> MinedCommit {
    let mut mined = claims_from_collection(
        record,
        collected.files,
        collected.collection,
        settings.limit,
    );
    mined.summary.attempts = attempts.to_vec();
    mined.summary.left_out = collected.left_out;
    mined.summary.dropped_requirements = collected
        .environment
        .dropped
        .iter()
        .map(|dropped| dropped.spec.clone())
        .collect();
    let exclusion = mined
        .claims
        .is_empty()
        .then(|| no_claims(record, mined.summary.collected, collected.version, attempts));
    MinedCommit {
        claims: mined.claims,
        summary: Some(mined.summary),
        exclusion,
    }
}

/// What an environment build that failed under one interpreter means for the next ones.
enum AfterFailedBuild {
    /// The machine or the network failed: no interpreter would do better.
    Infrastructure,
    /// No further interpreter is tried, for this reason.
    Stop(String),
    /// The next interpreter is tried; the requirement this build blamed, if any.
    TryNext(Option<String>),
}

/// Reads a failed build: a requirement with no release, or one that failed the same way under the
/// previous interpreter, stops the tries; another interpreter may fix the rest.
fn after_failed_build(
    error: &super::build_error::PythonError,
    attempts: &[AttemptRecord],
    previous_culprit: Option<&str>,
    version: &str,
) -> AfterFailedBuild {
    let culprit = error.requirement().map(str::to_string);
    match error.failure() {
        BuildFailure::Infrastructure => AfterFailedBuild::Infrastructure,
        BuildFailure::NoSuchRequirement => AfterFailedBuild::Stop(format!(
            "`{}` has no release on the package index, which no interpreter can fix",
            culprit.as_deref().unwrap_or("a requirement")
        )),
        BuildFailure::Interpreter => match (&culprit, previous_culprit) {
            (Some(culprit), Some(previous)) if culprit == previous => {
                let before = &attempts[attempts.len() - 2].interpreter;
                AfterFailedBuild::Stop(format!(
                    "`{culprit}` failed to install the same way under python {before} and \
                     {version}; another interpreter is unlikely to fix it"
                ))
            }
            _ => AfterFailedBuild::TryNext(culprit),
        },
    }
}

/// One interpreter's try at collecting a commit's tests.
struct Attempt<'a> {
    environment: &'a super::environment_request::Environment,
    worktree: &'a Path,
    scratch: &'a Path,
    timeout: Duration,
    version: &'a str,
}

/// Collects `files`, leaving out and collecting again without the files whose collection fails
/// (an importer that no longer imports, then modules that fail to import at all): the collection,
/// the files it covers, and what was left out and why.
fn collect_leaving_out(
    attempt: &Attempt,
    files: &[String],
    importers: &BTreeSet<String>,
) -> (
    Result<super::collect::Collection, CollectError>,
    Vec<String>,
    Vec<AttemptRecord>,
) {
    let mut collected_files = files.to_vec();
    let mut left_out = Vec::new();
    let mut dropped_import_failures = false;
    // Each retry collects fewer files, so this ends.
    let collected = loop {
        let collected = collect_tests(&CollectRequest {
            environment: attempt.environment,
            worktree: attempt.worktree,
            files: &collected_files,
            scratch: attempt.scratch,
            timeout: attempt.timeout,
        });
        let Err(CollectError::Errors { errors, .. }) = &collected else {
            break collected;
        };
        let failing = match failing_importers(errors, &collected_files, importers) {
            Some(failing) => failing,
            None if !dropped_import_failures => match import_failures(errors, &collected_files) {
                Some(failing) => {
                    dropped_import_failures = true;
                    failing
                }
                None => break collected,
            },
            None => break collected,
        };
        collected_files.retain(|file| !failing.contains_key(file));
        left_out.extend(failing.into_iter().map(|(file, message)| AttemptRecord {
            interpreter: attempt.version.to_string(),
            error: format!("{file}: {message}"),
        }));
    };
    (collected, collected_files, left_out)
}

/// Why the interpreters past the cap were not tried.
fn untried(rest: &[super::interpreters::Interpreter], cap: usize) -> String {
    format!(
        "{} more interpreter(s) allowed but not tried ({}): at most {cap} per commit \
         (raise mine-claims' `interpreters` to try more)",
        rest.len(),
        rest.iter()
            .map(|interpreter| interpreter.version.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The exclusion of a commit whose collected tests hold no assertion statement.
fn no_claims(
    record: &CommitRecord,
    collected: usize,
    version: &str,
    attempts: &[AttemptRecord],
) -> ExclusionRecord {
    ExclusionRecord {
        repo: record.repo.clone(),
        commit: record.commit.clone(),
        parent: record.parent.clone(),
        kind: ExclusionKind::NoClaims,
        reason: format!(
            "{collected} tests collected under python {version}, none with an assertion statement"
        ),
        attempts: attempts.to_vec(),
    }
}

/// Every attempt's reason, for an exclusion or an error.
fn joined(attempts: &[AttemptRecord]) -> String {
    attempts
        .iter()
        .map(|attempt| format!("python {}: {}", attempt.interpreter, attempt.error))
        .collect::<Vec<_>>()
        .join("; ")
}

/// An attempt's error on one line for a progress line: its first line (what failed) and, when the
/// error goes on (pip's output), its last line (pip's verdict), each cut to 160 characters.
fn one_line(error: &str) -> String {
    let cut = |line: &str| match line.char_indices().nth(160) {
        Some((index, _)) => format!("{}…", &line[..index]),
        None => line.to_string(),
    };
    let mut lines = error.lines().map(str::trim).filter(|line| !line.is_empty());
    let first = lines.next().unwrap_or("");
    match lines.next_back() {
        Some(last) => format!("{} … {}", cut(first), cut(last)),
        None => cut(first),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(node: &str, message: &str) -> CollectionProblem {
        CollectionProblem {
            node: node.into(),
            message: message.into(),
        }
    }

    #[test]
    fn a_fallback_line_says_what_failed_and_how_it_ended() {
        assert_eq!(
            one_line("collection: SyntaxError"),
            "collection: SyntaxError"
        );
        assert_eq!(
            one_line(
                "environment: install `six` for python 3.13.0: Looking in links: /w\nCollecting pytest\nERROR: No matching distribution found for six==0.0.1\n"
            ),
            "environment: install `six` for python 3.13.0: Looking in links: /w … ERROR: No matching distribution found for six==0.0.1"
        );
        assert_eq!(one_line(&"x".repeat(200)).chars().count(), 161);
    }

    #[test]
    fn only_modules_missing_an_import_are_left_out() {
        // structlog at 21b3d16's parent: Twisted is a docs extra, so test_twisted.py cannot import.
        let files = [
            "tests/test_base.py".to_string(),
            "tests/test_twisted.py".to_string(),
        ];
        let twisted = problem(
            "tests/test_twisted.py",
            "src/structlog/twisted.py:19: in <module>\n    from twisted.python import log\nE   ImportError: No module named twisted.python",
        );
        let failing = import_failures(std::slice::from_ref(&twisted), &files).unwrap();
        assert_eq!(
            failing.into_iter().collect::<Vec<_>>(),
            [(
                "tests/test_twisted.py".to_string(),
                "E   ImportError: No module named twisted.python".to_string()
            )]
        );
        // A syntax error may be the interpreter's fault; every module failing leaves nothing to mine.
        let syntax = problem("tests/test_base.py", "E   SyntaxError: invalid syntax");
        assert_eq!(import_failures(&[twisted.clone(), syntax], &files), None);
        let base = problem(
            "tests/test_base.py",
            "E   ModuleNotFoundError: No module named 'x'",
        );
        assert_eq!(import_failures(&[twisted.clone(), base], &files), None);
        let conftest = problem("conftest.py", "E   ImportError: No module named pretend");
        assert_eq!(import_failures(&[conftest], &files), None);
    }
}
