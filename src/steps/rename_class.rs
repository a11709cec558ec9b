//! The `rename-class` step kind: claims whose test references a symbol its commit renamed purely.
//!
//! ```yaml
//! renames: {uses: rename-class, needs: [claims]}
//! ```
//! One item per commit, keyed by its claims and the parent and child commit ids: the commit's
//! touched source files are read at both commits, pure renames found with
//! [`crate::controls::rename`], and every claim whose test names an old symbol is recorded with
//! the renames it references (`rename_class.jsonl`). `stats` counts the flipped ones per split
//! and reports each arm's recall on them, or says the class is too small to rate.

use std::collections::BTreeMap;

use serde_json::json;

use crate::arms::{Change, Claim};
use crate::cache::Digest;
use crate::controls::rename::{RenameClaim, referenced, renames_in};
use crate::engine::{
    ItemOutput, ItemPlan, ItemResult, NoParams, ParamsDecl, Role, StepContext, StepError, StepKind,
    Upstream,
};
use crate::mining::test_files::TestFileRules;
use crate::pipeline::Need;
use crate::pipeline::StepSpec;

/// The `rename-class` step kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct RenameClass;

impl RenameClass {
    fn test_rules(ctx: &StepContext, repo: &str) -> Result<Vec<String>, StepError> {
        let spec = ctx.pipeline.repo(repo).ok_or_else(|| {
            StepError::Invariant(format!(
                "step `{}`: a claim names repository `{repo}`, which the pipeline does not \
                 declare",
                ctx.step.name
            ))
        })?;
        let rules = TestFileRules::for_repository(spec, &[]).map_err(|error| {
            StepError::Input(format!(
                "step `{}`: repository `{repo}`: {error}",
                ctx.step.name
            ))
        })?;
        Ok(rules.patterns())
    }
}

/// What a step of this kind reads from the steps it needs.
const NEEDS: &[Need] = &[Need {
    roles: &[Role::Claims],
    step: "a `mine-claims` step",
    reads: "the claims it classes",
}];

impl StepKind for RenameClass {
    fn name(&self) -> &'static str {
        "rename-class"
    }

    fn version(&self) -> u32 {
        1
    }

    fn about(&self) -> &'static str {
        "claims whose test references a symbol their commit renamed without changing its body"
    }

    fn params(&self) -> ParamsDecl {
        ParamsDecl::of::<NoParams>()
    }

    fn requires(&self, _step: &StepSpec) -> &'static [Need] {
        NEEDS
    }

    fn role(&self, _step: &StepSpec) -> Role {
        Role::RenameClass
    }

    fn items(&self, ctx: &StepContext, upstream: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        let claims = upstream
            .first_with_role(|role| *role == Role::Claims)
            .ok_or_else(|| {
                StepError::Input(format!(
                    "step `{}`: needs a `mine-claims` step; add it to `needs:`",
                    ctx.step.name
                ))
            })?;
        let mut commits: BTreeMap<(String, String, String), Vec<serde_json::Value>> =
            BTreeMap::new();
        for item in &claims.items {
            for record in &item.output.records {
                let claim = Claim::from_record(record).map_err(|error| {
                    StepError::failed(format!("step `{}`", ctx.step.name), error)
                })?;
                commits
                    .entry((claim.repo, claim.parent, claim.commit))
                    .or_default()
                    .push(record.clone());
            }
        }
        let mut patterns = BTreeMap::new();
        let mut plans = Vec::new();
        for ((repo, parent, child), records) in commits {
            if !patterns.contains_key(&repo) {
                patterns.insert(repo.clone(), Self::test_rules(ctx, &repo)?);
            }
            let bytes = serde_json::to_vec(&records).expect("a JSON value serializes");
            plans.push(
                ItemPlan::new(format!("{repo}@{parent}..{child}"))
                    .params(json!({"claims": records, "test_patterns": patterns[&repo]}))
                    .read("claims", Digest::of(&bytes))
                    .tool("parent", parent)
                    .tool("child", child),
            );
        }
        Ok(plans)
    }

    fn run(
        &self,
        ctx: &StepContext,
        item: &ItemPlan,
        _upstream: &Upstream,
    ) -> Result<ItemOutput, StepError> {
        let failed = |error: Box<dyn std::error::Error + Send + Sync>| {
            StepError::failed(format!("step `{}` item {}", ctx.step.name, item.id), error)
        };
        let claims: Vec<Claim> = item.params["claims"]
            .as_array()
            .into_iter()
            .flatten()
            .map(Claim::from_record)
            .collect::<Result<_, _>>()
            .map_err(|error| failed(error.into()))?;
        let Some(first) = claims.first() else {
            return Ok(ItemOutput::default());
        };
        let patterns: Vec<String> = serde_json::from_value(item.params["test_patterns"].clone())
            .map_err(|error| failed(error.into()))?;
        let rules = TestFileRules::new(&patterns).map_err(|error| failed(error.into()))?;
        let spec = ctx.pipeline.repo(&first.repo).ok_or_else(|| {
            StepError::Invariant(format!(
                "step `{}`: claim {} names an undeclared repository",
                ctx.step.name, first.id
            ))
        })?;
        let repository = crate::mining::repository::locate(spec, ctx.workdir)
            .and_then(|prepared| prepared.open())
            .map_err(|error| failed(error.into()))?;
        let change = Change::load_with(&repository, &first.parent, &first.commit, &rules)
            .map_err(|error| failed(error.into()))?;
        let renames = renames_in(&change).map_err(|error| failed(error.into()))?;
        let mut records = Vec::new();
        for claim in &claims {
            // A test the parser cannot read references nothing it can show.
            let Ok(found) = referenced(&claim.source, &renames) else {
                continue;
            };
            if !found.is_empty() {
                records.push(RenameClaim {
                    claim: claim.id.clone(),
                    renames: found.into_iter().cloned().collect(),
                });
            }
        }
        Ok(ItemOutput::records(records))
    }

    fn publish(&self, ctx: &StepContext, items: &[ItemResult]) -> Result<(), StepError> {
        let mut records = Vec::new();
        for item in items {
            records.extend(item.output.records.iter().cloned());
        }
        ctx.write_jsonl(&ctx.own_result("rename_class.jsonl"), records)
    }
}
