//! `rank-commits`: one item per repository, ranking its branch's first-parent history and keeping the
//! top candidates (`commits.jsonl`).
//!
//! Planning fetches each repository and resolves its branch, so the branch tip's commit id enters the
//! item's key: a moved branch re-ranks that repository, and an unchanged one is a cache hit. The
//! computation reads the history from the tip recorded in the key, never from the branch again.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engine::{
    ItemOutput, ItemPlan, ItemResult, ParamsDecl, RepoName, Role, StepContext, StepError, StepKind,
    Upstream,
};
use crate::mining::repository::{self, tool_name};
use crate::mining::{Merges, RankBy, Selection, TestFileRules, rank, score_history};
use crate::pipeline::StepSpec;
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

    fn items(&self, ctx: &StepContext, _upstream: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        let params: &RankCommitsParams = ctx.params()?;
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
            let item = ItemParams {
                branch: spec.branch.clone(),
                by: params.by,
                top: params.top,
                merges: spec.merges.unwrap_or(params.merges),
                min_score: params.min_score,
                test_patterns: TestFileRules::for_repository(spec, &params.test_patterns)?
                    .patterns(),
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
        let params: ItemParams = serde_json::from_value(item.params.clone()).map_err(|error| {
            StepError::Message(format!(
                "step `{}`: item `{}`: {error}",
                ctx.step.name, item.id
            ))
        })?;
        let tip = item
            .tools
            .get(&tool_name(&spec.name))
            .and_then(|tip| git2::Oid::from_str(tip).ok())
            .ok_or_else(|| {
                StepError::Message(format!(
                    "step `{}`: item `{}` has no branch tip in its key",
                    ctx.step.name, item.id
                ))
            })?;
        let located = repository::locate(spec, ctx.workdir)?;
        let rules = TestFileRules::new(&params.test_patterns)?;
        let history = score_history(&located.path, &spec.name, tip, &rules, params.merges)?;
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
