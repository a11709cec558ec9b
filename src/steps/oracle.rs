//! `uses: oracle`: the execution oracle as a step.
//!
//! ```yaml
//! truth: {uses: oracle, needs: [claims], with: {runs: 10, timeout: 300, import_errors: discard}}
//! ```
//!
//! One item per commit (`<repo>@<commit>`). Its key reads the digest of that commit's claims (and
//! of its `rank-commits` record when the step also needs `rank-commits`), the interpreter and pytest
//! fingerprint, and the commit ids; `timeout` is left out, since it cannot change a verdict that
//! was reached. A re-run over the same commits therefore runs no pytest at all. Items for different
//! commits run in parallel, each in its own slot (a worktree and a run directory), as many at once
//! as the engine's pytest permits (`--pytest-slots`) allow: the permits are the only bound.
//! Before anything is written the step checks the oracle's invariants; a broken one fails the step.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cache::Digest;
use crate::engine::{
    ItemOutput, ItemPlan, ItemResult, ParamsDecl, Pool, Role, Session, StepContext, StepError,
    StepKind, Upstream,
};
use crate::mining::TestFileRules;
use crate::oracle::invariants::{check_claims, check_judgements};
use crate::oracle::worktree::slot_dir;
use crate::oracle::{
    Cause, CommitUnderTest, ImportErrorPolicy, Judgement, OracleSummary, Settings, Slot, Worktree,
    judge_commit,
};
use crate::pipeline::Need;
use crate::pipeline::StepSpec;
use crate::pipeline::{Releases, RepoSpec};
use crate::python::{self, BuildFailure, Environment, EnvironmentRequest, Installer, Requirement};
use crate::records::{ClaimRecord, CommitRecord, Label, TruthRecord};

/// The parameters of `uses: oracle`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OracleParams {
    /// Runs at the parent and at the child (N, default 10).
    #[serde(default = "default_runs")]
    #[schemars(range(min = 1, max = 1000))]
    pub runs: u32,
    /// Seconds per pytest run before it is killed (default 300); not part of any key.
    #[serde(default = "default_timeout", skip_serializing)]
    #[schemars(range(min = 1))]
    pub timeout: f64,
    /// Claims whose test file no longer imports at the child: discard (default) or flip.
    #[serde(default)]
    pub import_errors: ImportErrorPolicy,
}

fn default_runs() -> u32 {
    10
}

fn default_timeout() -> f64 {
    300.0
}

/// The per-item parameters.
#[derive(Debug, Serialize, Deserialize)]
struct CommitItem {
    repo: String,
    parent: String,
    commit: String,
    /// The ids of the claims judged, in order.
    claims: Vec<String>,
}

/// Why the oracle has no environment for a commit.
#[derive(Debug)]
pub enum EnvironmentFailure {
    /// The machine or the network failed (the package index unreachable): the item fails, nothing
    /// is cached, and a later run tries again.
    Retry(String),
    /// The commit's environment cannot be built (a requirement that will not install, no allowed
    /// interpreter): its claims are discarded with this reason, never labelled.
    Unbuildable(String),
}

/// Where the oracle gets the Python environment it runs a repository's tests in.
pub trait Environments: Send + Sync {
    /// What enters the keys of `repo`'s items: interpreter and pytest versions, never paths.
    fn fingerprint(&self, repo: &RepoSpec) -> Result<BTreeMap<String, String>, StepError>;

    /// The environment for a commit of `repo` whose parent, dated `date` (seconds since the
    /// epoch), is checked out at `worktree`, under the interpreter the claims were mined with when
    /// known (`3.11.7`); `child` is what the child commit declares. One environment serves the
    /// parent and the child, so a difference in outcome comes from the code: the parent's
    /// requirements plus those the child adds (a test dependency its own new tests import).
    /// `session` is the run's, where what lasts one run (the builds that failed) is kept.
    fn environment(
        &self,
        repo: &RepoSpec,
        worktree: &Path,
        interpreter: Option<&str>,
        date: Option<i64>,
        child: &[Requirement],
        session: &Session,
    ) -> Result<Environment, EnvironmentFailure>;
}

/// One environment for every repository (tests, and users who bring their own environment).
pub struct FixedEnvironment(pub Environment);

impl Environments for FixedEnvironment {
    fn fingerprint(&self, _repo: &RepoSpec) -> Result<BTreeMap<String, String>, StepError> {
        Ok(self.0.fingerprint())
    }

    fn environment(
        &self,
        _repo: &RepoSpec,
        _worktree: &Path,
        _interpreter: Option<&str>,
        _date: Option<i64>,
        _child: &[Requirement],
        _session: &Session,
    ) -> Result<Environment, EnvironmentFailure> {
        Ok(self.0.clone())
    }
}

/// The environments `mine-claims` uses: interpreters chosen by the repository's `python:` list or
/// the commit's metadata, the commit's declared test dependencies plus the repository's pinned
/// `dependencies:`, pytest of the parent's era, built once per content and shared through the
/// user's cache.
pub struct PythonEnvironments;

/// The repository's pinned `dependencies:`.
fn pinned_dependencies(repo: &RepoSpec) -> Vec<String> {
    repo.dependencies.clone()
}

impl Environments for PythonEnvironments {
    fn fingerprint(&self, repo: &RepoSpec) -> Result<BTreeMap<String, String>, StepError> {
        let installed = python::installed_interpreters();
        let series: Vec<String> = installed
            .iter()
            .map(|interpreter| {
                format!(
                    "{}={}",
                    interpreter.version,
                    python::pytest_requirement(interpreter.version)
                )
            })
            .collect();
        let installer = match Installer::detect() {
            Installer::Pip => "pip",
            Installer::Uv => "uv",
        };
        let mut fingerprint = BTreeMap::from([
            ("interpreters".to_string(), series.join(";")),
            ("installer".to_string(), installer.to_string()),
            ("declared".to_string(), repo.python.join(",")),
            ("pinned".to_string(), pinned_dependencies(repo).join(",")),
            // Which commits' declarations the environment is built from.
            (
                "requirements".to_string(),
                "parent, plus the child's additions".to_string(),
            ),
            (
                "pytest_eras".to_string(),
                python::pytest_series_fingerprint(),
            ),
            (
                "discovery_rules".to_string(),
                python::DISCOVERY_RULES.to_string(),
            ),
        ]);
        // Only when set, so the keys of repositories that install the newest stay as they were.
        if repo.releases == Releases::AtCommit {
            fingerprint.insert("releases".to_string(), "at-commit".to_string());
        }
        Ok(fingerprint)
    }

    fn environment(
        &self,
        repo: &RepoSpec,
        worktree: &Path,
        interpreter: Option<&str>,
        date: Option<i64>,
        child: &[Requirement],
        session: &Session,
    ) -> Result<Environment, EnvironmentFailure> {
        let failed = session.get::<python::FailedBuilds>();
        let metadata = python::ProjectMetadata::read(worktree);
        let mut interpreters = python::choose_interpreters_at(
            &metadata,
            &repo.python,
            python::installed_interpreters(),
            date,
        )
        .map_err(|error| {
            EnvironmentFailure::Unbuildable(format!("repository `{}`: {error}", repo.name))
        })?;
        // The claims passed under the interpreter they were mined with: try it first.
        interpreters
            .sort_by_key(|candidate| interpreter != Some(candidate.version.to_string().as_str()));
        let pinned = pinned_dependencies(repo);
        // The parent's time bounds the child's additions too: one environment serves both, built
        // from the parent's requirements as mining built it.
        let bound = super::repositories::release_bound(repo.releases, date).map_err(|reason| {
            EnvironmentFailure::Unbuildable(format!("repository `{}`: {reason}", repo.name))
        })?;
        let mut failures = Vec::new();
        for interpreter in interpreters.iter().take(python::DEFAULT_INTERPRETERS) {
            let request = EnvironmentRequest::for_commit_at(interpreter, worktree, &pinned, date)
                .released_before(bound.clone())
                .with_additions(child.to_vec());
            match python::ensure_environment(&request, &failed) {
                Ok(environment) => return Ok(environment),
                Err(error) => {
                    failures.push(format!("python {}: {error}", interpreter.version));
                    match error.failure() {
                        BuildFailure::Infrastructure => {
                            return Err(EnvironmentFailure::Retry(format!(
                                "repository `{}`: no environment could be built: {}",
                                repo.name,
                                failures.join("; ")
                            )));
                        }
                        BuildFailure::NoSuchRequirement => break,
                        BuildFailure::Interpreter => {}
                    }
                }
            }
        }
        Err(EnvironmentFailure::Unbuildable(format!(
            "no environment could be rebuilt for the commit: {}",
            failures.join("; ")
        )))
    }
}

/// The `oracle` step kind.
pub struct OracleStep {
    environments: Arc<dyn Environments>,
    /// Slot pools by workdir: one process may run several pipelines.
    pools: Mutex<BTreeMap<PathBuf, Arc<SlotPool>>>,
}

impl OracleStep {
    /// An oracle that runs tests with the interpreters `environments` provides.
    pub fn new(environments: Arc<dyn Environments>) -> Self {
        OracleStep {
            environments,
            pools: Mutex::new(BTreeMap::new()),
        }
    }

    fn pool(&self, workdir: &Path) -> Arc<SlotPool> {
        let mut pools = self.pools.lock().expect("slot pools lock");
        Arc::clone(
            pools
                .entry(workdir.to_path_buf())
                .or_insert_with(|| Arc::new(SlotPool::new(workdir))),
        )
    }
}

/// The slots (a worktree and a run directory each) of one workdir. A slot's directories belong to
/// this process alone for as long as the pool lives: each is claimed with a lock file
/// (`oracle/slot-N.lock`), so two runs on one workdir never check out two commits into one
/// worktree; a slot another run holds is skipped.
///
/// The pool has no bound of its own: every item that takes a slot holds one of the engine's
/// pytest permits (`--pytest-slots`) while it runs, so the permits bound the slots in use and a
/// slot is never waited for. A free slot is reused; only when none is free is the next one claimed,
/// so a run makes as many worktrees as it runs commits at once, never more.
struct SlotPool {
    workdir: PathBuf,
    state: Mutex<SlotState>,
}

struct SlotState {
    free: Vec<(usize, Slot)>,
    /// The next slot index to try claiming.
    next: usize,
    /// The lock files of the claimed slots, held until the pool is dropped.
    claims: Vec<std::fs::File>,
}

impl SlotPool {
    fn new(workdir: &Path) -> Self {
        SlotPool {
            workdir: workdir.to_path_buf(),
            state: Mutex::new(SlotState {
                free: Vec::new(),
                next: 0,
                claims: Vec::new(),
            }),
        }
    }

    /// A free slot, or a newly claimed one: this never waits for another item.
    fn acquire(&self) -> (usize, Slot) {
        let mut state = self.state.lock().expect("slot pool lock");
        // The lowest free index first, so a run reuses the same few worktrees.
        if let Some(position) = (0..state.free.len()).min_by_key(|&at| state.free[at].0) {
            return state.free.swap_remove(position);
        }
        loop {
            let index = state.next;
            state.next += 1;
            let runs = self.workdir.join("oracle").join(format!("slot-{index}"));
            // A slot whose lock cannot be made (a read-only workdir) is used unlocked: the run
            // fails later, naming the path, where it writes.
            match claim_slot(&runs) {
                Some(Ok(file)) => state.claims.push(file),
                Some(Err(())) => continue,
                None => {}
            }
            let slot = Slot {
                worktree: Worktree::new(slot_dir(&self.workdir, index)),
                runs,
            };
            return (index, slot);
        }
    }

    fn release(&self, slot: (usize, Slot)) {
        self.state.lock().expect("slot pool lock").free.push(slot);
    }
}

/// Takes the lock of the slot whose run directory is `runs`: `Some(Ok(file))` when this process now
/// holds it, `Some(Err(()))` when another process does, `None` when no lock file can be made.
fn claim_slot(runs: &Path) -> Option<Result<std::fs::File, ()>> {
    let path = runs.with_extension("lock");
    std::fs::create_dir_all(path.parent()?).ok()?;
    let file = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .ok()?;
    match file.try_lock() {
        Ok(()) => Some(Ok(file)),
        Err(std::fs::TryLockError::WouldBlock) => Some(Err(())),
        Err(std::fs::TryLockError::Error(_)) => None,
    }
}

/// A claim from `mine-claims`: the contract fields, and the line as written (which may say the
/// interpreter it was collected under).
struct Claim {
    record: ClaimRecord,
    line: serde_json::Value,
}

impl Claim {
    /// The test files the commit touched, as the miner carried them (none from older miners).
    fn test_files(&self) -> Vec<String> {
        self.line
            .get("test_files")
            .and_then(serde_json::Value::as_array)
            .map(|files| {
                files
                    .iter()
                    .filter_map(|file| file.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The interpreter version the miner collected the claim under (`3.11.7`), if it says.
    fn interpreter(&self) -> Option<&str> {
        self.line
            .get("interpreter")
            .and_then(serde_json::Value::as_str)
    }
}

fn claims_of(upstream: &Upstream, step: &str) -> Result<Vec<Claim>, StepError> {
    let output = upstream
        .first_with_role(|role| *role == Role::Claims)
        .ok_or_else(|| {
            StepError::Input(format!(
                "step `{step}`: the oracle needs a `mine-claims` step"
            ))
        })?;
    let mut claims = Vec::new();
    for item in &output.items {
        for line in &item.output.records {
            let record = serde_json::from_value(line.clone()).map_err(|error| {
                StepError::failed(format!("step `{step}`: decode a claim"), error)
            })?;
            claims.push(Claim {
                record,
                line: line.clone(),
            });
        }
    }
    Ok(claims)
}

/// `rank-commits` records by (repo, commit), when the step needs that step too.
fn commits_of(upstream: &Upstream) -> Result<BTreeMap<(String, String), CommitRecord>, StepError> {
    let Some(output) = upstream.first_with_role(|role| *role == Role::Commits) else {
        return Ok(BTreeMap::new());
    };
    Ok(output
        .decode_all::<CommitRecord>()?
        .into_iter()
        .map(|record| ((record.repo.clone(), record.commit.clone()), record))
        .collect())
}

fn repo_spec<'a>(ctx: &'a StepContext, name: &str) -> Result<&'a RepoSpec, StepError> {
    ctx.pipeline.repo(name).ok_or_else(|| {
        StepError::Input(format!(
            "step `{}`: claims name repository `{name}`, which `repos:` does not list",
            ctx.step.name
        ))
    })
}

/// The repository's test-file rules, as mining reads them.
fn test_rules(ctx: &StepContext, spec: &RepoSpec) -> Result<TestFileRules, StepError> {
    TestFileRules::for_repository(spec, &[])
        .map_err(|error| StepError::input(format!("step `{}`", ctx.step.name), error))
}

/// Every claim of a commit discarded because no environment could be had for it: nothing ran, so
/// nothing is labelled.
fn without_environment(claims: &[ClaimRecord], reason: &str) -> Vec<Judgement> {
    claims
        .iter()
        .map(|claim| Judgement {
            truth: TruthRecord {
                claim: claim.id.clone(),
                label: Label::Discarded,
                reason: Some(reason.to_string()),
                parent_runs: Vec::new(),
                child_runs: Vec::new(),
            },
            cause: Some(Cause::NoEnvironment),
        })
        .collect()
}

/// A truth record with its cause, as one line of `truth.jsonl`.
fn truth_line(judgement: &Judgement) -> serde_json::Value {
    let mut value = serde_json::to_value(&judgement.truth).expect("truth records serialize");
    value["cause"] = serde_json::to_value(judgement.cause).expect("causes serialize");
    value
}

fn judgement_of(value: &serde_json::Value) -> Result<Judgement, StepError> {
    let truth: TruthRecord = serde_json::from_value(value.clone())
        .map_err(|error| StepError::failed("decode a truth record", error))?;
    let cause: Option<Cause> = serde_json::from_value(value["cause"].clone())
        .map_err(|error| StepError::failed("decode a truth record's cause", error))?;
    Ok(Judgement { truth, cause })
}

/// What an oracle item judges of its commit: the claims (each once, by id), the test files it
/// touches, and the interpreter its claims were mined with.
type CommitClaims = (Vec<ClaimRecord>, Vec<String>, Option<String>);

/// The claims of the commit `target` (each once, by id), the test files it touches (carried by
/// the claims, and by the ranking when the step needs it too; the procedure adds the diff's own,
/// so the wiring changes nothing), and the interpreter its claims were mined with.
fn commit_claims(
    upstream: &Upstream,
    step: &str,
    target: &CommitItem,
) -> Result<CommitClaims, StepError> {
    let mut upstream_claims: Vec<Claim> = claims_of(upstream, step)?
        .into_iter()
        .filter(|claim| claim.record.repo == target.repo && claim.record.commit == target.commit)
        .collect();
    upstream_claims.sort_by(|left, right| left.record.id.cmp(&right.record.id));
    upstream_claims.dedup_by(|left, right| left.record.id == right.record.id);
    let interpreter = upstream_claims
        .iter()
        .find_map(Claim::interpreter)
        .map(str::to_string);
    let mut test_files: std::collections::BTreeSet<String> =
        upstream_claims.iter().flat_map(Claim::test_files).collect();
    test_files.extend(
        commits_of(upstream)?
            .remove(&(target.repo.clone(), target.commit.clone()))
            .map(|record| record.test_files)
            .unwrap_or_default(),
    );
    let test_files: Vec<String> = test_files.into_iter().collect();
    let claims: Vec<ClaimRecord> = upstream_claims
        .into_iter()
        .map(|claim| claim.record)
        .collect();
    Ok((claims, test_files, interpreter))
}

/// What a step of this kind reads from the steps it needs.
const NEEDS: &[Need] = &[Need {
    roles: &[Role::Claims],
    step: "a `mine-claims` step",
    reads: "the claims it labels",
}];

impl StepKind for OracleStep {
    fn name(&self) -> &'static str {
        "oracle"
    }

    fn version(&self) -> u32 {
        // 2: the child's own check runs whole test files, so a failing test the commit added
        // marks the child broken.
        // 3: a failure in sub-tests names them, and a skipped sub-test no longer makes its test
        // unknown.
        // 4: the child's own check ignores tests that skip themselves and claims that did not
        // pass at the parent, instead of discarding the commit as without a verdict.
        // 5: the child's own check runs the files of the commit's diff, re-runs its failures
        // (a test that passes once is flaky, not the child's), and counts a failure only when the
        // same test (followed through renames) passed at the parent or is new; the checkout is
        // registered as the project's distribution; the environment adds the child's declared
        // requirements the parent does not declare.
        // 6: in a project that runs its tests with nose, the child's own check runs the touched
        // test modules nose names (`arrow_tests.py`), and a failing test not found at the parent
        // is looked up by name in the test files the commit deleted.
        // 7: the checkout registered as the project's distribution carries the entry points its
        // packaging files declare (a library's tests that load its own plugins pass at the parent).
        // 8: a run that outlives its limit starved of CPU is tried again and, starved every time,
        // fails the item instead of leaving its claims unknown; runs after a suite's first are
        // limited to five times its duration (at least 30 s), so a hang is a timeout sooner.
        // 9: a child's test failing on a name its own file never defines (a `NameError` raised
        // in the test file) does not make the child broken.
        9
    }

    fn about(&self) -> &'static str {
        "runs each claim N times at the parent and at the child, labels it flipped, held or discarded"
    }

    fn params(&self) -> ParamsDecl {
        ParamsDecl::of::<OracleParams>()
    }

    fn requires(&self, _step: &StepSpec) -> &'static [Need] {
        NEEDS
    }

    fn role(&self, _step: &StepSpec) -> Role {
        Role::Labels
    }

    fn items(&self, ctx: &StepContext, upstream: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        let step = &ctx.step.name;
        let claims = claims_of(upstream, step)?;
        let records: Vec<ClaimRecord> = claims.iter().map(|claim| claim.record.clone()).collect();
        let problems = check_claims(&records);
        if !problems.is_empty() {
            return Err(StepError::Invariant(format!(
                "step `{step}`: {}",
                problems.join("; ")
            )));
        }
        let commits = commits_of(upstream)?;
        let mut by_commit: BTreeMap<(String, String), Vec<&Claim>> = BTreeMap::new();
        for claim in &claims {
            by_commit
                .entry((claim.record.repo.clone(), claim.record.commit.clone()))
                .or_default()
                .push(claim);
        }
        let mut fingerprints = BTreeMap::new();
        let mut plans = Vec::new();
        for ((repo, commit), mut claims) in by_commit {
            claims.sort_by(|left, right| left.record.id.cmp(&right.record.id));
            claims.dedup_by(|left, right| left.record.id == right.record.id);
            let parent = claims[0].record.parent.clone();
            if let Some(other) = claims.iter().find(|claim| claim.record.parent != parent) {
                return Err(StepError::Input(format!(
                    "step `{step}`: claims of commit {commit} name two parents ({parent} and {})",
                    other.record.parent
                )));
            }
            let spec = repo_spec(ctx, &repo)?;
            if !fingerprints.contains_key(&repo) {
                let fingerprint = self.environments.fingerprint(spec)?;
                fingerprints.insert(repo.clone(), fingerprint);
            }
            // The lines as written: the interpreter a claim was collected under enters the key.
            let lines: Vec<&serde_json::Value> = claims.iter().map(|claim| &claim.line).collect();
            let claims_bytes = serde_json::to_vec(&lines).expect("claims serialize");
            let mut plan = ItemPlan::new(format!("{repo}@{commit}"))
                .params(
                    serde_json::to_value(CommitItem {
                        repo: repo.clone(),
                        parent: parent.clone(),
                        commit: commit.clone(),
                        claims: claims.iter().map(|claim| claim.record.id.clone()).collect(),
                    })
                    .expect("item params serialize"),
                )
                .read("claims", Digest::of(&claims_bytes))
                .tool("parent", parent)
                .tool("commit", commit.clone())
                .pool(Pool::Pytest);
            // The repository's test-file rules decide which files are restored at the child.
            plan = plan.tool("test_files", test_rules(ctx, spec)?.patterns().join(","));
            for (name, fingerprint) in &fingerprints[&repo] {
                plan = plan.tool(format!("python:{name}"), fingerprint.clone());
            }
            // Of the commit record, only the touched test files change what runs (they are
            // restored at the child); the ranking's own fields (`by`, `rank`, `score`) stay out of
            // the key, so a commit two rankings both picked is labelled once.
            if let Some(record) = commits.get(&(repo, commit)) {
                let bytes = serde_json::to_vec(&record.test_files).expect("paths serialize");
                plan = plan.read("touched_test_files", Digest::of(&bytes));
            }
            plans.push(plan);
        }
        Ok(plans)
    }

    fn run(
        &self,
        ctx: &StepContext,
        item: &ItemPlan,
        upstream: &Upstream,
    ) -> Result<ItemOutput, StepError> {
        let step = &ctx.step.name;
        let params: &OracleParams = ctx.params()?;
        let target: CommitItem = item
            .params
            .decode()
            .map_err(|error| StepError::failed(format!("item {}", item.id), error))?;
        let (claims, test_files, interpreter) = commit_claims(upstream, step, &target)?;
        let spec = repo_spec(ctx, &target.repo)?;
        let located = crate::mining::locate(spec, ctx.workdir)
            .map_err(|error| StepError::failed(format!("item {}", item.id), error))?;
        let repository = located
            .open()
            .map_err(|error| StepError::failed(format!("item {}", item.id), error))?;
        let settings = Settings {
            runs: params.runs,
            timeout: Duration::from_secs_f64(params.timeout.max(1.0)),
            import_errors: params.import_errors,
            test_files: test_rules(ctx, spec)?,
        };
        // A worker's slots are its own (`<workdir>/jobs/<job>/…`): jobs on other nodes share
        // the workdir, not its checkouts.
        let pool = self.pool(&ctx.private_root());
        let mut slot = pool.acquire();
        let judged = (|| {
            let oid = |id: &str| {
                git2::Oid::from_str(id)
                    .map_err(|error| StepError::failed(format!("item {}", item.id), error))
            };
            let parent = oid(&target.parent)?;
            // What the child declares, read from its checkout before the parent's.
            slot.1
                .worktree
                .checkout(&repository, oid(&target.commit)?)
                .map_err(|error| StepError::failed(format!("item {}", item.id), error))?;
            let child = python::declared_requirements(slot.1.worktree.dir());
            slot.1
                .worktree
                .checkout(&repository, parent)
                .map_err(|error| StepError::failed(format!("item {}", item.id), error))?;
            let date = repository
                .find_commit(parent)
                .map(|commit| commit.time().seconds())
                .ok();
            let environment = match self.environments.environment(
                spec,
                slot.1.worktree.dir(),
                interpreter.as_deref(),
                date,
                &child,
                &ctx.session,
            ) {
                Ok(environment) => environment,
                Err(EnvironmentFailure::Retry(reason)) => {
                    return Err(StepError::transient(
                        format!("item {}: {reason}", item.id),
                        None,
                    ));
                }
                Err(EnvironmentFailure::Unbuildable(reason)) => {
                    return Ok(without_environment(&claims, &reason));
                }
            };
            judge_commit(
                &settings,
                &environment,
                &mut slot.1,
                &CommitUnderTest {
                    repository: &repository,
                    parent: &target.parent,
                    commit: &target.commit,
                    test_files: &test_files,
                    claims: &claims,
                },
            )
            .map_err(|error| StepError::failed(format!("item {}", item.id), error))
        })();
        pool.release(slot);
        let judgements = judged?;
        let problems = check_judgements(
            &target.claims,
            &judgements,
            params.runs,
            params.import_errors,
        );
        if !problems.is_empty() {
            return Err(StepError::Invariant(format!(
                "step `{step}`, item {}: {}",
                item.id,
                problems.join("; ")
            )));
        }
        Ok(ItemOutput {
            records: judgements.iter().map(truth_line).collect(),
            blobs: Default::default(),
        })
    }

    fn publish(&self, ctx: &StepContext, items: &[ItemResult]) -> Result<(), StepError> {
        let step = &ctx.step.name;
        let params: &OracleParams = ctx.params()?;
        let mut problems = Vec::new();
        let mut commits = Vec::new();
        for item in items {
            let target: CommitItem = item
                .plan
                .params
                .decode()
                .map_err(|error| StepError::failed(format!("item {}", item.plan.id), error))?;
            let judgements = item
                .output
                .records
                .iter()
                .map(judgement_of)
                .collect::<Result<Vec<_>, _>>()?;
            problems.extend(check_judgements(
                &target.claims,
                &judgements,
                params.runs,
                params.import_errors,
            ));
            commits.push((item.plan.id.clone(), judgements));
        }
        if !problems.is_empty() {
            return Err(StepError::Invariant(format!(
                "step `{step}`: {}",
                problems.join("; ")
            )));
        }
        let without_environment = commits.iter().filter(|(_, judgements)| {
            !judgements.is_empty()
                && judgements
                    .iter()
                    .all(|judgement| judgement.cause == Some(Cause::NoEnvironment))
        });
        if !commits.is_empty() && without_environment.clone().count() == commits.len() {
            let first_reasons = without_environment
                .take(3)
                .map(|(id, judgements)| {
                    format!(
                        "{id}: {}",
                        judgements[0].truth.reason.as_deref().unwrap_or_default()
                    )
                })
                .collect();
            return Err(StepError::Cause(Box::new(
                super::broken_setup::BrokenSetup::Oracle {
                    step: step.to_string(),
                    commits: commits.len(),
                    first_reasons,
                },
            )));
        }
        let lines = commits
            .iter()
            .flat_map(|(_, judgements)| judgements.iter().map(truth_line));
        ctx.write_jsonl(&ctx.own_result("truth.jsonl"), lines)?;
        let summary = OracleSummary::new(params.runs, &commits);
        ctx.note(&summary.labels_note());
        if let Some(note) = summary.timeout_note() {
            ctx.note(&note);
        }
        let mut bytes = serde_json::to_vec_pretty(&summary).expect("summaries serialize");
        bytes.push(b'\n');
        ctx.write_result(&ctx.own_result("oracle_summary.json"), &bytes)
    }
}
