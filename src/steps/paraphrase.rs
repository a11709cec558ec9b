//! The `paraphrase` step kind: each claim's test rewritten syntactically, kept only when the
//! rewrite still passes at the parent.
//!
//! ```yaml
//! paraphrased:  {uses: paraphrase, needs: [claims], with: {runs: 3}}
//! a4_paraphrased: {uses: arm, needs: [claims, paraphrased], with: {arm: symbol-anchoring}}
//! ```
//! Every claim of the needed `mine-claims` step (only those a needed `stratify` or `cutoff` step
//! selected, when one is needed) is rewritten with [`crate::controls::paraphrase`]: locals
//! renamed, docstrings replaced, whitespace reflowed, the rewrite re-parsed and its syntax tree
//! compared. The rewrite then replaces the test in its file at the parent, and the claims of the
//! commit are run there `runs` times (the oracle's runner, environment and classifier): a rewrite
//! that does not pass every run is not a paraphrase, and is listed with why instead of kept, as is
//! a test the rewriter refuses or whose source is not in its file (an inherited test). The
//! records are the kept claims' records with the rewritten `source` (`record: paraphrased`) and
//! the refusals (`record: refused`). An arm that needs the step judges the kept claims as
//! rewritten and declares it (`evidence.control: paraphrase`), so `stats` reports it as a control
//! of its twin: agreement with the original verdicts and precision on both. One item per commit,
//! run in the pytest pool.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::oracle::{EnvironmentFailure, Environments};
use crate::cache::Digest;
use crate::controls::paraphrase::paraphrase;
use crate::engine::{
    ItemOutput, ItemPlan, ItemResult, ParamsDecl, Pool, Role, StepContext, StepError, StepKind,
    Upstream,
};
use crate::oracle::command::RunFiles;
use crate::oracle::runner::{RunRequest, run_pytest};
use crate::oracle::{Verdict, Worktree, classify};
use crate::pipeline::Need;
use crate::pipeline::StepSpec;
use crate::records::ClaimRecord;

/// The name of the manipulation, as a control's predictions declare it in `evidence.control`.
pub const PARAPHRASE: &str = "paraphrase";

/// The `paraphrase` step kind.
pub struct ParaphraseStep {
    environments: Arc<dyn Environments>,
}

impl ParaphraseStep {
    /// A paraphrase step that runs the rewrites with the interpreters `environments` provides.
    pub fn new(environments: Arc<dyn Environments>) -> Self {
        ParaphraseStep { environments }
    }
}

/// The parameters of `uses: paraphrase`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ParaphraseParams {
    /// Runs at the parent every rewrite must pass (default 3).
    #[serde(default = "default_runs")]
    #[schemars(range(min = 1, max = 100))]
    pub runs: u32,
    /// Seconds per pytest run (default 120); it bounds a run, so it stays out of the key.
    #[serde(default = "default_timeout", skip_serializing)]
    #[schemars(range(min = 1))]
    pub timeout: f64,
}

fn default_runs() -> u32 {
    3
}

fn default_timeout() -> f64 {
    120.0
}

/// A claim as the step reads it: the contract fields, and the line as written.
struct Line {
    record: ClaimRecord,
    line: serde_json::Value,
}

/// A record of a paraphrase, told apart by its `record` tag. A kept claim is its claim line as
/// written, rewritten (what an arm judges, and what enters its items' keys): only its id is
/// read here, and the line is kept whole.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "record", rename_all = "lowercase")]
enum ParaphraseRecord {
    /// Declares the manipulation (`control: paraphrase`).
    Summary {
        #[serde(rename = "control")]
        _control: String,
    },
    /// A kept claim, rewritten.
    Paraphrased { id: String },
    /// A claim whose rewrite was refused, and why.
    Refused {
        #[serde(rename = "claim")]
        _claim: String,
        #[serde(rename = "why")]
        _why: String,
    },
}

/// The records of one output of a paraphrase step, decoded, each beside its line as written.
fn paraphrase_records<'a>(
    step: &str,
    records: impl Iterator<Item = &'a serde_json::Value>,
) -> Result<Vec<(ParaphraseRecord, &'a serde_json::Value)>, StepError> {
    records
        .map(|record| {
            ParaphraseRecord::deserialize(record)
                .map(|decoded| (decoded, record))
                .map_err(|source| StepError::Record {
                    step: step.to_string(),
                    source,
                })
        })
        .collect()
}

/// The claim records a needed `paraphrase` step kept, rewritten, by claim id; `None` when no
/// needed step paraphrases.
pub fn paraphrased_claims(
    upstream: &Upstream,
) -> Result<Option<BTreeMap<String, serde_json::Value>>, StepError> {
    let mut found: Option<BTreeMap<String, serde_json::Value>> = None;
    for output in upstream.all() {
        if super::shuffle::declares_control(output).as_deref() != Some(PARAPHRASE) {
            continue;
        }
        let kept = found.get_or_insert_with(BTreeMap::new);
        let records = output
            .items
            .iter()
            .flat_map(|item| item.output.records.iter());
        for (decoded, line) in paraphrase_records(&output.step, records)? {
            if let ParaphraseRecord::Paraphrased { id } = decoded {
                kept.insert(id, line.clone());
            }
        }
    }
    Ok(found)
}

/// Marks a prediction's evidence as judged on the paraphrased claim.
pub fn mark_paraphrased(evidence: &mut serde_json::Value) {
    if !evidence.is_object() {
        *evidence = json!({"evidence": evidence.take()});
    }
    evidence
        .as_object_mut()
        .expect("made an object")
        .insert("control".into(), json!(PARAPHRASE));
}

/// Replaces the test `source` in `file` by `rewrite` (unindented), at the test's own indentation.
/// The test is found as the one run of lines that equals `source` once both are dedented.
fn replace_test(file: &str, source: &str, rewrite: &str) -> Result<String, String> {
    let wanted = crate::syntax::python::dedent(source);
    let wanted: Vec<&str> = wanted.trim_end().lines().collect();
    let Some(first) = wanted.first() else {
        return Err("its source is empty".into());
    };
    let lines: Vec<&str> = file.lines().collect();
    let mut matches = Vec::new();
    for start in 0..lines.len() {
        if lines[start].trim() != first.trim() || start + wanted.len() > lines.len() {
            continue;
        }
        let block = lines[start..start + wanted.len()].join("\n");
        let block = crate::syntax::python::dedent(&block);
        if block.trim_end().lines().eq(wanted.iter().copied()) {
            matches.push(start);
        }
    }
    let start = match matches.as_slice() {
        [start] => *start,
        [] => {
            return Err(
                "its source is not in its test file at the parent (an inherited or generated \
                 test)"
                    .into(),
            );
        }
        _ => return Err("its source appears more than once in its test file".into()),
    };
    let indent = &lines[start][..lines[start].len() - lines[start].trim_start().len()];
    let mut out: Vec<String> = lines[..start].iter().map(|line| line.to_string()).collect();
    for line in rewrite.trim_end().lines() {
        out.push(if line.is_empty() {
            String::new()
        } else {
            format!("{indent}{line}")
        });
    }
    out.extend(
        lines[start + wanted.len()..]
            .iter()
            .map(|line| line.to_string()),
    );
    let mut text = out.join("\n");
    text.push('\n');
    Ok(text)
}

/// A refusal record.
fn refused(claim: &str, why: impl std::fmt::Display) -> serde_json::Value {
    json!({"record": "refused", "claim": claim, "why": why.to_string()})
}

impl ParaphraseStep {
    fn claims(ctx: &StepContext, upstream: &Upstream) -> Result<Vec<Line>, StepError> {
        let output = upstream
            .first_with_role(|role| *role == Role::Claims)
            .ok_or_else(|| {
                StepError::Input(format!(
                    "step `{}`: needs a `mine-claims` step for the claims to paraphrase; add it to \
                 `needs:`",
                    ctx.step.name
                ))
            })?;
        let selected = super::selection::selected_claims(upstream)?;
        let mut lines = Vec::new();
        for line in output.items.iter().flat_map(|item| &item.output.records) {
            let record: ClaimRecord = serde_json::from_value(line.clone()).map_err(|error| {
                StepError::failed(
                    format!(
                        "step `{}`: read a claim of step `{}`",
                        ctx.step.name, output.step
                    ),
                    error,
                )
            })?;
            if selected
                .as_ref()
                .is_some_and(|selected| !selected.contains(&record.id))
            {
                continue;
            }
            lines.push(Line {
                record,
                line: line.clone(),
            });
        }
        Ok(lines)
    }

    /// Rewrites one commit's claims, runs the rewrites at the parent, and returns the records.
    fn rewrite_commit(
        &self,
        ctx: &StepContext,
        item: &ItemPlan,
        params: &ParaphraseParams,
        claims: &[serde_json::Value],
    ) -> Result<Vec<serde_json::Value>, StepError> {
        let failed = item_failure(ctx, item);
        let claims: Vec<Line> = claims
            .iter()
            .map(|line| {
                serde_json::from_value(line.clone())
                    .map(|record| Line {
                        record,
                        line: line.clone(),
                    })
                    .map_err(|error| failed(error.into()))
            })
            .collect::<Result<_, _>>()?;
        let Some(first) = claims.first() else {
            return Ok(Vec::new());
        };
        let checkout = ParentCheckout::of(ctx, item, &first.record)?;
        let worktree = checkout.worktree.dir();

        // 1. Rewrite, and put every rewrite in its file.
        let mut records = Vec::new();
        let mut files: BTreeMap<String, String> = BTreeMap::new();
        let mut kept: Vec<(&Line, crate::controls::paraphrase::Paraphrase)> = Vec::new();
        for claim in &claims {
            match rewrite_in(claim, worktree, &mut files).map_err(&failed)? {
                Ok(rewrite) => kept.push((claim, rewrite)),
                Err(why) => records.push(refused(&claim.record.id, why)),
            }
        }
        if kept.is_empty() {
            return Ok(records);
        }
        for (path, text) in &files {
            std::fs::write(worktree.join(path), text)
                .map_err(|error| failed(format!("write {path}: {error}").into()))?;
        }

        // 2. Run them at the parent, as the oracle runs claims.
        let interpreter = first
            .line
            .get("interpreter")
            .and_then(serde_json::Value::as_str);
        let environment = match self.environments.environment(
            checkout.spec,
            worktree,
            interpreter,
            checkout.date,
            &checkout.child,
            &ctx.session,
        ) {
            Ok(environment) => environment,
            Err(EnvironmentFailure::Retry(reason)) => return Err(failed(reason.into())),
            Err(EnvironmentFailure::Unbuildable(reason)) => {
                let why = format!("no environment to run it in: {reason}");
                records.extend(
                    kept.iter()
                        .map(|(claim, _)| refused(&claim.record.id, &why)),
                );
                return Ok(records);
            }
        };
        let nodes: Vec<String> = kept
            .iter()
            .map(|(claim, _)| claim.record.node.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let test_files: Vec<String> = files.keys().cloned().collect();
        let run = RunAt {
            environment: &environment,
            worktree,
            scratch: &checkout.scratch,
            test_files: &test_files,
        };
        let failures = run
            .failures(&nodes, params)
            .map_err(|error| failed(error.into()))?;
        records.extend(kept.into_iter().map(|(claim, rewrite)| {
            match failures.get(&claim.record.node) {
                Some(why) => refused(&claim.record.id, why),
                None => paraphrased(claim, &rewrite, params.runs),
            }
        }));
        Ok(records)
    }
}

/// How a step item's failures are reported: with the step and the item named.
fn item_failure<'a>(
    ctx: &'a StepContext,
    item: &'a ItemPlan,
) -> impl Fn(Box<dyn std::error::Error + Send + Sync>) -> StepError + 'a {
    move |error| StepError::failed(format!("step `{}` item {}", ctx.step.name, item.id), error)
}

/// A commit's parent checked out in the item's scratch directory, ready for pytest, with what
/// the environment to run it in depends on.
struct ParentCheckout<'a> {
    spec: &'a crate::pipeline::RepoSpec,
    scratch: std::path::PathBuf,
    worktree: Worktree,
    /// What the child declares, read from its checkout, so the environment is the oracle's.
    child: Vec<crate::python::Requirement>,
    /// The parent commit's date (seconds since the epoch), which chooses its environment's era.
    date: Option<i64>,
}

impl<'a> ParentCheckout<'a> {
    /// Checks out the child of `claim` to read what it declares, then its parent to run at.
    fn of(ctx: &'a StepContext, item: &ItemPlan, claim: &ClaimRecord) -> Result<Self, StepError> {
        let failed = item_failure(ctx, item);
        let (spec, repository) =
            super::repositories::open(ctx, &claim.repo, &format!("claim {}", claim.id), &failed)?;
        let oid = |text: &str| git2::Oid::from_str(text).map_err(|error| failed(error.into()));
        let scratch = ctx.scratch(&Digest::of(item.id.as_bytes()).short())?;
        let mut worktree = Worktree::new(scratch.join("worktree"));
        worktree
            .checkout(&repository, oid(&claim.commit)?)
            .map_err(|error| failed(error.into()))?;
        let child = crate::python::declared_requirements(worktree.dir());
        let parent = oid(&claim.parent)?;
        worktree
            .checkout(&repository, parent)
            .map_err(|error| failed(error.into()))?;
        crate::python::prepare_checkout(worktree.dir()).map_err(|error| failed(error.into()))?;
        let date = repository
            .find_commit(parent)
            .map(|commit| commit.time().seconds())
            .ok();
        Ok(ParentCheckout {
            spec,
            scratch,
            worktree,
            child,
            date,
        })
    }
}

/// The record of a kept claim: its claim line with the rewritten source, and what was done.
fn paraphrased(
    claim: &Line,
    rewrite: &crate::controls::paraphrase::Paraphrase,
    runs: u32,
) -> serde_json::Value {
    let mut line = claim.line.clone();
    line["record"] = json!("paraphrased");
    line["source"] = json!(rewrite.source);
    line["original_source"] = json!(claim.record.source);
    line["paraphrase"] = json!({
        "renamed": rewrite.renamed,
        "docstrings": rewrite.docstrings,
        "reflowed": rewrite.reflowed,
        "runs_passed": runs,
    });
    line
}

/// What a step of this kind reads from the steps it needs.
const NEEDS: &[Need] = &[Need {
    roles: &[Role::Claims],
    step: "a `mine-claims` step",
    reads: "the claims it paraphrases",
}];

impl StepKind for ParaphraseStep {
    fn name(&self) -> &'static str {
        "paraphrase"
    }

    fn version(&self) -> u32 {
        // 2: the checkout registered as the project's distribution carries the entry points its
        // packaging files declare (a rewrite is kept only when it passes at the parent).
        2
    }

    fn about(&self) -> &'static str {
        "each claim's test rewritten syntactically, kept only when it still passes at the parent"
    }

    fn params(&self) -> ParamsDecl {
        ParamsDecl::of::<ParaphraseParams>()
    }

    fn requires(&self, _step: &StepSpec) -> &'static [Need] {
        NEEDS
    }

    fn role(&self, _step: &StepSpec) -> Role {
        Role::Manipulation {
            control: PARAPHRASE.to_string(),
        }
    }

    fn items(&self, ctx: &StepContext, upstream: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        let params: &ParaphraseParams = ctx.params()?;
        if params.runs == 0 {
            return Err(StepError::Input(format!(
                "step `{}`: `runs` is 0; every rewrite must pass at least one run",
                ctx.step.name
            )));
        }
        let mut commits: BTreeMap<(String, String, String), Vec<Line>> = BTreeMap::new();
        for claim in Self::claims(ctx, upstream)? {
            let key = (
                claim.record.repo.clone(),
                claim.record.parent.clone(),
                claim.record.commit.clone(),
            );
            commits.entry(key).or_default().push(claim);
        }
        let mut fingerprints = BTreeMap::new();
        let mut plans = Vec::new();
        for ((repo, parent, commit), claims) in commits {
            if !fingerprints.contains_key(&repo) {
                let spec = ctx.pipeline.repo(&repo).ok_or_else(|| {
                    StepError::Invariant(format!(
                        "step `{}`: a claim names repository `{repo}`, which the pipeline does \
                         not declare",
                        ctx.step.name
                    ))
                })?;
                fingerprints.insert(repo.clone(), self.environments.fingerprint(spec)?);
            }
            let lines: Vec<&serde_json::Value> = claims.iter().map(|claim| &claim.line).collect();
            let mut plan = ItemPlan::new(format!("{repo}@{parent}..{commit}"))
                .params(json!({"claims": lines}))
                .tool("parent", parent)
                .tool("child", commit)
                .pool(Pool::Pytest);
            for (name, value) in &fingerprints[&repo] {
                plan = plan.tool(format!("python:{name}"), value.clone());
            }
            for claim in &claims {
                let bytes = serde_json::to_vec(&claim.line).expect("a JSON value serializes");
                plan = plan.read(format!("claim:{}", claim.record.id), Digest::of(&bytes));
            }
            plans.push(plan);
        }
        Ok(plans)
    }

    fn run(
        &self,
        ctx: &StepContext,
        item: &ItemPlan,
        _upstream: &Upstream,
    ) -> Result<ItemOutput, StepError> {
        let params: &ParaphraseParams = ctx.params()?;
        let claims = item.params["claims"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut records = vec![json!({"record": "summary", "control": PARAPHRASE})];
        records.extend(self.rewrite_commit(ctx, item, params, &claims)?);
        Ok(ItemOutput {
            records: records.into(),
            blobs: Default::default(),
        })
    }

    fn publish(&self, ctx: &StepContext, items: &[ItemResult]) -> Result<(), StepError> {
        let mut kept = Vec::new();
        let mut refusals = Vec::new();
        let records = items.iter().flat_map(|item| item.output.records.iter());
        for (decoded, line) in paraphrase_records(&ctx.step.name, records)? {
            match decoded {
                ParaphraseRecord::Paraphrased { .. } => kept.push(line.clone()),
                ParaphraseRecord::Refused { .. } => refusals.push(line.clone()),
                ParaphraseRecord::Summary { .. } => {}
            }
        }
        let summary = json!({
            "control": PARAPHRASE,
            "kept": kept.len(),
            "refused": refusals.len(),
            "refusals": refusals,
        });
        let mut bytes = serde_json::to_vec_pretty(&summary).expect("a summary serializes");
        bytes.push(b'\n');
        ctx.write_result(&ctx.own_result("paraphrase.json"), &bytes)?;
        ctx.write_jsonl(&ctx.own_result("paraphrase.jsonl"), kept)
    }
}

/// Rewrites `claim` into its test file's text in `files` (read from `worktree` the first time):
/// the rewrite, or why it was refused; an error when the file cannot be read.
fn rewrite_in(
    claim: &Line,
    worktree: &std::path::Path,
    files: &mut BTreeMap<String, String>,
) -> Result<
    Result<crate::controls::paraphrase::Paraphrase, String>,
    Box<dyn std::error::Error + Send + Sync>,
> {
    let rewrite = match paraphrase(&claim.record.source) {
        Ok(rewrite) => rewrite,
        Err(refusal) => return Ok(Err(refusal.to_string())),
    };
    let path = crate::arms::Claim::from_record(&claim.line)?.test_file();
    let text = match files.get(&path) {
        Some(text) => text.clone(),
        None => std::fs::read_to_string(worktree.join(&path))
            .map_err(|error| format!("read {path} at the parent: {error}"))?,
    };
    Ok(
        match replace_test(&text, &claim.record.source, &rewrite.source) {
            Ok(text) => {
                files.insert(path, text);
                Ok(rewrite)
            }
            Err(why) => Err(why),
        },
    )
}

/// Where a commit's rewrites run: its environment, its checkout at the parent with the rewrites
/// in place, its scratch directory, the test files rewritten.
struct RunAt<'a> {
    environment: &'a crate::python::Environment,
    worktree: &'a std::path::Path,
    scratch: &'a std::path::Path,
    test_files: &'a [String],
}

impl RunAt<'_> {
    /// Runs `nodes` `params.runs` times, as the oracle runs claims: why each node that did not
    /// pass every run failed, by node.
    fn failures(
        &self,
        nodes: &[String],
        params: &ParaphraseParams,
    ) -> Result<BTreeMap<String, String>, crate::oracle::runner::RunnerError> {
        let mut failures: BTreeMap<String, String> = BTreeMap::new();
        for run in 0..params.runs {
            let files = RunFiles::new(self.scratch.join(format!("run-{run}")));
            let report = run_pytest(&RunRequest {
                environment: self.environment,
                worktree: self.worktree,
                files: &files,
                test_files: self.test_files,
                nodes,
                run,
                timeout: Duration::from_secs_f64(params.timeout.max(1.0)),
            })?;
            let batch = classify(nodes, &report.outcome, &report.records);
            for node in nodes {
                if failures.contains_key(node) {
                    continue;
                }
                let why = match batch.verdicts.get(node) {
                    Some(Verdict::Passed) => continue,
                    Some(Verdict::Failed(kind)) => format!("failed ({kind})"),
                    Some(Verdict::Unknown(reason)) => format!("no verdict ({reason})"),
                    None => "no verdict (no record)".to_string(),
                };
                failures.insert(
                    node.clone(),
                    format!(
                        "the rewrite did not pass at the parent: run {} of {}: {why}",
                        run + 1,
                        params.runs
                    ),
                );
            }
        }
        Ok(failures)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "import pytest\n\n\nclass TestCache:\n    def test_get(self, cache):\n        \"\"\"Gets.\"\"\"\n        value = cache.get(1)\n        assert value == 2\n\n\ndef test_other():\n    assert True\n";

    #[test]
    fn a_method_is_replaced_at_its_own_indentation() {
        let source = "def test_get(self, cache):\n    \"\"\"Gets.\"\"\"\n    value = cache.get(1)\n    assert value == 2\n";
        let rewrite = paraphrase(source).unwrap();
        let text = replace_test(FILE, source, &rewrite.source).unwrap();
        insta::assert_snapshot!(text);
        assert!(text.contains("    def test_get(self, cache):\n"));
        assert!(text.ends_with("def test_other():\n    assert True\n"));
    }

    #[test]
    fn a_test_not_in_its_file_is_refused_with_why() {
        let error = replace_test(FILE, "def test_absent():\n    assert 1\n", "x").unwrap_err();
        assert!(error.contains("not in its test file"), "{error}");
    }
}
