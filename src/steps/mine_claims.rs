//! The `mine-claims` step kind: for each candidate commit from `rank-commits`, check out its parent,
//! choose interpreters, build (or reuse) an environment, ask pytest what the touched test modules
//! define (and what untouched modules inherit from touched helpers), and keep every test with
//! assertion statements as a claim. A commit that cannot be
//! collected under any allowed interpreter is excluded with its reason, never silently dropped.
//!
//! Keys. An item is one commit (`<repo>@<commit short>`); it reads the digest of the parts of the
//! commit's record that mining uses (repository, commit, parent, touched test files). Interpreter and pytest versions are only known after a checkout, so rather than check
//! out every parent while planning, the key holds what *determines* them: the installed
//! interpreters' versions, the pytest series chosen for each, the installer, the collection
//! plugin's digest, and (in the params) the declared interpreters and pinned dependencies. The
//! parent commit id fixes the metadata and the declared test requirements. What is not keyed is
//! the state of the package index, as with any lock-free install.
//!
//! Errors. An environment build that failed for a reason of the machine or the network (the index
//! unreachable, a timeout) fails the item, and nothing is cached. Any other environment failure
//! (a pinned requirement that will not install under any interpreter tried) excludes the commit,
//! kind `environment`, with every attempt's reason — unless every commit of the step is excluded
//! that way: that is a broken setup, not a result, and the step fails saying so.
//!
//! Interpreters. At most `interpreters` (default 3) are tried per commit, in the order
//! `choose_interpreters` gives; each fallback is announced as a note, so a long run is not silent.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::broken_setup::BrokenSetup;
use crate::cache::Digest;
use crate::engine::{
    ItemOutput, ItemPlan, ItemResult, ParamsDecl, Pool, Role, StepContext, StepError, StepKind,
    Upstream,
};
use crate::mining::repository;
use crate::pipeline::Need;
use crate::pipeline::{Releases, StepSpec};
use crate::python::{self, COLLECT_PLUGIN, ClaimSummary, Installer, MineSettings};
use crate::records::{CommitRecord, ExclusionKind, ExclusionRecord, MinedClaim};

/// The step kind.
pub struct MineClaims;

/// The parameters of `uses: mine-claims`.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MineClaimsParams {
    /// Interpreters to try, in order (`3.11`, `3.9`); overrides every repository's `python:`.
    #[serde(default)]
    pub python: Option<Vec<String>>,
    /// Keep at most this many claims per commit, in collection order.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub limit_claims_per_commit: Option<usize>,
    /// At most this many interpreters are tried per commit (default 3), the commit's era first.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub interpreters: Option<usize>,
    /// Seconds one collection may take (default 600; not part of any key).
    #[serde(default, skip_serializing)]
    #[schemars(range(min = 1))]
    pub collect_timeout: Option<u64>,
}

#[derive(Debug, Serialize, Deserialize)]
struct ItemParams {
    repo: String,
    commit: String,
    /// Interpreters to try; empty means choose from the commit's metadata.
    python: Vec<String>,
    /// The repository's pinned requirements (`dependencies:`), which may pin pytest.
    dependencies: Vec<String>,
    limit: Option<usize>,
    /// At most this many interpreters per commit.
    interpreters: usize,
    /// The repository's `releases:`; left out at the default, so keys stay as they were.
    #[serde(default, skip_serializing_if = "Releases::is_newest")]
    releases: Releases,
}

fn params<'a>(ctx: &'a StepContext) -> Result<&'a MineClaimsParams, StepError> {
    ctx.params()
}

/// The item id of a commit: `<repo>@<first 12 hex digits>`.
fn item_id(record: &CommitRecord) -> String {
    let short: String = record.commit.chars().take(12).collect();
    format!("{}@{short}", record.repo)
}

/// The digest a commit's record enters keys with: the canonical JSON of the fields mining reads.
/// Its rank, score and subject are left out, so a commit that moves in the ranking (a new commit
/// elsewhere in the history) keeps its claims without being collected again.
fn record_digest(record: &CommitRecord) -> Digest {
    #[derive(Serialize)]
    struct Read<'a> {
        repo: &'a str,
        commit: &'a str,
        parent: &'a str,
        test_files: &'a [String],
    }
    let read = Read {
        repo: &record.repo,
        commit: &record.commit,
        parent: &record.parent,
        test_files: &record.test_files,
    };
    Digest::of(&serde_json::to_vec(&read).expect("records serialize"))
}

/// A failure of `item`, because of `source`.
fn item_failed(
    ctx: &StepContext,
    item: &str,
    source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
) -> StepError {
    StepError::failed(format!("step `{}`: item `{item}`", ctx.step.name), source)
}

/// The tool fingerprints every item shares: what decides interpreters, pytest and collection.
fn shared_tools() -> Vec<(String, String)> {
    let installed = python::installed_interpreters();
    let versions: Vec<String> = installed.iter().map(|i| i.version.to_string()).collect();
    let series: Vec<String> = installed
        .iter()
        .map(|i| {
            format!(
                "{}={}",
                i.version.minor_string(),
                python::pytest_requirement(i.version)
            )
        })
        .collect();
    let installer = match Installer::detect() {
        Installer::Pip => "pip",
        Installer::Uv => "uv",
    };
    vec![
        ("interpreters".into(), versions.join(",")),
        ("pytest_series".into(), series.join(";")),
        ("installer".into(), installer.into()),
        ("pytest_eras".into(), python::pytest_series_fingerprint()),
        (
            "discovery_rules".into(),
            python::DISCOVERY_RULES.to_string(),
        ),
        (
            "collect_plugin".into(),
            Digest::of(COLLECT_PLUGIN.as_bytes()).to_string(),
        ),
    ]
}

/// What a step of this kind reads from the steps it needs.
const NEEDS: &[Need] = &[Need {
    roles: &[Role::Commits],
    step: "a `rank-commits` step",
    reads: "the commits it mines",
}];

impl StepKind for MineClaims {
    fn name(&self) -> &'static str {
        "mine-claims"
    }

    fn version(&self) -> u32 {
        // 3: at most `interpreters` (default 3) per commit, pytest chosen by the parent's date,
        // and environment failures excluded (kind `environment`) rather than failing the item.
        // 4: untouched test modules that import a touched file are collected too, and the tests
        // they inherit from it become claims (with `origin`).
        // 5: such an importer that fails to collect is left out instead of excluding the commit.
        // 6: claims carry the commit's touched test files, and the checkout is registered as the
        // project's distribution (a package that reads its own version at import collects).
        // 7: in a project that runs its tests with nose, touched modules nose names
        // (`arrow_tests.py`) are test modules.
        // 8: the checkout registered as the project's distribution carries the entry points its
        // packaging files declare (a test module may list plugins when it is collected).
        8
    }

    fn about(&self) -> &'static str {
        "collect each candidate commit's tests at its parent with pytest and keep those with assertions as claims"
    }

    fn params(&self) -> ParamsDecl {
        ParamsDecl::of::<MineClaimsParams>()
    }

    fn requires(&self, _step: &StepSpec) -> &'static [Need] {
        NEEDS
    }

    fn role(&self, _step: &StepSpec) -> Role {
        Role::Claims
    }

    fn items(&self, ctx: &StepContext, upstream: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        let params = params(ctx)?;
        let ranked = upstream
            .first_with_role(|role| *role == Role::Commits)
            .ok_or_else(|| {
                StepError::Input(format!(
                    "step `{}`: mine-claims needs a `rank-commits` step in `needs`",
                    ctx.step.name
                ))
            })?;
        let tools = shared_tools();
        let mut items: Vec<ItemPlan> = Vec::new();
        for record in ranked.decode_all::<CommitRecord>()? {
            let id = item_id(&record);
            if items.iter().any(|item| item.id == id) {
                continue;
            }
            let spec = ctx.pipeline.repo(&record.repo).ok_or_else(|| {
                StepError::Input(format!(
                    "step `{}`: commit {} names repository `{}`, which is not a `repos:` entry",
                    ctx.step.name, record.commit, record.repo
                ))
            })?;
            let dependencies = spec.dependencies.clone();
            let item_params = ItemParams {
                repo: record.repo.clone(),
                commit: record.commit.clone(),
                python: params.python.clone().unwrap_or_else(|| spec.python.clone()),
                dependencies,
                limit: params.limit_claims_per_commit,
                interpreters: params.interpreters.unwrap_or(python::DEFAULT_INTERPRETERS),
                releases: spec.releases,
            };
            let mut plan = ItemPlan::new(id)
                .params(serde_json::to_value(item_params).expect("item params serialize"))
                .read("commit", record_digest(&record))
                .pool(Pool::Pytest);
            for (name, fingerprint) in &tools {
                plan = plan.tool(name.clone(), fingerprint.clone());
            }
            items.push(plan);
        }
        Ok(items)
    }

    fn run(
        &self,
        ctx: &StepContext,
        item: &ItemPlan,
        upstream: &Upstream,
    ) -> Result<ItemOutput, StepError> {
        let params: ItemParams = item
            .params
            .decode()
            .map_err(|error| item_failed(ctx, &item.id, error))?;
        let record = upstream
            .first_with_role(|role| *role == Role::Commits)
            .map(|ranked| ranked.decode_all::<CommitRecord>())
            .transpose()?
            .into_iter()
            .flatten()
            .find(|record| record.repo == params.repo && record.commit == params.commit)
            .filter(|record| Some(&record_digest(record)) == item.reads.get("commit"))
            .ok_or_else(|| {
                // The items were planned from these records.
                StepError::Invariant(format!(
                    "step `{}`: item `{}`: its commit record is not among rank-commits' outputs",
                    ctx.step.name, item.id
                ))
            })?;
        let spec = ctx.pipeline.repo(&params.repo).ok_or_else(|| {
            StepError::Input(format!(
                "step `{}`: item `{}`: repository `{}` is not a `repos:` entry",
                ctx.step.name, item.id, params.repo
            ))
        })?;
        let located = repository::locate(spec, ctx.workdir)?;
        let git = located.open()?;
        let slot = slot_name(&item.id);
        let worktree = ctx
            .private_root()
            .join("worktrees")
            .join(format!("claims-{slot}"));
        let scratch = ctx.scratch(&slot)?;
        python::checkout_commit(&git, &record.parent, &worktree)
            .map_err(|error| item_failed(ctx, &item.id, error))?;
        python::prepare_checkout(&worktree).map_err(|error| {
            StepError::failed(
                format!(
                    "step `{}`: item `{}`: prepare the checkout {}",
                    ctx.step.name,
                    item.id,
                    worktree.display()
                ),
                error,
            )
        })?;
        let date = git2::Oid::from_str(&record.parent)
            .and_then(|parent| git.find_commit(parent))
            .map(|parent| parent.time().seconds())
            .ok();
        let settings = MineSettings {
            python: params.python.clone(),
            dependencies: params.dependencies.clone(),
            limit: params.limit,
            timeout: Duration::from_secs(params_timeout(ctx)?),
            interpreters: params.interpreters,
            date,
            released_before: super::repositories::release_bound(params.releases, date)
                .map_err(|reason| item_failed(ctx, &item.id, reason))?,
        };
        let notify = |message: &str| ctx.note(message);
        let mined = python::mine_commit(
            &record,
            &settings,
            &worktree,
            &scratch,
            &ctx.session.get::<python::FailedBuilds>(),
            &notify,
        );
        // Clean between checkouts: the next item in this slot starts from nothing.
        let _ = std::fs::remove_dir_all(&worktree);
        let _ = std::fs::remove_dir_all(&scratch);
        let mined = mined.map_err(|error| item_failed(ctx, &item.id, error))?;
        // A broken claim fails the item, so it never reaches the cache.
        for claim in &mined.claims {
            python::check_claim(claim).map_err(StepError::Invariant)?;
        }
        let mut output = ItemOutput::records(&mined.claims);
        if let Some(summary) = &mined.summary {
            output
                .blobs
                .insert("summary".into(), ctx.store.put_json(summary)?);
        }
        if let Some(exclusion) = &mined.exclusion {
            output
                .blobs
                .insert("exclusion".into(), ctx.store.put_json(exclusion)?);
        }
        Ok(output)
    }

    fn publish(&self, ctx: &StepContext, items: &[ItemResult]) -> Result<(), StepError> {
        let mut claims: Vec<MinedClaim> = Vec::new();
        let mut exclusions: Vec<ExclusionRecord> = Vec::new();
        let mut summaries: Vec<ClaimSummary> = Vec::new();
        for item in items {
            for claim in item.output.decode::<MinedClaim>()? {
                python::check_claim(&claim).map_err(StepError::Invariant)?;
                claims.push(claim);
            }
            if let Some(digest) = item.output.blobs.get("exclusion") {
                exclusions.push(ctx.store.get_json(digest)?);
            }
            if let Some(digest) = item.output.blobs.get("summary") {
                summaries.push(ctx.store.get_json(digest)?);
            }
        }
        let environment_failures = exclusions
            .iter()
            .filter(|exclusion| exclusion.kind == ExclusionKind::Environment)
            .count();
        if !items.is_empty() && environment_failures == items.len() {
            let first_reasons = exclusions
                .iter()
                .take(3)
                .map(|exclusion| format!("{}: {}", exclusion.commit, exclusion.reason))
                .collect();
            return Err(StepError::Cause(Box::new(BrokenSetup::Mining {
                step: ctx.step.name.to_string(),
                commits: items.len(),
                first_reasons,
            })));
        }
        ctx.write_jsonl(&ctx.own_result("claims.jsonl"), &claims)?;
        ctx.write_jsonl(&ctx.own_result("excluded.jsonl"), &exclusions)?;
        ctx.write_jsonl(&ctx.own_result("claims-summary.jsonl"), &summaries)
    }
}

fn params_timeout(ctx: &StepContext) -> Result<u64, StepError> {
    Ok(params(ctx)?.collect_timeout.unwrap_or(600))
}

/// A directory name for an item: its id with anything but `[A-Za-z0-9._-]` replaced.
fn slot_name(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_read_digest_ignores_the_ranking() {
        let record: CommitRecord = serde_json::from_value(json!({
            "repo": "demo", "commit": "c", "parent": "p", "score": 1.0,
            "subject": "s", "test_files": ["tests/test_a.py"], "source_files": []
        }))
        .unwrap();
        let mut moved = record.clone();
        moved.score = 7.0;
        moved.rank = 3;
        moved.subject = "reworded".into();
        assert_eq!(record_digest(&record), record_digest(&moved));
        let mut touched = record.clone();
        touched.test_files.push("tests/test_b.py".into());
        assert_ne!(record_digest(&record), record_digest(&touched));
    }

    #[test]
    fn item_ids_and_slots() {
        let record: CommitRecord = serde_json::from_value(json!({
            "repo": "demo", "commit": "0123456789abcdef0123", "parent": "p", "score": 1.0,
            "subject": "s", "test_files": [], "source_files": []
        }))
        .unwrap();
        assert_eq!(item_id(&record), "demo@0123456789ab");
        assert_eq!(slot_name("demo/x@0123"), "demo_x_0123");
    }
}
