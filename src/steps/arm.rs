//! The `arm` step kind: the baseline arms that read no model, over the claims of a `mine-claims`
//! step, written to `predictions/<step>.jsonl`.
//!
//! ```yaml
//! a3: {uses: arm, needs: [claims], with: {arm: file-anchoring, transitive: false}}
//! ```
//! The constant arms (`a0`, `a1`) are one cheap item for the whole step, keyed by every upstream
//! item's output digest. The anchoring arms are one item per claim, keyed by the claim record's
//! digest and the parent and child commit ids, so a new claim or a changed one is all a re-run
//! computes. The testmon arm is one item per commit (its database is built once per parent), run
//! in the pytest pool. With a `stratify` or `cutoff` step among its needs, an arm judges only the
//! claims that step selected.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::arms::{Change, Claim, ConstantArm, FileAnchoring, SymbolAnchoring, testmon};
use crate::cache::Digest;
use crate::engine::{
    ItemOutput, ItemPlan, ItemResult, ParamSpec, ParamType, Pool, StepContext, StepError, StepKind,
    Upstream,
};
use crate::mining::test_files::TestFileRules;
use crate::records::PredictionRecord;

/// The step kinds whose records are claims.
const CLAIM_KINDS: &[&str] = &["mine-claims"];

/// The arm names `with: {arm: ...}` accepts.
const ARM_NAMES: &[&str] = &["a0", "a1", "file-anchoring", "symbol-anchoring", "testmon"];

const PARAMS: &[ParamSpec] = &[
    ParamSpec::required(
        "arm",
        ParamType::Enum(ARM_NAMES),
        "which arm: a0 (always invalidate), a1 (never), file-anchoring (A3), symbol-anchoring (A4), \
         testmon (A4b)",
    ),
    ParamSpec::optional(
        "transitive",
        ParamType::Bool,
        "file-anchoring: also count modules the test's imports import (default false)",
    ),
];

/// The `arm` step kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct Arm;

/// The arm a step runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum ArmName {
    A0,
    A1,
    FileAnchoring,
    SymbolAnchoring,
    Testmon,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    arm: ArmName,
    #[serde(default)]
    transitive: bool,
}

/// One claim record from upstream, as stored.
struct UpstreamClaim {
    record: serde_json::Value,
    claim: Claim,
}

/// The `repos:` entry settings that change an arm's result, resolved at planning so they enter
/// the item keys: the test-file patterns (a touched test file carries no change, as the oracle
/// restores it) and the pinned dependencies of the testmon environment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct RepositorySettings {
    test_patterns: Vec<String>,
    #[serde(default)]
    dependencies: Vec<String>,
}

impl RepositorySettings {
    /// The settings of the `repos:` entry `repo`.
    fn of(ctx: &StepContext, repo: &str) -> Result<Self, StepError> {
        let spec = ctx.pipeline.repo(repo).ok_or_else(|| {
            StepError::Invariant(format!(
                "step `{}`: a claim names repository `{repo}`, which the pipeline does not declare",
                ctx.step.name
            ))
        })?;
        let strings = |key: &str| -> Result<Vec<String>, StepError> {
            match spec.extra.get(key) {
                None => Ok(Vec::new()),
                Some(value) => serde_json::from_value(value.clone()).map_err(|_| {
                    StepError::Input(format!(
                        "step `{}`: repository `{repo}`: `{key}` must be a list of strings",
                        ctx.step.name
                    ))
                }),
            }
        };
        let test_patterns = TestFileRules::new(&strings("test_patterns")?)
            .map_err(|error| {
                StepError::Input(format!(
                    "step `{}`: repository `{repo}`: {error}",
                    ctx.step.name
                ))
            })?
            .patterns();
        Ok(RepositorySettings {
            test_patterns,
            dependencies: strings("dependencies")?,
        })
    }

    /// The settings an item carries in its params.
    fn from_item(ctx: &StepContext, item: &ItemPlan) -> Result<Self, StepError> {
        serde_json::from_value(item.params["repository"].clone()).map_err(|error| {
            StepError::Message(format!(
                "step `{}` item {}: read the repository settings: {error}",
                ctx.step.name, item.id
            ))
        })
    }

    fn rules(&self) -> TestFileRules {
        TestFileRules::new(&self.test_patterns).expect("patterns were checked when planning")
    }
}

impl Arm {
    /// Every claim record of the needed claim steps, in step and item order.
    fn claims(ctx: &StepContext, upstream: &Upstream) -> Result<Vec<UpstreamClaim>, StepError> {
        let steps: Vec<_> = upstream
            .all()
            .filter(|output| CLAIM_KINDS.contains(&output.kind.as_str()))
            .collect();
        if steps.is_empty() {
            return Err(StepError::Input(format!(
                "step `{}`: an arm needs a step of kind {}",
                ctx.step.name,
                CLAIM_KINDS.join(" or ")
            )));
        }
        // A sample or a cutoff split upstream: only its claims are judged.
        let selected = super::selection::selected_claims(upstream);
        let mut claims = Vec::new();
        let mut seen = BTreeSet::new();
        for output in steps {
            for item in &output.items {
                for record in &item.output.records {
                    let claim = Claim::from_record(record).map_err(|error| {
                        StepError::Message(format!(
                            "step `{}`: read a claim of step `{}` item {}: {error}",
                            ctx.step.name, output.step, item.plan.id
                        ))
                    })?;
                    if selected
                        .as_ref()
                        .is_some_and(|selected| !selected.contains(&claim.id))
                    {
                        continue;
                    }
                    if !seen.insert(claim.id.clone()) {
                        return Err(StepError::Invariant(format!(
                            "step `{}`: claim {} appears twice upstream",
                            ctx.step.name, claim.id
                        )));
                    }
                    claims.push(UpstreamClaim {
                        record: record.clone(),
                        claim,
                    });
                }
            }
        }
        Ok(claims)
    }

    /// Judges one claim with an anchoring arm's `predict`.
    fn anchor(
        ctx: &StepContext,
        claim: &Claim,
        rules: &TestFileRules,
        predict: impl Fn(&Claim, &Change) -> Result<PredictionRecord, crate::arms::ArmError>,
    ) -> Result<PredictionRecord, StepError> {
        let failed = |error: &dyn std::fmt::Display| {
            StepError::Message(format!(
                "step `{}`: claim {}: {error}",
                ctx.step.name, claim.id
            ))
        };
        let spec = ctx.pipeline.repo(&claim.repo).ok_or_else(|| {
            StepError::Invariant(format!(
                "step `{}`: claim {} names repository `{}`, which the pipeline does not declare",
                ctx.step.name, claim.id, claim.repo
            ))
        })?;
        let repository = crate::mining::repository::locate(spec, ctx.workdir)
            .and_then(|prepared| prepared.open())
            .map_err(|error| failed(&error))?;
        let change = Change::load_with(&repository, &claim.parent, &claim.commit, rules)
            .map_err(|error| failed(&error))?;
        predict(claim, &change).map_err(|error| failed(&error))
    }
}

impl Arm {
    /// Asks testmon about one commit's claims.
    fn testmon(ctx: &StepContext, item: &ItemPlan) -> Result<ItemOutput, StepError> {
        let failed = |error: &dyn std::fmt::Display| {
            StepError::Message(format!(
                "step `{}` item {}: {error}",
                ctx.step.name, item.id
            ))
        };
        let claims = item.params["claims"]
            .as_array()
            .map(|records| {
                records
                    .iter()
                    .map(Claim::from_record)
                    .collect::<Result<Vec<_>, _>>()
            })
            .unwrap_or_else(|| Ok(Vec::new()))
            .map_err(|error| failed(&error))?;
        let Some(first) = claims.first() else {
            return Ok(ItemOutput::default());
        };
        let spec = ctx.pipeline.repo(&first.repo).ok_or_else(|| {
            StepError::Invariant(format!(
                "step `{}`: claim {} names repository `{}`, which the pipeline does not declare",
                ctx.step.name, first.id, first.repo
            ))
        })?;
        let repository = crate::mining::repository::locate(spec, ctx.workdir)
            .and_then(|prepared| prepared.open())
            .map_err(|error| failed(&error))?;
        let test_files: BTreeSet<String> = claims.iter().map(Claim::test_file).collect();
        let scratch = ctx.scratch(&Digest::of(item.id.as_bytes()).short())?;
        let settings = RepositorySettings::from_item(ctx, item)?;
        let rules = settings.rules();
        let request = testmon::TestmonRequest {
            repository: &repository,
            parent: &first.parent,
            child: &first.commit,
            test_files: &test_files,
            rules: &rules,
            scratch: &scratch,
        };
        let selection = match request.select(|worktree| {
            let interpreter = crate::python::select_interpreters(worktree, &spec.python)
                .into_iter()
                .next()
                .ok_or_else(|| "no installed interpreter is allowed".to_string())?;
            let mut pinned = settings.dependencies.clone();
            pinned.push(testmon::TESTMON_REQUIREMENT.to_string());
            let request =
                crate::python::EnvironmentRequest::for_commit(&interpreter, worktree, &pinned);
            crate::python::ensure_environment(&request).map_err(|error| error.to_string())
        }) {
            Ok(selection) => selection,
            Err(error) if error.cannot_judge() => {
                // testmon cannot run for this commit (it cannot start beside an old pytest, say):
                // its claims get no verdict, counted against its coverage, and the run goes on.
                crate::notes::note(
                    &ctx.step.name,
                    &format!(
                        "testmon cannot judge {} ({} claims without a verdict): {}",
                        item.id,
                        claims.len(),
                        error.to_string().lines().next().unwrap_or_default()
                    ),
                );
                return Ok(ItemOutput::records(
                    claims
                        .iter()
                        .map(|claim| testmon::unjudged(&claim.id, &error)),
                ));
            }
            Err(error) => return Err(failed(&error)),
        };
        Ok(ItemOutput::records(claims.iter().map(|claim| {
            testmon::predict(&claim.id, &claim.node, &selection)
        })))
    }
}

impl StepKind for Arm {
    fn name(&self) -> &'static str {
        "arm"
    }

    fn version(&self) -> u32 {
        1
    }

    fn about(&self) -> &'static str {
        "baseline arms without a model: always/never invalidate, file anchoring, symbol anchoring"
    }

    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }

    fn key_params(&self, with: &serde_json::Value) -> serde_json::Value {
        // `transitive` changes only file anchoring; leaving it out of the other arms' keys keeps
        // their cache entries when someone toggles it.
        let mut key = with.clone();
        if key.get("arm").and_then(|arm| arm.as_str()) != Some("file-anchoring")
            && let Some(map) = key.as_object_mut()
        {
            map.remove("transitive");
        }
        key
    }

    fn items(&self, ctx: &StepContext, upstream: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        let params: Params = ctx.params()?;
        match params.arm {
            ArmName::A0 | ArmName::A1 => {
                Self::claims(ctx, upstream)?;
                let mut plan = ItemPlan::new("all");
                for output in upstream.all() {
                    if CLAIM_KINDS.contains(&output.kind.as_str())
                        || super::selection::SELECTION_KINDS.contains(&output.kind.as_str())
                    {
                        for item in &output.items {
                            plan =
                                plan.read(format!("{}/{}", output.step, item.plan.id), item.digest);
                        }
                    }
                }
                Ok(vec![plan])
            }
            ArmName::Testmon => {
                let mut commits: BTreeMap<(String, String, String), Vec<UpstreamClaim>> =
                    BTreeMap::new();
                for upstream_claim in Self::claims(ctx, upstream)? {
                    let claim = &upstream_claim.claim;
                    let key = (
                        claim.repo.clone(),
                        claim.parent.clone(),
                        claim.commit.clone(),
                    );
                    commits.entry(key).or_default().push(upstream_claim);
                }
                let mut settings = BTreeMap::new();
                let mut plans = Vec::new();
                for ((repo, parent, child), claims) in commits {
                    if !settings.contains_key(&repo) {
                        settings.insert(repo.clone(), RepositorySettings::of(ctx, &repo)?);
                    }
                    let records: Vec<_> = claims.iter().map(|claim| &claim.record).collect();
                    let mut plan = ItemPlan::new(format!("{repo}@{parent}..{child}"))
                        .params(json!({
                            "claims": records,
                            "repository": settings[&repo],
                        }))
                        .tool("parent", parent)
                        .tool("child", child)
                        .tool("testmon", testmon::TESTMON_REQUIREMENT)
                        .pool(Pool::Pytest);
                    for claim in &claims {
                        let bytes =
                            serde_json::to_vec(&claim.record).expect("a JSON value serializes");
                        plan = plan.read(format!("claim:{}", claim.claim.id), Digest::of(&bytes));
                    }
                    plans.push(plan);
                }
                Ok(plans)
            }
            ArmName::FileAnchoring | ArmName::SymbolAnchoring => {
                let mut settings = BTreeMap::new();
                let mut plans = Vec::new();
                for upstream_claim in Self::claims(ctx, upstream)? {
                    let claim = &upstream_claim.claim;
                    if !settings.contains_key(&claim.repo) {
                        settings.insert(
                            claim.repo.clone(),
                            RepositorySettings::of(ctx, &claim.repo)?,
                        );
                    }
                    let bytes = serde_json::to_vec(&upstream_claim.record)
                        .expect("a JSON value serializes");
                    // Only the test patterns can change an anchoring arm's result.
                    let repository = json!({"test_patterns": settings[&claim.repo].test_patterns});
                    plans.push(
                        ItemPlan::new(claim.id.clone())
                            .params(json!({
                                "claim": upstream_claim.record,
                                "repository": repository,
                            }))
                            .read("claim", Digest::of(&bytes))
                            .tool("parent", claim.parent.clone())
                            .tool("child", claim.commit.clone()),
                    );
                }
                Ok(plans)
            }
        }
    }

    fn run(
        &self,
        ctx: &StepContext,
        item: &ItemPlan,
        upstream: &Upstream,
    ) -> Result<ItemOutput, StepError> {
        let params: Params = ctx.params()?;
        let constant = |arm: ConstantArm| -> Result<ItemOutput, StepError> {
            let claims = Self::claims(ctx, upstream)?;
            Ok(ItemOutput::records(
                claims.iter().map(|claim| arm.predict(&claim.claim.id)),
            ))
        };
        let claim = || {
            Claim::from_record(&item.params["claim"]).map_err(|error| {
                StepError::Message(format!(
                    "step `{}` item {}: {error}",
                    ctx.step.name, item.id
                ))
            })
        };
        let prediction = match params.arm {
            ArmName::A0 => return constant(ConstantArm::Always),
            ArmName::A1 => return constant(ConstantArm::Never),
            ArmName::Testmon => return Self::testmon(ctx, item),
            ArmName::FileAnchoring => {
                let arm = FileAnchoring {
                    transitive: params.transitive,
                };
                let rules = RepositorySettings::from_item(ctx, item)?.rules();
                Self::anchor(ctx, &claim()?, &rules, |claim, change| {
                    arm.predict(claim, change)
                })?
            }
            ArmName::SymbolAnchoring => {
                let rules = RepositorySettings::from_item(ctx, item)?.rules();
                Self::anchor(ctx, &claim()?, &rules, |claim, change| {
                    SymbolAnchoring.predict(claim, change)
                })?
            }
        };
        Ok(ItemOutput::records([prediction]))
    }

    fn publish(&self, ctx: &StepContext, items: &[ItemResult]) -> Result<(), StepError> {
        let mut predictions = Vec::new();
        for item in items {
            predictions.extend(item.output.decode::<PredictionRecord>()?);
        }
        ctx.write_jsonl(&format!("predictions/{}.jsonl", ctx.step.name), predictions)
    }
}
