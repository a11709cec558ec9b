//! The `llm-arm` step kind: a model asked the question of one of the paper's arms (A5, A5C,
//! A6 base, A6 risk) about the claims of a `mine-claims` step, written to
//! `predictions/<step>.jsonl`; with `notes:`, the prose arm (the note of a `prose-render` step in
//! place of the test source).
//!
//! ```yaml
//! a6_risk: {uses: llm-arm, needs: [claims], with: {question: a6_risk, prompt: prompts/a6_risk.txt, model: local}}
//! prose:   {uses: llm-arm, needs: [claims, prose_render],
//!           with: {question: a6_risk, prompt: prompts/a6_risk.txt, model: local, notes: prose_render}}
//! ```
//! Each call is an item: one per claim, or one per commit for A5 (its verdict serves every claim
//! of the commit). An item's key holds the question, the model's settings that shape an answer
//! (see [`model_calls::call_params`]), the prompt file's content, the digests of the claim text
//! and of the source-only diff, and the sample index; so editing one prompt file re-asks exactly
//! the calls that use it. The guard reads every message just before it is sent.

use std::collections::BTreeMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::claim_groups::claims_by_commit;
use super::model_calls::{self, CallRecord, call_params, model_spec, prompt_file};
use super::prose_render::RenderRecord;
use super::scored::Scored;
use super::shuffle::group_by_shown;
use crate::cache::{Digest, JsonText};
use crate::controls::shuffle::CommitRef;
use crate::engine::{
    Execution, ItemFuture, ItemOutput, ItemPlan, ItemResult, ModelName, ParamsDecl, Planned, Pool,
    ProjectFile, Role, StepContext, StepError, StepKind, StepName, Upstream,
};
use crate::mining::{DEFAULT_DIFF_LIMIT, SourceDiff, TestFileRules, source_diff};
use crate::models::guard::Forbidden;
use crate::models::{Question, Totals, question_request, read};
use crate::pipeline::Need;
use crate::pipeline::{ModelSpec, Price, StepSpec};
use crate::records::{ClaimRecord, PredictionRecord, Verdict};

/// The most replicates a step may ask for.
const MAX_REPLICATES: u32 = 100;

/// The parameters of `uses: llm-arm`. The model entry's name, the prompt's path and the notes
/// step's name stay out of the key: the entry's settings, the prompt's content and the notes
/// enter each call's item instead, and so does each replicate's sample index.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LlmArmParams {
    /// The arm's question: a5 (does the diff preserve behaviour?), a5c (the same, shown the
    /// claim), a6_base or a6_risk (does the claim still hold?).
    pub question: Question,
    /// The system prompt file (prompts/<question>.txt); its content enters every call's key.
    #[serde(skip_serializing)]
    pub prompt: ProjectFile,
    /// The `models:` entry asked.
    #[serde(skip_serializing)]
    pub model: ModelName,
    /// A prose-render step: its notes replace the test source (the prose arm).
    #[serde(default, skip_serializing)]
    pub notes: Option<StepName>,
    /// Characters of the source-only diff shown (default 12000).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub diff_limit: Option<usize>,
    /// Ask every call this many times (sample index 0, 1, …): k prediction sets and their
    /// pairwise agreement (default 1).
    #[serde(default, skip_serializing)]
    #[schemars(range(min = 1, max = 100))]
    pub replicates: Option<u32>,
}

impl LlmArmParams {
    /// Replicates asked for, checked.
    fn replicates(&self, ctx: &StepContext) -> Result<u32, StepError> {
        match self.replicates.unwrap_or(1) {
            count @ 1..=MAX_REPLICATES => Ok(count),
            count => Err(StepError::Input(format!(
                "step `{}`: `replicates: {count}` must be between 1 and {MAX_REPLICATES}",
                ctx.step.name
            ))),
        }
    }
}

/// Verdicts by claim, for agreement between replicates.
fn verdicts(predictions: &[PredictionRecord]) -> BTreeMap<String, Verdict> {
    predictions
        .iter()
        .map(|prediction| (prediction.claim.clone(), prediction.verdict))
        .collect()
}

/// The item of replicate `replicate` of call `id`: replicate 0 is the call itself.
fn replicate_id(id: &str, replicate: u32) -> String {
    if replicate == 0 {
        id.to_string()
    } else {
        format!("{id}#{replicate}")
    }
}

/// What a planned call needs to be sent.
#[derive(Clone)]
struct Prepared {
    prompt: Arc<str>,
    /// The claim's text (its source, or its note); empty for A5.
    text: String,
    diff: Arc<SourceDiff>,
    rules: Arc<TestFileRules>,
    /// Every assertion of the commit's claims: none may show in the diff.
    assertions: Arc<Vec<String>>,
    /// The paired commit whose diff stands in for the claims' own (the shuffled-diff null).
    shuffled: Option<CommitRef>,
    /// Whether the claims are a `paraphrase` step's rewrites.
    paraphrased: bool,
}

/// Where one claim's prediction comes from.
#[derive(Serialize)]
enum Slot {
    /// From call `item`; `first` is the claim the call's usage is charged to.
    Call {
        claim: String,
        item: String,
        first: bool,
    },
    /// No call: the claim has no note to ask about.
    Unjudged { claim: String, problem: String },
}

/// What a step's planning found beyond its items: what each call sends, and which call answers
/// which claim. The engine hands it to the calls and the reduction.
#[derive(Default)]
struct StepPlan {
    calls: BTreeMap<String, Prepared>,
    slots: Vec<Slot>,
    /// Replicates of every call (1: the call alone).
    replicates: u32,
}

/// The text a claim's call is asked about: its source, or with `notes`, its prose note (or why
/// it has none, and is left unjudged).
fn text_of(
    claim: &ClaimRecord,
    notes: Option<&BTreeMap<String, Result<String, String>>>,
) -> Result<String, String> {
    let Some(notes) = notes else {
        return Ok(claim.source.clone());
    };
    match notes.get(&claim.id) {
        Some(Ok(note)) => Ok(note.clone()),
        Some(Err(problem)) => Err(format!("no prose note: {problem}")),
        None => Err("no prose note: the claim was not rendered".to_string()),
    }
}

impl StepPlan {
    /// Plans `replicates` of every call in `items`: the same calls asked again under another
    /// sample index (another key).
    fn replicate(&mut self, items: &mut Vec<ItemPlan>, replicates: u32) {
        // Copied only when there are replicates to make: at tens of thousands of calls the copy
        // costs as much as planning them.
        let firsts = if replicates > 1 {
            items.clone()
        } else {
            Vec::new()
        };
        for replicate in 1..replicates {
            for first in &firsts {
                let mut again = first.clone();
                again.id = replicate_id(&first.id, replicate);
                again.params["sample"] = json!(replicate);
                let prepared = self.calls[&first.id].clone();
                self.calls.insert(again.id.clone(), prepared);
                items.push(again);
            }
        }
        self.replicates = replicates;
    }

    /// The digest of what the reduction reads of the plan besides the calls' answers: the
    /// claims' slots, the replicates, each call's marks and the model's price (a prediction's
    /// cost), none of which is in a call's key.
    fn digest(&self, price: Option<Price>) -> Digest {
        let marks: BTreeMap<&str, (Option<&CommitRef>, bool)> = self
            .calls
            .iter()
            .map(|(id, call)| (id.as_str(), (call.shuffled.as_ref(), call.paraphrased)))
            .collect();
        Digest::of_json(&(&self.slots, self.replicates, marks, price))
            .expect("a plan's reduction inputs serialize")
    }
}

/// The version of the reduction of calls into predictions: bump it when the predictions derived
/// from the same calls and plan change, and no call is asked again.
const REDUCTION_VERSION: u32 = 1;

/// The `llm-arm` step kind.
#[derive(Default)]
pub struct LlmArm {
    /// Strategy versions that differ from the shipped ones ([`shipped_version`]).
    versions: BTreeMap<String, u32>,
}

/// The version of a strategy's calls (`a5`, `a5c`, `a6_base`, `a6_risk`, `prose`): bump the one
/// whose question, reading or call changed, and only its calls are made again.
fn shipped_version(strategy: &str) -> u32 {
    match strategy {
        "a5" | "a5c" | "a6_base" | "a6_risk" | "prose" => 1,
        _ => 1,
    }
}

/// The strategy a step of this kind runs: its question, or `prose` with notes.
fn strategy(params: &LlmArmParams) -> &'static str {
    if params.notes.is_some() {
        "prose"
    } else {
        params.question.name()
    }
}

impl LlmArm {
    /// The kind with `strategy` at `version` instead of its shipped version: what bumping that
    /// strategy does to a pipeline's caches, without rebuilding (tests).
    pub fn with_version(mut self, strategy: &str, version: u32) -> Self {
        self.versions.insert(strategy.to_string(), version);
        self
    }
}

/// The repositories a step's planning has opened, with their test-file rules: each is opened once,
/// not once per commit.
#[derive(Default)]
struct Opened {
    repositories: BTreeMap<String, (git2::Repository, Arc<TestFileRules>)>,
}

impl Opened {
    /// The source-only diff of a commit and the repository's test-file rules.
    fn diff_of(
        &mut self,
        ctx: &StepContext,
        claim: &CommitRef,
        limit: usize,
    ) -> Result<(SourceDiff, Arc<TestFileRules>), StepError> {
        let failed = |error: Box<dyn std::error::Error + Send + Sync>| {
            StepError::failed(
                format!(
                    "step `{}`: diff of {}@{}",
                    ctx.step.name, claim.repo, claim.commit
                ),
                error,
            )
        };
        if !self.repositories.contains_key(&claim.repo) {
            let commit = format!("commit {}", claim.name());
            let (spec, repository) = super::repositories::open(ctx, &claim.repo, &commit, failed)?;
            let rules =
                TestFileRules::for_repository(spec, &[]).map_err(|error| failed(error.into()))?;
            self.repositories
                .insert(claim.repo.clone(), (repository, Arc::new(rules)));
        }
        let (repository, rules) = &self.repositories[&claim.repo];
        let oid = |text: &str| git2::Oid::from_str(text).map_err(|error| failed(error.into()));
        let diff = source_diff(
            repository,
            oid(&claim.parent)?,
            oid(&claim.commit)?,
            rules,
            limit,
        )
        .map_err(|error| failed(error.into()))?;
        Ok((diff, Arc::clone(rules)))
    }
}

/// The notes of the prose-render step `step`, by claim: the note or why there is none.
fn notes_of(
    ctx: &StepContext,
    upstream: &Upstream,
    step: &str,
) -> Result<BTreeMap<String, Result<String, String>>, StepError> {
    let output = upstream.steps.get(step).ok_or_else(|| {
        StepError::Input(format!(
            "step `{}`: `notes: {step}` must name a step in `needs`",
            ctx.step.name
        ))
    })?;
    Ok(output
        .decode_all::<RenderRecord>()?
        .into_iter()
        .map(|record| {
            let note = record
                .note
                .ok_or_else(|| record.problem.unwrap_or_else(|| "no note".to_string()));
            (record.claim, note)
        })
        .collect())
}

/// What every call of a step asks with, read once when the step plans.
struct Asked {
    question: Question,
    prompt: Arc<str>,
    prompt_digest: Digest,
    /// With `notes:`, the prose note of each claim (or why it has none).
    notes: Option<BTreeMap<String, Result<String, String>>>,
    /// The model's settings that shape an answer (see [`call_params`]).
    call: serde_json::Value,
    /// The `models:` entry asked, whose pool every call waits in.
    model: String,
    /// Characters of the source-only diff shown.
    limit: usize,
    /// Whether a `shuffle` step is needed: each claim is then shown its paired commit's diff.
    shuffled: bool,
    /// Whether the claims are a `paraphrase` step's rewrites.
    paraphrased: bool,
}

impl Asked {
    fn read(
        ctx: &StepContext,
        upstream: &Upstream,
        params: &LlmArmParams,
        spec: &ModelSpec,
    ) -> Result<Self, StepError> {
        let (prompt, prompt_digest) = prompt_file(ctx, params.prompt.as_str())?;
        let notes = params
            .notes
            .as_ref()
            .map(|step| notes_of(ctx, upstream, step.as_str()))
            .transpose()?;
        Ok(Asked {
            question: params.question,
            prompt: Arc::from(prompt),
            prompt_digest,
            notes,
            call: call_params(spec),
            model: params.model.to_string(),
            limit: params.diff_limit.unwrap_or(DEFAULT_DIFF_LIMIT),
            shuffled: super::shuffle::shown_commits(upstream)?.is_some(),
            paraphrased: super::paraphrase::paraphrased_claims(upstream)?.is_some(),
        })
    }

    /// What the calls about the claims of `group` share, shown the diff of commit `shown`.
    fn about_commit(
        &self,
        ctx: &StepContext,
        opened: &mut Opened,
        shown: CommitRef,
        group: &[ClaimRecord],
    ) -> Result<CommitCalls<'_>, StepError> {
        let (diff, rules) = opened.diff_of(ctx, &shown, self.limit)?;
        let params = JsonText::of(&json!({
            "question": self.question,
            "call": self.call,
            "repo": shown.repo,
            "parent": shown.parent,
            "commit": shown.commit,
            "sample": 0,
        }));
        Ok(CommitCalls {
            asked: self,
            params,
            diff_digest: Digest::of(diff.text.as_bytes()),
            diff: Arc::new(diff),
            rules,
            assertions: Arc::new(
                group
                    .iter()
                    .flat_map(|claim| claim.assertions.iter().cloned())
                    .collect(),
            ),
            shuffled: self.shuffled.then(|| shown.clone()),
            shown,
        })
    }
}

/// The calls about one commit's claims: what they share, built once and cloned into each.
struct CommitCalls<'a> {
    asked: &'a Asked,
    /// The commit whose diff the calls are shown.
    shown: CommitRef,
    /// Every call's parameters, as canonical text.
    params: JsonText,
    diff_digest: Digest,
    diff: Arc<SourceDiff>,
    rules: Arc<TestFileRules>,
    /// Every assertion of the commit's claims: none may show in the diff.
    assertions: Arc<Vec<String>>,
    shuffled: Option<CommitRef>,
}

impl CommitCalls<'_> {
    /// The item of call `id` about `text` (a claim's text; empty for a question about the diff
    /// alone), and what it sends.
    fn call(&self, id: &str, text: String) -> (ItemPlan, Prepared) {
        let asked = self.asked;
        let mut planned = ItemPlan::new(id)
            .params(self.params.clone())
            .read("diff", self.diff_digest)
            .file("prompt", asked.prompt_digest)
            .pool(Pool::Model(asked.model.clone()));
        if asked.question.sees_claim() {
            planned = planned.read("claim", Digest::of(text.as_bytes()));
        }
        let prepared = Prepared {
            prompt: Arc::clone(&asked.prompt),
            text,
            diff: Arc::clone(&self.diff),
            rules: Arc::clone(&self.rules),
            assertions: Arc::clone(&self.assertions),
            shuffled: self.shuffled.clone(),
            paraphrased: asked.paraphrased,
        };
        (planned, prepared)
    }
}

impl StepPlan {
    /// One call about the commit (A5), whose verdict serves every claim of `group`; its usage
    /// is charged to the first.
    fn ask_per_commit(
        &mut self,
        items: &mut Vec<ItemPlan>,
        calls: &CommitCalls,
        group: &[ClaimRecord],
    ) {
        let id = format!("{}@{}", calls.shown.repo, calls.shown.commit);
        let (planned, prepared) = calls.call(&id, String::new());
        for (index, claim) in group.iter().enumerate() {
            self.slots.push(Slot::Call {
                claim: claim.id.clone(),
                item: id.clone(),
                first: index == 0,
            });
        }
        self.calls.insert(id, prepared);
        items.push(planned);
    }

    /// One call per claim of `group`; a claim without a text to ask about (no prose note) is
    /// left unjudged with the reason.
    fn ask_per_claim(
        &mut self,
        items: &mut Vec<ItemPlan>,
        calls: &CommitCalls,
        group: &[ClaimRecord],
        notes: Option<&BTreeMap<String, Result<String, String>>>,
    ) {
        for claim in group {
            let text = match text_of(claim, notes) {
                Ok(text) => text,
                Err(problem) => {
                    self.slots.push(Slot::Unjudged {
                        claim: claim.id.clone(),
                        problem,
                    });
                    continue;
                }
            };
            let (planned, prepared) = calls.call(&claim.id, text);
            self.slots.push(Slot::Call {
                claim: claim.id.clone(),
                item: claim.id.clone(),
                first: true,
            });
            self.calls.insert(claim.id.clone(), prepared);
            items.push(planned);
        }
    }
}

impl LlmArm {
    /// Sends one planned call and reads its verdict.
    async fn call(&self, ctx: &StepContext<'_>, item: &ItemPlan) -> Result<ItemOutput, StepError> {
        let params: &LlmArmParams = ctx.params()?;
        let plan: &StepPlan = ctx.plan()?;
        let prepared = plan.calls.get(&item.id).ok_or_else(|| {
            StepError::Invariant(format!(
                "step `{}`: item {} was not planned",
                ctx.step.name, item.id
            ))
        })?;
        let forbidden = Forbidden {
            rules: Some(&prepared.rules),
            test_paths: &prepared.diff.excluded,
            assertions: &prepared.assertions,
        };
        let request = question_request(
            params.question,
            &prepared.prompt,
            &prepared.text,
            &prepared.diff.text,
            &forbidden,
        )
        .map_err(|problem| {
            StepError::Invariant(format!(
                "step `{}` item {}: refused to send a message showing a test file: {problem}",
                ctx.step.name, item.id
            ))
        })?;
        let completion =
            model_calls::complete(ctx, params.model.as_str(), &item.id, &request).await?;
        let spec = model_spec(ctx, params.model.as_str())?;
        let reading = read(params.question, &completion.text);
        Ok(ItemOutput::records([CallRecord {
            provider: spec.provider.name().to_string(),
            model: spec.model.clone(),
            completion,
            reading: Some(reading),
        }]))
    }
}

/// What a step of this kind reads from the steps it needs.
const NEEDS: &[Need] = &[Need {
    roles: &[Role::Claims],
    step: "a `mine-claims` step",
    reads: "the claims it asks about",
}];

impl StepKind for LlmArm {
    fn name(&self) -> &'static str {
        "llm-arm"
    }

    fn version(&self) -> u32 {
        1
    }

    fn about(&self) -> &'static str {
        "a model arm: A5, A5C, A6 base or A6 risk over the claims, or the prose arm with `notes:`"
    }

    fn params(&self) -> ParamsDecl {
        ParamsDecl::of::<LlmArmParams>()
    }

    fn requires(&self, _step: &StepSpec) -> &'static [Need] {
        NEEDS
    }

    fn role(&self, step: &StepSpec) -> Role {
        match step.params.get::<LlmArmParams>() {
            // The prose arm asks A6's question about a note: a strategy of its own.
            Some(params) => Role::Predictions {
                strategy: strategy(params).to_string(),
                model: Some(params.model.to_string()),
            },
            None => Role::Other,
        }
    }

    fn strategy_version(&self, step: &StepSpec) -> Option<u32> {
        let strategy = strategy(step.params.get::<LlmArmParams>()?);
        let version = self
            .versions
            .get(strategy)
            .copied()
            .unwrap_or_else(|| shipped_version(strategy));
        // Version 1 stays out of the key, so the calls made before strategies had versions keep
        // their keys (they were paid for).
        (version != 1).then_some(version)
    }

    fn execution(&self) -> Execution {
        Execution::Async
    }

    fn reduction(&self, _step: &StepSpec) -> Option<u32> {
        Some(REDUCTION_VERSION)
    }

    fn plan(&self, ctx: &StepContext, upstream: &Upstream) -> Result<Planned, StepError> {
        let params: &LlmArmParams = ctx.params()?;
        let spec = model_spec(ctx, params.model.as_str())?;
        let asked = Asked::read(ctx, upstream, params, spec)?;
        let mut plan = StepPlan::default();
        let mut items = Vec::new();
        let mut opened = Opened::default();
        for (shown, group) in group_by_shown(claims_by_commit(ctx, upstream)?, upstream)? {
            let calls = asked.about_commit(ctx, &mut opened, shown, &group)?;
            if asked.question.per_commit() {
                plan.ask_per_commit(&mut items, &calls, &group);
            } else {
                plan.ask_per_claim(&mut items, &calls, &group, asked.notes.as_ref());
            }
        }
        plan.replicate(&mut items, params.replicates(ctx)?);
        let digest = plan.digest(spec.price_per_mtok);
        Ok(Planned::items(items)
            .with_plan(plan)
            .reduction_reads(digest))
    }

    fn run_async<'a>(
        &'a self,
        ctx: &'a StepContext<'a>,
        item: &'a ItemPlan,
        _upstream: &'a Upstream,
    ) -> ItemFuture<'a> {
        Box::pin(self.call(ctx, item))
    }

    fn reduce(&self, ctx: &StepContext, items: &[ItemResult]) -> Result<ItemOutput, StepError> {
        let params: &LlmArmParams = ctx.params()?;
        let price = model_spec(ctx, params.model.as_str())?.price_per_mtok;
        let plan: &StepPlan = ctx.plan()?;
        let mut calls: BTreeMap<&str, CallRecord> = BTreeMap::new();
        let mut usage = Totals::default();
        for item in items {
            let record = item
                .output
                .decode::<CallRecord>()?
                .into_iter()
                .next()
                .ok_or_else(|| {
                    StepError::Invariant(format!(
                        "step `{}`: call {} recorded no answer",
                        ctx.step.name, item.plan.id
                    ))
                })?;
            usage.add(&record.completion.usage, price);
            calls.insert(item.plan.id.as_str(), record);
        }
        let answers = Answers {
            ctx,
            params,
            price,
            plan,
            calls: &calls,
        };
        let predictions = answers.predictions(0)?;
        let mut sets = vec![("0".to_string(), verdicts(&predictions))];
        let mut replicates = Vec::new();
        for replicate in 1..plan.replicates {
            let again = answers.predictions(replicate)?;
            sets.push((replicate.to_string(), verdicts(&again)));
            replicates.push(again);
        }
        let agreement = (plan.replicates > 1).then(|| crate::controls::agreement::pairwise(&sets));
        Ok(ItemOutput::records([Scored {
            predictions,
            replicates,
            agreement,
            usage: Some(usage),
        }]))
    }

    fn publish(&self, ctx: &StepContext, items: &[ItemResult]) -> Result<(), StepError> {
        let params: &LlmArmParams = ctx.params()?;
        let scored: Scored = ctx.reduced()?;
        let cached = items.iter().filter(|item| item.cached).count();
        let totals = scored.usage.unwrap_or_default();
        for (replicate, again) in (1..).zip(&scored.replicates) {
            ctx.write_jsonl(
                &format!("replicates/{}/{replicate}.jsonl", ctx.step.name),
                again,
            )?;
        }
        let predictions = &scored.predictions;
        ctx.write_jsonl(&format!("predictions/{}.jsonl", ctx.step.name), predictions)?;
        ctx.note(&model_calls::describe(&totals, Some(cached)));
        let summary = json!({
            "step": ctx.step.name,
            "question": params.question,
            "model": params.model,
            "calls": totals.calls,
            "cached": cached,
            "tokens_in": totals.tokens_in,
            "tokens_out": totals.tokens_out,
            "cost": totals.cost,
            "claims": predictions.len(),
            "no_verdict": predictions.iter().filter(|p| p.verdict == Verdict::None).count(),
            "replicates": scored.replicates.len() + 1,
            "replicate_agreement": scored.agreement,
        });
        ctx.write_result(
            &format!("calls/{}.json", ctx.step.name),
            serde_json::to_string_pretty(&summary)
                .expect("a summary serializes")
                .as_bytes(),
        )
    }
}

/// The answers of a step's calls, read claim by claim as its plan says.
struct Answers<'a> {
    ctx: &'a StepContext<'a>,
    params: &'a LlmArmParams,
    price: Option<Price>,
    plan: &'a StepPlan,
    calls: &'a BTreeMap<&'a str, CallRecord>,
}

impl Answers<'_> {
    /// The predictions of replicate `replicate`, one per claim in the plan's order.
    fn predictions(&self, replicate: u32) -> Result<Vec<PredictionRecord>, StepError> {
        self.plan
            .slots
            .iter()
            .map(|slot| match slot {
                Slot::Unjudged { claim, problem } => Ok(PredictionRecord {
                    claim: claim.clone(),
                    verdict: Verdict::None,
                    evidence: json!({"question": self.params.question, "problem": problem}),
                    tokens_in: None,
                    tokens_out: None,
                    cost: None,
                }),
                Slot::Call { claim, item, first } => {
                    self.answered(claim, &replicate_id(item, replicate), *first)
                }
            })
            .collect()
    }

    /// The prediction for `claim` read from call `item`; `first` when the call's usage is
    /// charged to it.
    fn answered(
        &self,
        claim: &str,
        item: &str,
        first: bool,
    ) -> Result<PredictionRecord, StepError> {
        let step = &self.ctx.step.name;
        let record = self.calls.get(item).ok_or_else(|| {
            StepError::Invariant(format!("step `{step}`: no answer for call {item}"))
        })?;
        let reading = record.reading.clone().ok_or_else(|| {
            StepError::Invariant(format!("step `{step}`: call {item} has no verdict reading"))
        })?;
        let usage = &record.completion.usage;
        // A shared call's usage is charged once, to the commit's first claim.
        let (tokens_in, tokens_out, cost) = if first {
            (usage.tokens_in, usage.tokens_out, usage.cost(self.price))
        } else {
            (0, 0, 0.0)
        };
        let question = self.params.question;
        let mut prediction = PredictionRecord {
            claim: claim.to_string(),
            verdict: reading.verdict,
            evidence: json!({
                "question": question,
                "provider": record.provider,
                "model": record.model,
                "call": item,
                "shared_call": !first || question.per_commit(),
                "answer": record.completion.text,
                "problem": reading.problem,
                "stop": record.completion.stop,
                "latency_ms": usage.latency_ms,
            }),
            tokens_in: Some(tokens_in),
            tokens_out: Some(tokens_out),
            cost: Some(cost),
        };
        let call = self.plan.calls.get(item);
        if let Some(commit) = call.and_then(|call| call.shuffled.as_ref()) {
            super::shuffle::mark_shown(&mut prediction.evidence, commit);
        }
        if call.is_some_and(|call| call.paraphrased) {
            super::paraphrase::mark_paraphrased(&mut prediction.evidence);
        }
        Ok(prediction)
    }
}
