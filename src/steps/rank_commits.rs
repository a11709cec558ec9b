//! `rank-commits`: one item per repository, ranking its branch's first-parent history and keeping the
//! top candidates (`commits.jsonl`).
//!
//! Planning fetches each repository and resolves its branch, so the branch tip's commit id enters the
//! item's key: a moved branch re-ranks that repository, and an unchanged one is a cache hit. The
//! computation reads the history from the tip recorded in the key, never from the branch again.
//!
//! With `commits:` (per repository, inline) or `commits_file:` (`repo commit` lines) the listed
//! commits take the place of the ranking: each is checked at planning to be on the branch's
//! first-parent history ([`crate::mining::chosen`]), and they keep the listed order as their rank.

use std::collections::BTreeMap;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engine::{
    ItemOutput, ItemPlan, ItemResult, ParamsDecl, PipelineProblem, ProjectFile, RepoName, Role,
    StepContext, StepError, StepKind, Upstream,
};
use crate::mining::chosen::{self, Listed};
use crate::mining::repository::{self, tool_name};
use crate::mining::{Merges, RankBy, Selection, TestFileRules, rank, score_history};
use crate::pipeline::{Pipeline, StepSpec};
use crate::records::CommitRecord;

/// The `rank-commits` step kind.
pub struct RankCommits;

/// The parameters of `uses: rank-commits`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RankCommitsParams {
    /// What a commit is ranked by (default assertion-deletions).
    #[serde(default)]
    pub by: RankBy,
    /// Keep the top N candidates per repository (default 40).
    #[serde(default = "default_top")]
    #[schemars(range(min = 1))]
    pub top: usize,
    /// The `repos:` entries to rank (default all).
    #[serde(default)]
    pub repos: Option<Vec<RepoName>>,
    /// Score merge commits against their first parent, or skip them (default include); a
    /// repository's own `merges` wins.
    #[serde(default)]
    pub merges: Merges,
    /// Globs that make a path a test file (default: test/tests/testing directories, test_*.py,
    /// *_test.py, tests.py, conftest.py); a repository's own `test_patterns` wins.
    #[serde(default)]
    pub test_patterns: Vec<String>,
    /// Drop candidates scoring below this (default 1).
    #[serde(default = "default_min_score")]
    #[schemars(range(min = 0))]
    pub min_score: f64,
    /// Commits to take in place of a ranking, per repository: `{repo: [id, ...]}`, in rank order.
    #[serde(default)]
    pub commits: Option<BTreeMap<String, Vec<String>>>,
    /// A file of `<repository> <commit>` lines to take in place of a ranking, in rank order.
    #[serde(default)]
    pub commits_file: Option<ProjectFile>,
}

fn default_top() -> usize {
    40
}

fn default_min_score() -> f64 {
    1.0
}

/// What one repository's item computes from, besides the tip in its tools.
#[derive(Debug, Serialize, Deserialize)]
struct ItemParams {
    branch: String,
    by: RankBy,
    top: usize,
    merges: Merges,
    min_score: f64,
    test_patterns: Vec<String>,
    /// The listed commits (full ids, rank order) when they take the place of the ranking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    commits: Option<Vec<String>>,
}

/// The commits listed in place of a ranking, per repository, or `None` for a ranking. `root`
/// resolves `commits_file`. A message says what is wrong and where.
fn listed(
    root: &Path,
    step: &str,
    params: &RankCommitsParams,
) -> Result<Option<BTreeMap<String, Vec<Listed>>>, String> {
    match (&params.commits, &params.commits_file) {
        (Some(_), Some(_)) => Err(format!(
            "step `{step}` gives both `commits` and `commits_file`: keep one"
        )),
        (Some(inline), None) => {
            let mut listed = BTreeMap::new();
            for (repo, ids) in inline {
                let mut entries = Vec::new();
                for (index, id) in ids.iter().enumerate() {
                    let place = format!("item {} of `commits.{repo}` in step `{step}`", index + 1);
                    chosen::check_id(id).map_err(|message| format!("{place}: {message}"))?;
                    entries.push(Listed {
                        id: id.clone(),
                        place,
                    });
                }
                listed.insert(repo.clone(), entries);
            }
            Ok(Some(listed))
        }
        (None, Some(file)) => {
            let file = file.as_str();
            let text = std::fs::read_to_string(root.join(file))
                .map_err(|error| format!("read `{file}`: {error}"))?;
            chosen::parse_file(file, &text)
                .map(Some)
                .map_err(|error| error.to_string())
        }
        (None, None) => Ok(None),
    }
}

/// The load-time problems of a step's listed commits: their shape, and repositories that are not
/// `repos:` entries.
fn list_problems(step: &StepSpec, pipeline: &Pipeline) -> Vec<PipelineProblem> {
    let param = if step.with.get("commits_file").is_some() {
        "commits_file"
    } else {
        "commits"
    };
    let problem = |message: String, hint: &str| PipelineProblem {
        param: Some(param.to_string()),
        index: None,
        message,
        hint: hint.to_string(),
    };
    let Some(params) = step.params.get::<RankCommitsParams>() else {
        return Vec::new();
    };
    let listed = match listed(&pipeline.root, &step.name, params) {
        Ok(Some(listed)) => listed,
        Ok(None) => return Vec::new(),
        Err(message) => {
            return vec![problem(
                message,
                "list commits by id (7 to 40 hex digits), one `<repository> <commit>` per line \
                 in a file",
            )];
        }
    };
    listed
        .iter()
        .filter(|(repo, _)| pipeline.repo(repo).is_none())
        .map(|(repo, entries)| {
            problem(
                format!(
                    "{}: repository `{repo}` is not a `repos:` entry",
                    entries.first().map_or("", |entry| entry.place.as_str())
                ),
                "name a repository the pipeline declares under `repos:`",
            )
        })
        .collect()
}

impl StepKind for RankCommits {
    fn name(&self) -> &'static str {
        "rank-commits"
    }

    fn version(&self) -> u32 {
        // 2: a deleted assertion the same commit adds back, reformatted or moved, to the same file no
        // longer counts towards the score; `deleted_assertion_lines` keeps the raw count.
        2
    }

    fn about(&self) -> &'static str {
        "rank each repository's first-parent commits by assertion lines deleted from tests (or keywords)"
    }

    fn params(&self) -> ParamsDecl {
        ParamsDecl::of::<RankCommitsParams>()
    }

    fn role(&self, _step: &StepSpec) -> Role {
        Role::Commits
    }

    fn check_pipeline(&self, step: &StepSpec, pipeline: &Pipeline) -> Vec<PipelineProblem> {
        list_problems(step, pipeline)
    }

    fn preflight(&self, ctx: &StepContext) -> Result<(), StepError> {
        // Fetching, resolving the branch and checking listed commits is all of planning.
        self.items(ctx, &Upstream::default()).map(|_| ())
    }

    fn items(&self, ctx: &StepContext, _upstream: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        let params: &RankCommitsParams = ctx.params()?;
        let listed = listed(ctx.root, &ctx.step.name, params).map_err(StepError::Input)?;
        // The loader checked that every name in `repos` is a `repos:` entry.
        let chosen = ctx.pipeline.repos.iter().filter(|spec| {
            params
                .repos
                .as_ref()
                .is_none_or(|names| names.iter().any(|name| name.as_str() == spec.name))
        });
        let mut items = Vec::new();
        for spec in chosen {
            let prepared = repository::prepare(spec, ctx.workdir, ctx.offline)?;
            let merges = spec.merges.unwrap_or(params.merges);
            let commits = match &listed {
                None => None,
                Some(listed) => {
                    let entries = listed.get(&spec.name).map_or(&[][..], Vec::as_slice);
                    let oids = chosen::resolve(
                        &prepared.open()?,
                        &spec.name,
                        &spec.branch,
                        prepared.tip,
                        entries,
                        merges,
                    )?;
                    Some(oids.iter().map(ToString::to_string).collect())
                }
            };
            let item = ItemParams {
                branch: spec.branch.clone(),
                by: params.by,
                top: params.top,
                merges,
                min_score: params.min_score,
                test_patterns: TestFileRules::for_repository(spec, &params.test_patterns)?
                    .patterns(),
                commits,
            };
            items.push(
                ItemPlan::new(&spec.name)
                    .params(serde_json::to_value(item).expect("item params serialize"))
                    .tool(prepared.tool_name(), prepared.tip.to_string()),
            );
        }
        Ok(items)
    }

    fn run(
        &self,
        ctx: &StepContext,
        item: &ItemPlan,
        _upstream: &Upstream,
    ) -> Result<ItemOutput, StepError> {
        let spec = ctx.pipeline.repo(&item.id).ok_or_else(|| {
            StepError::Input(format!(
                "step `{}`: repository `{}` is not a `repos:` entry",
                ctx.step.name, item.id
            ))
        })?;
        let params: ItemParams = item.params.decode().map_err(|error| {
            StepError::failed(
                format!("step `{}`: item `{}`", ctx.step.name, item.id),
                error,
            )
        })?;
        let tip = item
            .tools
            .get(&tool_name(&spec.name))
            .and_then(|tip| git2::Oid::from_str(tip).ok())
            .ok_or_else(|| {
                // `items` keys every item by its branch tip.
                StepError::Invariant(format!(
                    "step `{}`: item `{}` has no branch tip in its key",
                    ctx.step.name, item.id
                ))
            })?;
        let located = repository::locate(spec, ctx.workdir)?;
        let rules = TestFileRules::new(&params.test_patterns)?;
        let history = score_history(&located.path, &spec.name, tip, &rules, params.merges)?;
        if let Some(commits) = &params.commits {
            let oids = commits
                .iter()
                .map(|id| git2::Oid::from_str(id))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|error| StepError::failed(format!("item `{}`", item.id), error))?;
            let records = crate::mining::rank::chosen(&spec.name, &history, &oids, params.by)
                .map_err(|missing| {
                    // Planning resolved every listed commit on this history (`chosen::resolve`).
                    StepError::Invariant(format!(
                        "step `{}`: repository `{}`: listed commit {missing} is not in the \
                         history from {tip}",
                        ctx.step.name, spec.name
                    ))
                })?;
            return Ok(ItemOutput::records(records));
        }
        let selection = Selection {
            by: params.by,
            top: params.top,
            min_score: params.min_score,
        };
        Ok(ItemOutput::records(rank(&spec.name, &history, selection)))
    }

    fn publish(&self, ctx: &StepContext, items: &[ItemResult]) -> Result<(), StepError> {
        let mut records: Vec<CommitRecord> = Vec::new();
        for item in items {
            records.extend(item.output.decode::<CommitRecord>()?);
        }
        ctx.write_jsonl(&ctx.own_result("commits.jsonl"), records)
    }
}
