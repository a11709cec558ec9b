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
//! claims that step selected; with a `shuffle` step, it judges each claim it paired against the
//! paired commit's diff (the shuffled-diff null, a control of the same arm without the shuffle);
//! with a `paraphrase` step, the claims it kept, as rewritten.

use super::repositories;
use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::arms::{Change, Claim, ConstantArm, FileAnchoring, SymbolAnchoring, testmon};
use crate::cache::Digest;
use crate::controls::shuffle::CommitRef;
use crate::engine::{
    ItemOutput, ItemPlan, ItemResult, ParamsDecl, Pool, Role, StepContext, StepError, StepKind,
    Upstream,
};
use crate::mining::test_files::TestFileRules;
use crate::pipeline::Need;
use crate::pipeline::{Releases, StepSpec};
use crate::python;
use crate::records::{MinedUnder, PredictionRecord};

/// The `arm` step kind.
#[derive(Debug, Clone, Default)]
pub struct Arm {
    /// Versions that differ from the shipped ones ([`ArmName::version`]).
    versions: BTreeMap<ArmName, u32>,
}

impl Arm {
    /// The kind with `arm` at `version` instead of its shipped version: what bumping that arm
    /// does to a pipeline's caches, without rebuilding (tests, trying a change to one arm).
    pub fn with_version(mut self, arm: ArmName, version: u32) -> Self {
        self.versions.insert(arm, version);
        self
    }
}

/// The arm a step runs.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum ArmName {
    A0,
    A1,
    FileAnchoring,
    SymbolAnchoring,
    Testmon,
}

impl ArmName {
    /// The paper's id of the strategy.
    fn strategy(self, transitive: bool) -> &'static str {
        match self {
            ArmName::A0 => "a0",
            ArmName::A1 => "a1",
            ArmName::FileAnchoring if transitive => "a3_transitive",
            ArmName::FileAnchoring => "a3",
            ArmName::SymbolAnchoring => "a4",
            ArmName::Testmon => "a4b",
        }
    }

    /// The version of this arm's predictions: bump the arm changed, and only its caches go (it
    /// enters the step's key as `arm_version`, see [`StepKind::strategy_version`]).
    fn version(self) -> u32 {
        match self {
            ArmName::A0 | ArmName::A1 => 1,
            ArmName::FileAnchoring | ArmName::SymbolAnchoring => 1,
            // 2: testmon runs under the interpreter and pytest the claims were mined under, with
            // the newest release that supports them. 3: its plugin is loaded by module, so a
            // project that pytest itself requires (at a newer version) no longer stops it.
            ArmName::Testmon => 3,
        }
    }
}

/// The parameters of `uses: arm`. The key holds the arm, its own version (added by
/// [`StepKind::strategy_version`]), and `transitive` only for file anchoring, the one arm it
/// changes: toggling it keeps the other arms' cache entries.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArmParams {
    /// Which arm: a0 (always invalidate), a1 (never), file-anchoring (A3), symbol-anchoring (A4),
    /// testmon (A4b).
    pub arm: ArmName,
    /// File-anchoring: also count modules the test's imports import (default false).
    #[serde(default)]
    pub transitive: bool,
}

impl Serialize for ArmParams {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("arm", &self.arm)?;
        if self.arm == ArmName::FileAnchoring {
            map.serialize_entry("transitive", &self.transitive)?;
        }
        map.end()
    }
}

/// True for steps whose records are claims.
fn is_claims(output: &crate::engine::StepOutput) -> bool {
    output.role == Role::Claims
}

/// One claim record from upstream, as stored.
struct UpstreamClaim {
    record: serde_json::Value,
    claim: Claim,
}

/// The `repos:` entry settings that change an arm's result, resolved at planning so they enter
/// the item keys: the test-file patterns (a touched test file carries no change, as the oracle
/// restores it), and the pinned dependencies and the releases of the testmon environment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct RepositorySettings {
    test_patterns: Vec<String>,
    #[serde(default)]
    dependencies: Vec<String>,
    /// Left out at the default, so keys stay as they were.
    #[serde(default, skip_serializing_if = "Releases::is_newest")]
    releases: Releases,
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
        let test_patterns = TestFileRules::new(spec.test_patterns.as_deref().unwrap_or_default())
            .map_err(|error| {
                StepError::Input(format!(
                    "step `{}`: repository `{repo}`: {error}",
                    ctx.step.name
                ))
            })?
            .patterns();
        Ok(RepositorySettings {
            test_patterns,
            dependencies: spec.dependencies.clone(),
            releases: spec.releases,
        })
    }

    /// The settings an item carries in its params.
    fn from_item(ctx: &StepContext, item: &ItemPlan) -> Result<Self, StepError> {
        serde_json::from_value(item.params["repository"].clone()).map_err(|error| {
            StepError::failed(
                format!(
                    "step `{}` item {}: read the repository settings",
                    ctx.step.name, item.id
                ),
                error,
            )
        })
    }

    fn rules(&self) -> TestFileRules {
        TestFileRules::new(&self.test_patterns).expect("patterns were checked when planning")
    }
}

/// Whether a claim record is a `paraphrase` step's rewrite.
fn is_paraphrased(record: &serde_json::Value) -> bool {
    record.get("record").and_then(|value| value.as_str()) == Some("paraphrased")
}

/// The other commit a shuffled claim is shown, as an item carries it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Shown {
    commit: CommitRef,
    settings: RepositorySettings,
}

impl Shown {
    fn from_item(ctx: &StepContext, item: &ItemPlan) -> Result<Option<Self>, StepError> {
        match item.params.get("shown") {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(value) => serde_json::from_value(value.clone())
                .map(Some)
                .map_err(|error| {
                    StepError::failed(
                        format!(
                            "step `{}` item {}: read the shown commit",
                            ctx.step.name, item.id
                        ),
                        error,
                    )
                }),
        }
    }
}

impl Arm {
    /// Every claim record of the needed claim steps, in step and item order.
    fn claims(ctx: &StepContext, upstream: &Upstream) -> Result<Vec<UpstreamClaim>, StepError> {
        let steps: Vec<_> = upstream.all().filter(|output| is_claims(output)).collect();
        if steps.is_empty() {
            return Err(StepError::Input(format!(
                "step `{}`: an arm needs a step whose records are claims (`mine-claims`)",
                ctx.step.name,
            )));
        }
        // A sample or a cutoff split upstream: only its claims are judged.
        let selected = super::selection::selected_claims(upstream)?;
        // A shuffle upstream: only the claims it paired are judged (each against its pair).
        let shown = super::shuffle::shown_commits(upstream)?;
        // A paraphrase upstream: only the claims it kept are judged, as rewritten.
        let paraphrased = super::paraphrase::paraphrased_claims(upstream)?;
        let mut claims = Vec::new();
        let mut seen = BTreeSet::new();
        for output in steps {
            for item in &output.items {
                for record in &item.output.records {
                    let record = match &paraphrased {
                        None => record,
                        Some(kept) => match record.get("id").and_then(|id| id.as_str()) {
                            Some(id) if kept.contains_key(id) => &kept[id],
                            _ => continue,
                        },
                    };
                    let claim = Claim::from_record(record).map_err(|error| {
                        StepError::failed(
                            format!(
                                "step `{}`: read a claim of step `{}` item {}",
                                ctx.step.name, output.step, item.plan.id
                            ),
                            error,
                        )
                    })?;
                    if selected
                        .as_ref()
                        .is_some_and(|selected| !selected.contains(&claim.id))
                    {
                        continue;
                    }
                    if shown
                        .as_ref()
                        .is_some_and(|shown| !shown.contains_key(&claim.id))
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
        item: &ItemPlan,
        predict: impl Fn(&Claim, &Change) -> Result<PredictionRecord, crate::arms::ArmError>,
    ) -> Result<PredictionRecord, StepError> {
        let rules = RepositorySettings::from_item(ctx, item)?.rules();
        let failed = |error: Box<dyn std::error::Error + Send + Sync>| {
            StepError::failed(
                format!("step `{}`: claim {}", ctx.step.name, claim.id),
                error,
            )
        };
        let (_, repository) =
            repositories::open(ctx, &claim.repo, &format!("claim {}", claim.id), failed)?;
        let change = Change::load_with(&repository, &claim.parent, &claim.commit, &rules)
            .map_err(|error| failed(error.into()))?;
        let Some(shown) = Shown::from_item(ctx, item)? else {
            return predict(claim, &change).map_err(|error| failed(error.into()));
        };
        // The shuffled-diff null: the claim read in its own trees, another commit's diff shown.
        let paired = format!("the commit paired with claim {}", claim.id);
        let (_, other) = repositories::open(ctx, &shown.commit.repo, &paired, failed)?;
        let other_rules = shown.settings.rules();
        let other_change = Change::load_with(
            &other,
            &shown.commit.parent,
            &shown.commit.commit,
            &other_rules,
        )
        .map_err(|error| failed(error.into()))?;
        let mut prediction =
            predict(claim, &change.showing(other_change)).map_err(|error| failed(error.into()))?;
        super::shuffle::mark_shown(&mut prediction.evidence, &shown.commit);
        Ok(prediction)
    }
}

impl Arm {
    /// Asks testmon about one commit's claims.
    fn testmon(ctx: &StepContext, item: &ItemPlan) -> Result<ItemOutput, StepError> {
        let failed = |error: Box<dyn std::error::Error + Send + Sync>| {
            StepError::failed(format!("step `{}` item {}", ctx.step.name, item.id), error)
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
            .map_err(|error| failed(error.into()))?;
        let Some(first) = claims.first() else {
            return Ok(ItemOutput::default());
        };
        let (spec, repository) =
            repositories::open(ctx, &first.repo, &format!("claim {}", first.id), failed)?;
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
        // The claims' environment was bounded by the parent's committer time.
        let committed = git2::Oid::from_str(&first.parent)
            .and_then(|parent| repository.find_commit(parent))
            .map(|parent| parent.time().seconds())
            .ok();
        let mined_under: Option<MinedUnder> =
            serde_json::from_value(item.params["mined_under"].clone())
                .map_err(|error| failed(error.into()))?;
        let selection = match request.select(|worktree| {
            testmon_environment(
                worktree,
                (&first.parent, committed),
                spec,
                &settings,
                mined_under.as_ref(),
                &ctx.session.get::<python::FailedBuilds>(),
            )
        }) {
            Ok(selection) => selection,
            Err(error) if error.cannot_judge() => {
                // testmon cannot run for this commit (it cannot start beside an old pytest, say):
                // its claims get no verdict, counted against its coverage, and the run goes on.
                ctx.note(&format!(
                    "testmon cannot judge {} ({} claims without a verdict): {}",
                    item.id,
                    claims.len(),
                    error.to_string().lines().next().unwrap_or_default()
                ));
                return Ok(ItemOutput::records(
                    claims
                        .iter()
                        .map(|claim| testmon::unjudged(&claim.id, &error)),
                ));
            }
            Err(error) => return Err(failed(error.into())),
        };
        Ok(ItemOutput::records(claims.iter().map(|claim| {
            testmon::predict(&claim.id, &claim.node, &selection)
        })))
    }
}

/// The environment testmon runs in for the parent checked out at `worktree`: the interpreter and
/// pytest the claims were mined under when they say (else the first allowed interpreter and the
/// pytest of its era), the repository's pins and the commit's declared requirements as mining
/// had them, and the newest pytest-testmon release that supports that interpreter and pytest.
/// Under the repository's `releases: at-commit` it carries the claims' bound, the parent's
/// committer time (`parent` is its id and that time), with pytest-testmon counted among
/// claimflow's tools: where the release chosen came out after the commit, the bound moves to just
/// after it, so testmon installs and the rest is what that day offered.
fn testmon_environment(
    worktree: &std::path::Path,
    (parent, committed): (&str, Option<i64>),
    spec: &crate::pipeline::RepoSpec,
    settings: &RepositorySettings,
    mined_under: Option<&MinedUnder>,
    failed: &python::FailedBuilds,
) -> Result<testmon::TestmonEnvironment, testmon::TestmonError> {
    let unbuildable = |message: String| testmon::TestmonError::Environment {
        commit: parent.to_string(),
        message,
    };
    let no_release = |source| testmon::TestmonError::NoRelease {
        commit: parent.to_string(),
        source,
    };
    let (interpreter, mut pinned, release) = match mined_under {
        Some(mined) => {
            let version = |text: &str| {
                text.parse::<python::PythonVersion>()
                    .map_err(|error| unbuildable(error.to_string()))
            };
            // Decided before anything is built: a commit no release fits is not judged.
            let release =
                python::testmon_for(version(&mined.interpreter)?, version(&mined.pytest)?)
                    .map_err(no_release)?;
            let interpreter = python::interpreter_for(&mined.interpreter).ok_or_else(|| {
                unbuildable(format!(
                    "python {}, which the claims were mined under, is not installed",
                    mined.interpreter
                ))
            })?;
            // Exactly the pytest the claims were collected and labelled under.
            let mut pinned = settings.dependencies.clone();
            pinned.retain(|spec| python::requirement_name(spec).as_deref() != Some("pytest"));
            pinned.push(format!("pytest=={}", mined.pytest));
            (interpreter, pinned, release)
        }
        None => {
            let interpreter = python::select_interpreters(worktree, &spec.python)
                .into_iter()
                .next()
                .ok_or_else(|| unbuildable("no installed interpreter is allowed".to_string()))?;
            let pinned = settings.dependencies.clone();
            let era =
                python::EnvironmentRequest::for_commit(&interpreter, worktree, &pinned).pytest;
            let pytest = python::lowest_pytest(&era)
                .ok_or_else(|| unbuildable(format!("read the pytest version of `{era}`")))?;
            let release = python::testmon_for(interpreter.version, pytest).map_err(no_release)?;
            (interpreter, pinned, release)
        }
    };
    pinned.push(release.requirement());
    let bound = repositories::release_bound(settings.releases, committed)
        .map_err(unbuildable)?
        .map(|bound| bound.with_tool(release.requirement()));
    let request = python::EnvironmentRequest::for_commit(&interpreter, worktree, &pinned)
        .released_before(bound);
    let environment = python::ensure_environment(&request, failed)
        .map_err(|error| unbuildable(error.to_string()))?;
    Ok(testmon::TestmonEnvironment {
        environment,
        release,
    })
}

/// The settings of each repository the planned claims name, each read once.
#[derive(Default)]
struct SettingsByRepository(BTreeMap<String, RepositorySettings>);

impl SettingsByRepository {
    fn get(&mut self, ctx: &StepContext, repo: &str) -> Result<&RepositorySettings, StepError> {
        if !self.0.contains_key(repo) {
            self.0
                .insert(repo.to_string(), RepositorySettings::of(ctx, repo)?);
        }
        Ok(&self.0[repo])
    }
}

/// Planning: the constant arms are one item, the testmon arm one item per commit, the anchoring
/// arms one item per claim.
impl Arm {
    /// The one item of a constant arm, keyed by every claim, selection and control output.
    fn constant_items(ctx: &StepContext, upstream: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        Self::claims(ctx, upstream)?;
        Ok(vec![ItemPlan::new("all").read_outputs(
            upstream.all().filter(|output| {
                is_claims(output)
                    || super::selection::is_selection(output)
                    || super::shuffle::declares_control(output).is_some()
            }),
        )])
    }

    /// One item per commit, whose claims share the testmon database built at its parent.
    fn testmon_items(ctx: &StepContext, upstream: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        if super::shuffle::shown_commits(upstream)?.is_some() {
            return Err(StepError::Input(format!(
                "step `{}`: the testmon arm cannot judge shuffled pairs (its database is \
                 built at the claim's own parent); run a file- or symbol-anchoring arm \
                 on the shuffle instead",
                ctx.step.name
            )));
        }
        let mut commits: BTreeMap<(String, String, String), Vec<UpstreamClaim>> = BTreeMap::new();
        for upstream_claim in Self::claims(ctx, upstream)? {
            let claim = &upstream_claim.claim;
            let key = (
                claim.repo.clone(),
                claim.parent.clone(),
                claim.commit.clone(),
            );
            commits.entry(key).or_default().push(upstream_claim);
        }
        let mut settings = SettingsByRepository::default();
        let mut plans = Vec::new();
        for ((repo, parent, child), claims) in commits {
            let repository = settings.get(ctx, &repo)?;
            let item = format!("{repo}@{parent}..{child}");
            plans.push(Self::testmon_item(item, repository, parent, child, &claims));
        }
        Ok(plans)
    }

    /// The testmon item of one commit's claims.
    fn testmon_item(
        item: String,
        repository: &RepositorySettings,
        parent: String,
        child: String,
        claims: &[UpstreamClaim],
    ) -> ItemPlan {
        let records: Vec<_> = claims.iter().map(|claim| &claim.record).collect();
        // The claims of a commit were mined together, under one interpreter.
        let mined_under = claims
            .iter()
            .find_map(|claim| MinedUnder::of_record(&claim.record));
        let mut plan = ItemPlan::new(item)
            .params(json!({
                "claims": records,
                "repository": repository,
                "mined_under": mined_under,
            }))
            .tool("parent", parent)
            .tool("child", child)
            .tool("testmon", python::testmon_fingerprint())
            .pool(Pool::Pytest);
        for claim in claims {
            let bytes = serde_json::to_vec(&claim.record).expect("a JSON value serializes");
            plan = plan.read(format!("claim:{}", claim.claim.id), Digest::of(&bytes));
        }
        plan
    }

    /// One item per claim; a shuffled claim's item also carries the commit it is shown.
    fn anchoring_items(ctx: &StepContext, upstream: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        let mut settings = SettingsByRepository::default();
        let mut plans = Vec::new();
        let shown = super::shuffle::shown_commits(upstream)?;
        for upstream_claim in Self::claims(ctx, upstream)? {
            let claim = &upstream_claim.claim;
            let paired = shown.as_ref().and_then(|shown| shown.get(&claim.id));
            // Only the test patterns can change an anchoring arm's result.
            let test_patterns = settings.get(ctx, &claim.repo)?.test_patterns.clone();
            let shown = match paired {
                Some(commit) => Some(Shown {
                    commit: commit.clone(),
                    settings: RepositorySettings {
                        test_patterns: settings.get(ctx, &commit.repo)?.test_patterns.clone(),
                        dependencies: Vec::new(),
                        releases: Releases::Newest,
                    },
                }),
                None => None,
            };
            plans.push(Self::anchoring_item(&upstream_claim, test_patterns, shown));
        }
        Ok(plans)
    }

    /// The anchoring item of one claim, judged against its own diff or the one it is `shown`.
    fn anchoring_item(
        upstream_claim: &UpstreamClaim,
        test_patterns: Vec<String>,
        shown: Option<Shown>,
    ) -> ItemPlan {
        let claim = &upstream_claim.claim;
        let bytes = serde_json::to_vec(&upstream_claim.record).expect("a JSON value serializes");
        let mut params = json!({
            "claim": upstream_claim.record,
            "repository": {"test_patterns": test_patterns},
        });
        let mut plan = ItemPlan::new(claim.id.clone())
            .read("claim", Digest::of(&bytes))
            .tool("parent", claim.parent.clone())
            .tool("child", claim.commit.clone());
        if let Some(shown) = shown {
            plan = plan
                .tool("shown_parent", shown.commit.parent.clone())
                .tool("shown_child", shown.commit.commit.clone());
            // Only a shuffled item carries the key, so the unshuffled keys stay.
            params["shown"] = json!(shown);
        }
        plan.params(params)
    }
}

/// What a step of this kind reads from the steps it needs.
const NEEDS: &[Need] = &[Need {
    roles: &[Role::Claims],
    step: "a `mine-claims` step",
    reads: "the claims it judges",
}];

impl StepKind for Arm {
    fn name(&self) -> &'static str {
        "arm"
    }

    fn version(&self) -> u32 {
        1
    }

    fn strategy_version(&self, step: &StepSpec) -> Option<u32> {
        let arm = step.params.get::<ArmParams>()?.arm;
        Some(self.versions.get(&arm).copied().unwrap_or(arm.version()))
    }

    fn about(&self) -> &'static str {
        "baseline arms without a model: always/never invalidate, file anchoring, symbol anchoring"
    }

    fn params(&self) -> ParamsDecl {
        ParamsDecl::of::<ArmParams>()
    }

    fn requires(&self, _step: &StepSpec) -> &'static [Need] {
        NEEDS
    }

    fn role(&self, step: &StepSpec) -> Role {
        match step.params.get::<ArmParams>() {
            Some(params) => Role::Predictions {
                strategy: params.arm.strategy(params.transitive).to_string(),
                model: None,
            },
            None => Role::Other,
        }
    }

    fn items(&self, ctx: &StepContext, upstream: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        let params: &ArmParams = ctx.params()?;
        match params.arm {
            ArmName::A0 | ArmName::A1 => Self::constant_items(ctx, upstream),
            ArmName::Testmon => Self::testmon_items(ctx, upstream),
            ArmName::FileAnchoring | ArmName::SymbolAnchoring => {
                Self::anchoring_items(ctx, upstream)
            }
        }
    }

    fn run(
        &self,
        ctx: &StepContext,
        item: &ItemPlan,
        upstream: &Upstream,
    ) -> Result<ItemOutput, StepError> {
        let params: &ArmParams = ctx.params()?;
        let constant = |arm: ConstantArm| -> Result<ItemOutput, StepError> {
            let claims = Self::claims(ctx, upstream)?;
            let shown = super::shuffle::shown_commits(upstream)?.unwrap_or_default();
            Ok(ItemOutput::records(claims.iter().map(|claim| {
                let mut prediction = arm.predict(&claim.claim.id);
                if let Some(commit) = shown.get(&claim.claim.id) {
                    super::shuffle::mark_shown(&mut prediction.evidence, commit);
                }
                if is_paraphrased(&claim.record) {
                    super::paraphrase::mark_paraphrased(&mut prediction.evidence);
                }
                prediction
            })))
        };
        let claim = || {
            Claim::from_record(&item.params["claim"]).map_err(|error| {
                StepError::failed(format!("step `{}` item {}", ctx.step.name, item.id), error)
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
                Self::anchor(ctx, &claim()?, item, |claim, change| {
                    arm.predict(claim, change)
                })?
            }
            ArmName::SymbolAnchoring => Self::anchor(ctx, &claim()?, item, |claim, change| {
                SymbolAnchoring.predict(claim, change)
            })?,
        };
        let mut prediction = prediction;
        if is_paraphrased(&item.params["claim"]) {
            super::paraphrase::mark_paraphrased(&mut prediction.evidence);
        }
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
