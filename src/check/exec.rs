//! The `exec` stage: a claim that carries its own test or check command is decided by running it
//! at the range's end, in a fresh checkout of `--to` under the sandbox the oracle's test processes
//! get (an allow-listed environment with no secrets, a private `HOME` and `TMPDIR`, no network
//! where the kernel allows).
//!
//! - `check`: a shell command run by `sh -c` in the checkout (the checkout, and its `src/`, on
//!   `PYTHONPATH`); exit 0 → held, another exit → flipped. A command that could not run (exit
//!   126 or 127), was killed, or timed out gives no verdict.
//! - `test`: a pytest node id, run as the oracle runs a claim at the child: the test files the
//!   range touched are restored from `--from` first, so the claim's test is the one that held
//!   then; or a test function's source, written into the checkout as a module of its own. The
//!   environment is the oracle's (the repository's requirements, an interpreter of its era).
//!   Failed → flipped, passed → held; a collection error, a skip or a timeout gives no verdict.
//!
//! A claim without either passes on; so does one whose run gave no verdict.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use git2::{Oid, Repository};

use super::cascade::Decision;
use super::claim::{MemoryClaim, Verdict};
use super::error::CheckError;
use crate::engine::Session;
use crate::mining::TestFileRules;
use crate::oracle::command::RunFiles;
use crate::oracle::runner::{RunRequest, run_pytest};
use crate::oracle::worktree::touched_test_files;
use crate::oracle::{Verdict as RunVerdict, Worktree, classify};
use crate::pipeline::{RepoSource, RepoSpec};
use crate::process::ChildEnvironment;
use crate::process::{Capture, Outcome, Run};
use crate::steps::{EnvironmentFailure, Environments};
use crate::syntax::python::{DefinitionKind, ParsedModule};

/// How long one check command or one pytest run may take.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// What the exec stage needs: the range, a place to check it out, and where environments come
/// from (the oracle's, or a fixed one).
pub struct ExecStage<'r> {
    pub repository: &'r Repository,
    pub root: &'r Path,
    pub from: Oid,
    pub to: Oid,
    pub to_time: Option<i64>,
    /// The check's own directory: checkouts and run directories go under `exec/`.
    pub workdir: &'r Path,
    pub environments: Arc<dyn Environments>,
    /// The check's session: what lasts one check (the environment builds that failed).
    pub session: &'r Session,
    pub timeout: Duration,
}

/// How a claim is executed.
enum Execution<'c> {
    Check(&'c str),
    Node(&'c str),
    Source(&'c str),
}

fn execution(claim: &MemoryClaim) -> Option<Execution<'_>> {
    if let Some(command) = claim
        .check
        .as_deref()
        .filter(|text| !text.trim().is_empty())
    {
        return Some(Execution::Check(command));
    }
    let test = claim
        .test
        .as_deref()
        .map(str::trim)
        .filter(|text| !text.is_empty())?;
    let is_node = !test.contains('\n')
        && test
            .split_once("::")
            .is_some_and(|(file, _)| file.ends_with(".py"));
    Some(if is_node {
        Execution::Node(test)
    } else {
        Execution::Source(test)
    })
}

impl ExecStage<'_> {
    /// Decides every claim that can be executed; the others pass on.
    pub fn decide(&self, claims: &[&MemoryClaim]) -> Result<Vec<Decision>, CheckError> {
        let mut decisions: Vec<Option<Decision>> = claims
            .iter()
            .map(|claim| {
                execution(claim)
                    .is_none()
                    .then(|| Decision::pass_on("no test or check to run"))
            })
            .collect();
        if decisions.iter().all(Option::is_some) {
            return Ok(decisions.into_iter().flatten().collect());
        }
        let exec_dir = self.workdir.join("exec");
        std::fs::create_dir_all(&exec_dir)
            .map_err(|error| CheckError::failed(format!("create {}", exec_dir.display()), error))?;
        let scratch = tempfile::Builder::new()
            .prefix("run-")
            .tempdir_in(&exec_dir)
            .map_err(|error| {
                CheckError::failed(
                    format!("create a directory in {}", exec_dir.display()),
                    error,
                )
            })?;
        let mut worktree = Worktree::new(scratch.path().join("checkout"));
        worktree
            .checkout(self.repository, self.to)
            .map_err(|error| CheckError::failed(format!("check out {}", self.to), error))?;
        // As the oracle runs a checkout: registered as installed, with its build's version file.
        crate::python::prepare_checkout(worktree.dir()).map_err(|error| {
            CheckError::failed(format!("prepare the checkout of {}", self.to), error)
        })?;
        for (index, claim) in claims.iter().enumerate() {
            if let Some(Execution::Check(command)) = execution(claim) {
                let private = scratch.path().join(format!("check-{index}"));
                decisions[index] = Some(self.run_check(worktree.dir(), &private, command)?);
            }
        }
        let tests: Vec<(usize, Execution)> = claims
            .iter()
            .enumerate()
            .filter(|(index, _)| decisions[*index].is_none())
            .filter_map(|(index, claim)| execution(claim).map(|how| (index, how)))
            .collect();
        if !tests.is_empty() {
            for (index, decision) in self.run_tests(&mut worktree, scratch.path(), &tests)? {
                decisions[index] = Some(decision);
            }
        }
        Ok(decisions
            .into_iter()
            .map(|decision| decision.unwrap_or_else(|| Decision::pass_on("not run")))
            .collect())
    }

    /// Runs one check command in the checkout.
    fn run_check(
        &self,
        checkout: &Path,
        private: &Path,
        command: &str,
    ) -> Result<Decision, CheckError> {
        let home = private.join("home");
        let tmp = private.join("tmp");
        for dir in [&home, &tmp] {
            std::fs::create_dir_all(dir)
                .map_err(|error| CheckError::failed(format!("create {}", dir.display()), error))?;
        }
        let mut python_path = vec![checkout.to_path_buf()];
        if checkout.join("src").is_dir() {
            python_path.push(checkout.join("src"));
        }
        // A checkout under a directory named with `:` is written relative to it, or refused.
        let python_path =
            crate::python::python_path_variable(&python_path, checkout).map_err(|error| {
                CheckError::failed("set PYTHONPATH for the check".to_string(), error)
            })?;
        let mut shell = std::process::Command::new("/bin/sh");
        shell.arg("-c").arg(command).current_dir(checkout);
        ChildEnvironment::scrubbed()
            .set("PATH", "/usr/local/bin:/usr/bin:/bin")
            .set("HOME", &home)
            .set("TMPDIR", &tmp)
            .python_quiet()
            .set("PYTHONPATH", python_path)
            .apply(&mut shell);
        crate::sandbox::Confinement::offline()
            .writable(checkout)
            .writable(private)
            .apply(&mut shell);
        let finished = Run::new(&mut shell, Capture::Memory)
            .timeout(self.timeout)
            .cap(64 * 1024)
            .run()
            .map_err(|error| CheckError::failed(format!("run the check `{command}`"), error))?;
        let said = last_line(&finished.stderr).or_else(|| last_line(&finished.stdout));
        let said = said.map_or(String::new(), |line| format!(": {line}"));
        Ok(match finished.outcome {
            Outcome::Exited(0) => Decision::decided(Verdict::Held, format!("`{command}` exited 0")),
            Outcome::Exited(code @ (126 | 127)) => {
                Decision::pass_on(format!("`{command}` could not run (exit {code}){said}"))
            }
            Outcome::Exited(code) => {
                Decision::decided(Verdict::Flipped, format!("`{command}` exited {code}{said}"))
            }
            other => Decision::pass_on(format!("`{command}` {other}")),
        })
    }

    /// Runs the claims' tests in one pytest session at `--to`, the range's touched test files
    /// restored from `--from`.
    fn run_tests(
        &self,
        worktree: &mut Worktree,
        scratch: &Path,
        tests: &[(usize, Execution)],
    ) -> Result<Vec<(usize, Decision)>, CheckError> {
        let rules = TestFileRules::default();
        let touched = touched_test_files(self.repository, self.from, self.to, &rules)
            .map_err(|error| CheckError::failed("list the test files the range touched", error))?;
        worktree
            .restore(self.repository, self.from, &touched)
            .map_err(|error| {
                CheckError::failed(format!("restore the test files of {}", self.from), error)
            })?;
        let mut decisions = Vec::new();
        // Node ids by claim; a source test becomes a module whose test functions are its nodes.
        let mut nodes_of: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        let mut files: Vec<String> = Vec::new();
        for (index, how) in tests {
            match how {
                Execution::Node(node) => {
                    files.push(node.split("::").next().unwrap_or(node).to_string());
                    nodes_of.insert(*index, vec![node.to_string()]);
                }
                Execution::Source(source) => {
                    match write_source_test(worktree.dir(), *index, source) {
                        Ok((file, nodes)) => {
                            files.push(file);
                            nodes_of.insert(*index, nodes);
                        }
                        Err(problem) => decisions.push((*index, Decision::pass_on(problem))),
                    }
                }
                Execution::Check(_) => {}
            }
        }
        if nodes_of.is_empty() {
            return Ok(decisions);
        }
        let spec = self.repo_spec();
        let environment = match self.environments.environment(
            &spec,
            worktree.dir(),
            None,
            self.to_time,
            &[],
            self.session,
        ) {
            Ok(environment) => environment,
            Err(EnvironmentFailure::Retry(why) | EnvironmentFailure::Unbuildable(why)) => {
                let why = format!("no Python environment for the tests: {why}");
                decisions.extend(
                    nodes_of
                        .keys()
                        .map(|index| (*index, Decision::pass_on(why.clone()))),
                );
                return Ok(decisions);
            }
        };
        files.sort();
        files.dedup();
        let nodes: Vec<String> = nodes_of.values().flatten().cloned().collect();
        let run_files = RunFiles::new(scratch.join("pytest"));
        let report = run_pytest(&RunRequest {
            environment: &environment,
            worktree: worktree.dir(),
            files: &run_files,
            test_files: &files,
            nodes: &nodes,
            run: 0,
            timeout: self.timeout,
        })
        .map_err(|error| CheckError::failed("run the claims' tests", error))?;
        let batch = classify(&nodes, &report.outcome, &report.records);
        let collection: Vec<String> = batch
            .collection_errors
            .iter()
            .map(|error| format!("{}: {}", error.node, error.message))
            .collect();
        for (index, nodes) in nodes_of {
            decisions.push((index, test_decision(&nodes, &batch.verdicts, &collection)));
        }
        Ok(decisions)
    }

    /// The repository as the oracle's environments know one: read in place, its interpreters
    /// chosen from its metadata.
    fn repo_spec(&self) -> RepoSpec {
        RepoSpec {
            name: self
                .root
                .file_name()
                .map_or("repository".to_string(), |name| {
                    name.to_string_lossy().into_owned()
                }),
            source: RepoSource::Path(self.root.to_path_buf()),
            branch: String::new(),
            split: None,
            python: Vec::new(),
            test_patterns: None,
            dependencies: Vec::new(),
            merges: None,
            releases: crate::pipeline::Releases::Newest,
        }
    }
}

/// The claim's verdict from its nodes' verdicts: any failure flips it, all passing holds it,
/// anything else (unknown, missing) passes it on.
fn test_decision(
    nodes: &[String],
    verdicts: &BTreeMap<String, RunVerdict>,
    collection: &[String],
) -> Decision {
    let mut passed = Vec::new();
    for node in nodes {
        match verdicts.get(node) {
            Some(RunVerdict::Failed(kind)) => {
                return Decision::decided(
                    Verdict::Flipped,
                    format!("{node} failed at the range's end ({kind})"),
                );
            }
            Some(RunVerdict::Passed) => passed.push(node.as_str()),
            Some(RunVerdict::Unknown(reason)) => {
                let errors = if collection.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", collection.join("; "))
                };
                return Decision::pass_on(format!("{node} gave no verdict: {reason}{errors}"));
            }
            None => return Decision::pass_on(format!("{node} gave no verdict: not reported")),
        }
    }
    Decision::decided(
        Verdict::Held,
        format!("{} passed at the range's end", passed.join(", ")),
    )
}

/// Writes a test function's source into the checkout as `test_claimflow_check_<index>.py`; its
/// file and the node ids of its test functions, or why it cannot run.
fn write_source_test(
    checkout: &Path,
    index: usize,
    source: &str,
) -> Result<(String, Vec<String>), String> {
    let file = format!("test_claimflow_check_{index}.py");
    let text = crate::python::dedent(source);
    let module = ParsedModule::parse(&file, &text)
        .map_err(|failure| format!("the claim's test does not parse: {failure}"))?;
    let nodes: Vec<String> = module
        .definitions("")
        .into_iter()
        .filter(|(name, definition)| {
            let name = name.trim_start_matches('.');
            matches!(definition.kind, DefinitionKind::Function)
                && !name.contains('.')
                && name.starts_with("test")
        })
        .map(|(name, _)| format!("{file}::{}", name.trim_start_matches('.')))
        .collect();
    if nodes.is_empty() {
        return Err("the claim's test defines no `test…` function".to_string());
    }
    let path: PathBuf = checkout.join(&file);
    std::fs::write(&path, text).map_err(|error| format!("write {}: {error}", path.display()))?;
    Ok((file, nodes))
}

/// The last non-empty line of an output, cut to 200 characters.
fn last_line(output: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(output);
    let line = text
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty())?
        .trim();
    Some(line.chars().take(200).collect())
}
