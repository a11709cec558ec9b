//! The `stats` step kind: scores every arm against the oracle's labels and writes `stats.json`.
//!
//! `needs:` lists the oracle step and the arm steps (and optionally `mine-claims`, `rank-commits`
//! and `stratify` steps, whose records enrich the corpus table and the sample). Every needed step
//! whose kind is not one of those is an arm, and its records must be predictions. With
//! `rankings: [rank, rank_kw]` it also compares the flip density of commit rankings, each labelled
//! by its own oracle step among the needs (see [`super::label_sources`]). The whole analysis is
//! one item, whose key reads the output digest of every upstream item, so it reruns exactly when a
//! label or a verdict changed.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::control_stats::ControlStatsError;
use super::label_sources::{self, LabelSources};
use crate::engine::{
    ItemOutput, ItemPlan, ItemResult, ParamsDecl, PipelineProblem, Role, StepContext, StepError,
    StepKind, StepName, StepOutput, Upstream,
};
use crate::pipeline::Need;
use crate::pipeline::{Pipeline, RepoSource, StepSpec};
use crate::records::{ClaimRecord, CommitRecord, Label, TruthRecord};
use crate::stats::corpus::{self, RepositoryInfo};
use crate::stats::cutoff::Side;
use crate::stats::document::PostCutoff;
use crate::stats::evaluation::{ArmInput, JudgedSelection, Origins};
use crate::stats::rankings::{self, DensitySettings, RankingInput};
use crate::stats::reweight::NaturalRate;
use crate::stats::{AnalysisOptions, ArmInfo, Evaluation, Resample, StatsDocument, analyze};

/// The leave-one-repository-out pair the paper reports, by strategy: the claim-relative arm
/// against symbol anchoring, when both are among the arms.
const DEFAULT_LORO: (&str, &str) = ("a6_risk", "a4");

/// The `stats` step kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct StatsStep;

/// The parameters of `uses: stats`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatsParams {
    /// Bootstrap resamples for the 95% intervals (default 10000).
    #[serde(default = "default_bootstrap")]
    #[schemars(range(min = 100))]
    pub bootstrap: u64,
    /// Seed of the bootstrap (default 0).
    #[serde(default)]
    pub seed: u64,
    /// What one bootstrap draw picks: a claim, a commit with its claims, a repository.
    #[serde(default)]
    pub resample: Resample,
    /// Score only claims of repositories with this `split:` (default: every claim).
    #[serde(default)]
    pub split: Option<String>,
    /// Pairs of arm steps for leave-one-repository-out, e.g. [[a6_risk, a4]] (default: the
    /// arms declaring strategies a6_risk and a4, when both are needed).
    #[serde(default)]
    pub compare: Option<Vec<Vec<String>>>,
    /// The natural flip rate to reweight precision to (default: recorded upstream or computed).
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub natural_rate: Option<f64>,
    /// `rank-commits` steps whose flip density to compare, e.g. [rank, rank_kw]; each needs the
    /// oracle step labelling its claims in `needs`.
    #[serde(default)]
    pub rankings: Vec<StepName>,
}

fn default_bootstrap() -> u64 {
    10_000
}

/// What a step of this kind reads from the steps it needs.
const NEEDS: &[Need] = &[Need {
    roles: &[Role::Labels, Role::LabelSample],
    step: "an `oracle` step (or a `stratify` step)",
    reads: "the labels it scores against",
}];

impl StepKind for StatsStep {
    fn name(&self) -> &'static str {
        "stats"
    }

    fn version(&self) -> u32 {
        // 2: a step is a control only when its `arm` names another step it needs.
        // 3: with several oracle steps needed, the arms are scored against the one whose claims
        //    they read (not the first by name), and the corpus table reads that oracle's
        //    `mine-claims` and `rank-commits` steps; `rankings` adds flip density by ranking.
        // 4: with the oracle needed, a `cutoff` split is analysed again on its own
        //    (`post_cutoff`) instead of replacing the oracle's labels.
        // 5: a control's agreement counts only the claims both it and its arm judged, and its
        //    arm is scored again on the claims the control judged (`arm_on_same_claims`).
        5
    }

    fn about(&self) -> &'static str {
        "precision, recall, bootstrap intervals, McNemar, leave-one-repository-out per arm"
    }

    fn params(&self) -> ParamsDecl {
        ParamsDecl::of::<StatsParams>()
    }

    fn requires(&self, _step: &StepSpec) -> &'static [Need] {
        NEEDS
    }

    fn role(&self, _step: &StepSpec) -> Role {
        Role::Stats
    }

    fn check_pipeline(&self, step: &StepSpec, pipeline: &Pipeline) -> Vec<PipelineProblem> {
        let rankings: Vec<String> = step
            .params
            .get::<StatsParams>()
            .map(|params| params.rankings.iter().map(|name| name.0.clone()).collect())
            .unwrap_or_default();
        match sources_of(pipeline, step, &rankings) {
            Ok(_) => Vec::new(),
            Err(problems) => problems,
        }
    }

    fn items(&self, ctx: &StepContext, upstream: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        let params: &StatsParams = ctx.params()?;
        check(ctx, params, upstream)?;
        // The pipeline's repositories and models shape the output too, so they enter the key.
        let context = serde_json::json!({
            "repositories": repositories(ctx.pipeline),
            "arms": arm_infos(ctx.pipeline, upstream),
        });
        Ok(vec![
            ItemPlan::new("stats")
                .params(context)
                .read_outputs(upstream.all()),
        ])
    }

    fn run(
        &self,
        ctx: &StepContext,
        _item: &ItemPlan,
        upstream: &Upstream,
    ) -> Result<ItemOutput, StepError> {
        let params: &StatsParams = ctx.params()?;
        let document = compute(ctx, params, upstream)?;
        Ok(ItemOutput::records([document]))
    }

    fn publish(&self, ctx: &StepContext, items: &[ItemResult]) -> Result<(), StepError> {
        let record = items
            .first()
            .and_then(|item| item.output.records.first())
            .ok_or_else(|| {
                StepError::Invariant(format!("step `{}` produced no statistics", ctx.step.name))
            })?;
        let mut bytes = serde_json::to_vec_pretty(record).expect("statistics serialize");
        bytes.push(b'\n');
        ctx.write_result("stats.json", &bytes)
    }
}

fn input_error(ctx: &StepContext, message: impl std::fmt::Display) -> StepError {
    StepError::Input(format!("step `{}`: {message}", ctx.step.name))
}

/// The user's input is wrong, as `error` says.
fn input_because(
    ctx: &StepContext,
    error: impl std::error::Error + Send + Sync + 'static,
) -> StepError {
    StepError::input(format!("step `{}`", ctx.step.name), error)
}

/// Checks what can be checked before anything runs.
fn check(ctx: &StepContext, params: &StatsParams, upstream: &Upstream) -> Result<(), StepError> {
    if upstream
        .first_with_role(|role| matches!(role, Role::Labels | Role::LabelSample))
        .is_none()
    {
        return Err(input_error(
            ctx,
            "needs an `oracle` step (or a `stratify` step) for the labels; add it to `needs:`",
        ));
    }
    if let Some(split) = &params.split
        && !ctx
            .pipeline
            .repos
            .iter()
            .any(|repo| repo.split.as_deref() == Some(split))
    {
        return Err(input_error(
            ctx,
            format!("no repository has `split: {split}`"),
        ));
    }
    if let Some(rate) = params.natural_rate
        && !(rate > 0.0 && rate < 1.0)
    {
        return Err(input_error(
            ctx,
            "`natural_rate` must lie strictly between 0 and 1",
        ));
    }
    sources(ctx, params)?;
    loro_pairs(ctx, params).map(|_| ())
}

/// Where the labels of the arms and of each ranking come from, as the loader checked.
fn sources_of(
    pipeline: &Pipeline,
    step: &StepSpec,
    rankings: &[String],
) -> Result<LabelSources, Vec<PipelineProblem>> {
    let arms: Vec<&str> = step
        .needs
        .iter()
        .filter(|need| {
            pipeline
                .step(need)
                .is_some_and(|spec| spec.role.is_scored())
        })
        .map(String::as_str)
        .collect();
    label_sources::resolve(pipeline, step, &arms, rankings)
}

fn sources(ctx: &StepContext, params: &StatsParams) -> Result<LabelSources, StepError> {
    let rankings: Vec<String> = params.rankings.iter().map(|name| name.0.clone()).collect();
    sources_of(ctx.pipeline, ctx.step, &rankings).map_err(|problems| {
        let messages: Vec<String> = problems
            .into_iter()
            .map(|problem| format!("{} ({})", problem.message, problem.hint))
            .collect();
        StepError::Input(format!(
            "{}:{}: {}",
            ctx.pipeline.file.display(),
            ctx.step.line,
            messages.join("; ")
        ))
    })
}

/// The needed step whose role is `role` upstream of `oracle` (or, with no oracle, the first
/// needed).
fn feeding<'a>(
    ctx: &StepContext,
    upstream: &'a Upstream,
    role: &Role,
    oracle: Option<&str>,
) -> Option<&'a StepOutput> {
    let Some(oracle) = oracle else {
        return upstream.first_with_role(|candidate| candidate == role);
    };
    let before = label_sources::ancestors(ctx.pipeline, oracle);
    upstream
        .all()
        .find(|output| output.role == *role && before.contains(&output.step))
}

/// The needed arm step declaring `strategy`: the one judging every claim if exactly one does,
/// else the one judging a selection if exactly one does (an arm and its sampled twin declare the
/// same strategy; the full arm is the one compared).
fn arm_of_strategy(ctx: &StepContext, strategy: &str) -> Option<String> {
    let judges_a_selection = |spec: &StepSpec| {
        spec.needs.iter().any(|need| {
            ctx.pipeline
                .step(need)
                .is_some_and(|need| need.role.is_selection())
        })
    };
    let arms: Vec<&StepSpec> = ctx
        .step
        .needs
        .iter()
        .filter_map(|need| ctx.pipeline.step(need))
        .filter(|spec| spec.role.strategy() == Some(strategy))
        .collect();
    for selected in [false, true] {
        let mut matching = arms
            .iter()
            .filter(|spec| judges_a_selection(spec) == selected);
        if let (Some(only), None) = (matching.next(), matching.next()) {
            return Some(only.name.clone());
        }
    }
    None
}

fn loro_pairs(ctx: &StepContext, params: &StatsParams) -> Result<Vec<(String, String)>, StepError> {
    let Some(pairs) = &params.compare else {
        let pair = arm_of_strategy(ctx, DEFAULT_LORO.0).zip(arm_of_strategy(ctx, DEFAULT_LORO.1));
        return Ok(pair.into_iter().collect());
    };
    pairs
        .iter()
        .map(|pair| match pair.as_slice() {
            [first, second] => Ok((first.clone(), second.clone())),
            _ => Err(input_error(
                ctx,
                format!("`compare` entries are pairs of arm steps, got {pair:?}"),
            )),
        })
        .collect()
}

/// The pipeline's repositories, as the corpus table needs them.
fn repositories(pipeline: &Pipeline) -> BTreeMap<String, RepositoryInfo> {
    pipeline
        .repos
        .iter()
        .map(|repo| {
            let source = match &repo.source {
                RepoSource::Url(url) => url.clone(),
                RepoSource::Path(path) | RepoSource::Corpus(path) => path.display().to_string(),
            };
            let info = RepositoryInfo {
                split: repo.split.clone(),
                source,
            };
            (repo.name.clone(), info)
        })
        .collect()
}

fn is_arm(output: &StepOutput) -> bool {
    output.role.is_scored()
}

/// What the pipeline says about each arm step.
fn arm_infos(pipeline: &Pipeline, upstream: &Upstream) -> BTreeMap<String, ArmInfo> {
    upstream
        .all()
        .filter(|output| is_arm(output))
        .map(|output| {
            let model = output.role.model().map(str::to_string);
            let spec = model.as_ref().and_then(|model| pipeline.models.get(model));
            let price = spec.and_then(|model| model.price_per_mtok);
            let judged_selection = pipeline.step(&output.step).and_then(|step| {
                step.needs.iter().find(|need| {
                    pipeline
                        .step(need)
                        .is_some_and(|need| need.role.is_selection())
                })
            });
            let info = ArmInfo {
                replicates: None,
                model_id: spec.map(|spec| format!("{} {}", spec.provider, spec.model)),
                judged_selection: judged_selection.map(|step| JudgedSelection {
                    step: step.clone(),
                    claims: 0,
                }),
                kind: output.kind.clone(),
                model,
                price_input: price.map(|price| price.input),
                price_output: price.map(|price| price.output),
                // A control stands beside the arm it wraps when that arm is scored here too; else
                // it is named by its kind and parameters, and still never scored as an arm.
                control_of: output.role.control_of().map(|of| {
                    if upstream.steps.contains_key(of) {
                        of.to_string()
                    } else {
                        pipeline.step(&output.step).map_or_else(
                            || of.to_string(),
                            |spec| format!("{} {}", spec.uses, spec.with),
                        )
                    }
                }),
                control: output.role.control().map(str::to_string),
                strategy: output.role.strategy().map(str::to_string),
            };
            (output.step.clone(), info)
        })
        .collect()
}

/// The natural rate of the labels `records` of step `step` whose claims are in the split scored:
/// their share of flips among the labelled.
fn computed_natural_rate(
    step: &str,
    records: &[TruthRecord],
    origins: &Origins,
    in_split: Option<&BTreeSet<String>>,
) -> Option<NaturalRate> {
    let (mut flipped, mut labelled) = (0u64, 0u64);
    for record in records {
        let keep = origins
            .of(&record.claim)
            .ok()
            .is_some_and(|origin| in_split.is_none_or(|keep| keep.contains(&origin.repository)));
        if keep && record.label != Label::Discarded {
            labelled += 1;
            flipped += u64::from(record.label == Label::Flipped);
        }
    }
    crate::stats::confusion::ratio(flipped, labelled).map(|value| NaturalRate {
        value,
        source: format!("computed:{step}"),
    })
}

/// What the analysis reads of the steps it needs besides the arms, decoded once.
struct Inputs {
    /// The oracle step scoring the arms, if one is needed.
    oracle: Option<String>,
    claims: Option<Vec<ClaimRecord>>,
    commits: Option<Vec<CommitRecord>>,
    origins: Origins,
    /// The oracle's labels: the population.
    population: Vec<TruthRecord>,
    /// The labels scored (a sample's, else the population) and the step they come from.
    labels: Vec<TruthRecord>,
    labels_from: String,
    /// The natural rate the sample records of the population it drew from.
    recorded_rate: Option<NaturalRate>,
    repositories: BTreeMap<String, RepositoryInfo>,
    /// The repositories of the split scored, or `None` for every one.
    in_split: Option<BTreeSet<String>>,
}

/// Reads the claims, commits and labels the analysis scores against.
fn read_inputs(
    ctx: &StepContext,
    params: &StatsParams,
    upstream: &Upstream,
    sources: &LabelSources,
) -> Result<Inputs, StepError> {
    let oracle = sources
        .arms
        .as_deref()
        .and_then(|name| upstream.steps.get(name))
        .map(AsRef::as_ref);
    let claims: Option<Vec<ClaimRecord>> =
        feeding(ctx, upstream, &Role::Claims, sources.arms.as_deref())
            .map(StepOutput::decode_all)
            .transpose()?;
    let commits: Option<Vec<CommitRecord>> =
        feeding(ctx, upstream, &Role::Commits, sources.arms.as_deref())
            .map(StepOutput::decode_all)
            .transpose()?;
    let origins = claims
        .as_deref()
        .map(Origins::from_claims)
        .unwrap_or_default();
    let population: Vec<TruthRecord> = match oracle {
        Some(oracle) => oracle.decode_all()?,
        None => Vec::new(),
    };
    // A sample supplies the labels scored, else the oracle, and records the natural rate of the
    // population it drew from; a cutoff split never replaces the oracle's labels: it gets a whole
    // analysis of its own (`post_cutoff`).
    let (labels, labels_from, recorded_rate) =
        match upstream.first_with_role(|role| *role == Role::LabelSample) {
            Some(sample) => {
                let labelled = super::selection::labelled(sample)?;
                let rate = labelled
                    .summary
                    .as_ref()
                    .and_then(super::selection::SelectionSummary::natural_rate)
                    .map(|value| NaturalRate {
                        value,
                        source: format!("step:{}", sample.step),
                    });
                (labelled.truth, sample.step.clone(), rate)
            }
            None => (
                population.clone(),
                oracle.expect("checked").step.clone(),
                None,
            ),
        };
    let repositories = repositories(ctx.pipeline);
    let in_split: Option<BTreeSet<String>> = params.split.as_ref().map(|split| {
        repositories
            .iter()
            .filter(|(_, info)| info.split.as_deref() == Some(split))
            .map(|(name, _)| name.clone())
            .collect()
    });
    Ok(Inputs {
        oracle: oracle.map(|oracle| oracle.step.clone()),
        claims,
        commits,
        origins,
        population,
        labels,
        labels_from,
        recorded_rate,
        repositories,
        in_split,
    })
}

/// Every needed arm's verdicts, with what the pipeline says about it.
fn scored_arms(
    ctx: &StepContext,
    upstream: &Upstream,
) -> Result<BTreeMap<String, ArmInput>, StepError> {
    let infos = arm_infos(ctx.pipeline, upstream);
    let mut arms = BTreeMap::new();
    for output in upstream.all().filter(|output| is_arm(output)) {
        // Whatever kind it is: a model arm's items are its calls (one per commit for A5), and
        // the predictions it derived from them, claim by claim, are its reduction.
        let scored = super::scored::scored(output)?;
        let predictions = scored.predictions;
        let mut info = infos[&output.step].clone();
        info.replicates = scored.agreement;
        if let Some(selection) = info.judged_selection.as_mut() {
            selection.claims = predictions.len();
        }
        arms.insert(output.step.clone(), ArmInput { info, predictions });
    }
    Ok(arms)
}

/// Runs the whole analysis.
fn compute(
    ctx: &StepContext,
    params: &StatsParams,
    upstream: &Upstream,
) -> Result<StatsDocument, StepError> {
    check(ctx, params, upstream)?;
    let sources = sources(ctx, params)?;
    let inputs = read_inputs(ctx, params, upstream, &sources)?;
    let arms = scored_arms(ctx, upstream)?;
    let failed = |error: Box<dyn std::error::Error + Send + Sync>| {
        StepError::failed(format!("step `{}`", ctx.step.name), error)
    };
    let in_split = inputs.in_split.as_ref();
    let evaluation = Evaluation::build(&inputs.labels, &inputs.origins, &arms, in_split)
        .map_err(|error| failed(error.into()))?;
    let natural_rate = match params.natural_rate {
        Some(value) => Some(NaturalRate {
            value,
            source: "param".into(),
        }),
        None => inputs
            .recorded_rate
            .clone()
            .or_else(|| match &inputs.oracle {
                Some(oracle) => {
                    computed_natural_rate(oracle, &inputs.population, &inputs.origins, in_split)
                }
                None => computed_natural_rate(
                    &inputs.labels_from,
                    &inputs.labels,
                    &inputs.origins,
                    in_split,
                ),
            }),
    };
    let corpus_rows = corpus::corpus(
        &inputs.repositories,
        &inputs.population,
        &inputs.origins,
        inputs.claims.as_deref(),
        inputs.commits.as_deref(),
    )
    .map_err(|error| failed(error.into()))?;
    let options = AnalysisOptions {
        resamples: params.bootstrap,
        seed: params.seed,
        resample: params.resample,
        confidence: 0.95,
        loro: loro_pairs(ctx, params)?,
        natural_rate,
        split: params.split.clone(),
        labels_from: inputs.labels_from.clone(),
    };
    let mut document = analyze(
        &evaluation,
        corpus_rows,
        inputs.repositories.clone(),
        &options,
    );
    add_controls(
        ctx,
        params,
        upstream,
        &inputs,
        &arms,
        &options,
        &mut document,
    )?;
    if !sources.rankings.is_empty() {
        let settings = DensitySettings {
            resamples: options.resamples,
            seed: options.seed,
            confidence: options.confidence,
        };
        document.rankings = Some(compare_rankings(
            ctx, &sources, upstream, in_split, &settings,
        )?);
    }
    Ok(document)
}

/// Adds to `document` what the needed controls say: the cutoff comparison, the rename class,
/// and the whole analysis again after the cutoff.
fn add_controls(
    ctx: &StepContext,
    params: &StatsParams,
    upstream: &Upstream,
    inputs: &Inputs,
    arms: &BTreeMap<String, ArmInput>,
    options: &AnalysisOptions,
    document: &mut StatsDocument,
) -> Result<(), StepError> {
    let controls = super::control_stats::ControlInputs {
        population: &inputs.population,
        origins: &inputs.origins,
        arms,
        in_split: inputs.in_split.as_ref(),
        repositories: &document.repositories,
        resamples: params.bootstrap,
        seed: params.seed,
        resample: params.resample,
        // Arms that judged only a selection have no verdict outside it: not comparable here.
        judged_a_selection: arms
            .keys()
            .filter(|arm| {
                ctx.pipeline.step(arm).is_some_and(|step| {
                    step.needs.iter().any(|need| {
                        ctx.pipeline
                            .step(need)
                            .is_some_and(|need| need.role.is_selection())
                    })
                })
            })
            .cloned()
            .collect(),
    };
    let split = upstream.first_with_role(|role| *role == Role::LabelSplit);
    let renames = upstream.first_with_role(|role| *role == Role::RenameClass);
    let cutoff = split
        .map(|split| controls.cutoff(split))
        .transpose()
        .map_err(|error| input_because(ctx, error))?
        .flatten();
    let rename_class = renames
        .map(|renames| controls.rename_class(renames))
        .transpose()
        .map_err(|error| input_because(ctx, error))?;
    let labels_from = &inputs.labels_from;
    let post = match split {
        Some(split)
            if split.step != *labels_from
                && !label_sources::ancestors(ctx.pipeline, labels_from).contains(&split.step) =>
        {
            let scored = Scored {
                labels: &inputs.labels,
                origins: &inputs.origins,
                arms,
                in_split: inputs.in_split.as_ref(),
                claims: inputs.claims.as_deref(),
                commits: inputs.commits.as_deref(),
                repositories: &inputs.repositories,
                options,
            };
            let post = post_cutoff(split, &scored, &controls, renames)
                .map_err(|error| input_because(ctx, error))?;
            Some(Box::new(post))
        }
        _ => None,
    };
    if split.is_some() {
        document.cutoff = cutoff;
    }
    if rename_class.is_some() {
        document.rename_class = rename_class;
    }
    if post.is_some() {
        document.post_cutoff = post;
    }
    Ok(())
}

/// What the analysis of the whole set read, for the post-cutoff split to read again.
struct Scored<'a> {
    labels: &'a [TruthRecord],
    origins: &'a Origins,
    arms: &'a BTreeMap<String, ArmInput>,
    in_split: Option<&'a BTreeSet<String>>,
    claims: Option<&'a [ClaimRecord]>,
    commits: Option<&'a [CommitRecord]>,
    repositories: &'a BTreeMap<String, RepositoryInfo>,
    options: &'a AnalysisOptions,
}

/// The whole analysis again on the claims scored above whose child commit is after the cutoff of
/// the `cutoff` step `split`: the same arms, controls and rename class, the corpus of the commits
/// after the cutoff, and precision reweighted to the split's natural rate (its flip rate after
/// the cutoff). Rankings and the
/// comparison across the cutoff are about the whole set and stay out.
fn post_cutoff(
    split: &StepOutput,
    scored: &Scored,
    controls: &super::control_stats::ControlInputs,
    renames: Option<&StepOutput>,
) -> Result<PostCutoff, ControlStatsError> {
    let labelled =
        super::selection::labelled(split).map_err(|source| ControlStatsError::Split {
            step: split.step.clone(),
            source,
        })?;
    let summary = match labelled.summary {
        Some(super::selection::SelectionSummary::Cutoff(summary)) => summary,
        _ => {
            return Err(ControlStatsError::NoSummary {
                step: split.step.clone(),
            });
        }
    };
    let population = labelled.truth;
    let after: BTreeSet<&str> = population
        .iter()
        .map(|record| record.claim.as_str())
        .collect();
    let labels: Vec<TruthRecord> = scored
        .labels
        .iter()
        .filter(|record| after.contains(record.claim.as_str()))
        .cloned()
        .collect();
    let evaluation = Evaluation::build(&labels, scored.origins, scored.arms, scored.in_split)?;
    let claims: Option<Vec<ClaimRecord>> = scored.claims.map(|claims| {
        claims
            .iter()
            .filter(|claim| after.contains(claim.id.as_str()))
            .cloned()
            .collect()
    });
    let commits: Option<Vec<CommitRecord>> = scored.commits.map(|commits| {
        commits
            .iter()
            .filter(|commit| summary.cutoff.side(commit.time) == Side::After)
            .cloned()
            .collect()
    });
    let corpus_rows = corpus::corpus(
        scored.repositories,
        &population,
        scored.origins,
        claims.as_deref(),
        commits.as_deref(),
    )?;
    // Every table's context line names the split: the whole set's, after the cutoff.
    let whole = scored
        .options
        .split
        .clone()
        .unwrap_or_else(|| "all labelled claims".to_string());
    let options = AnalysisOptions {
        natural_rate: summary.natural_rate.map(|value| NaturalRate {
            value,
            source: format!("step:{}", split.step),
        }),
        split: Some(format!("{whole} after the cutoff {}", summary.cutoff.text)),
        ..scored.options.clone()
    };
    let mut document = analyze(
        &evaluation,
        corpus_rows,
        scored.repositories.clone(),
        &options,
    );
    if let Some(renames) = renames {
        let after_only = super::control_stats::ControlInputs {
            population: &population,
            ..controls.clone()
        };
        document.rename_class = Some(after_only.rename_class(renames)?);
    }
    Ok(PostCutoff {
        step: split.step.clone(),
        cutoff: summary.cutoff,
        document,
    })
}

/// Flip density of every ranking in `sources`, from its rank step's commits and its oracle's
/// labels.
fn compare_rankings(
    ctx: &StepContext,
    sources: &LabelSources,
    upstream: &Upstream,
    in_split: Option<&BTreeSet<String>>,
    settings: &DensitySettings,
) -> Result<rankings::RankingComparison, StepError> {
    let read = |name: &str| {
        upstream.steps.get(name).ok_or_else(|| {
            input_error(
                ctx,
                format!("`rankings` reads step `{name}`, which is not in `needs`"),
            )
        })
    };
    let mut inputs = Vec::new();
    for source in &sources.rankings {
        let commits: Vec<CommitRecord> = read(&source.rank)?.decode_all()?;
        let truth: Vec<TruthRecord> = read(&source.oracle)?.decode_all()?;
        inputs.push((source, commits, truth));
    }
    let inputs: Vec<RankingInput> = inputs
        .iter()
        .map(|(source, commits, truth)| RankingInput {
            step: &source.rank,
            by: &source.by,
            labels_from: &source.oracle,
            commits,
            truth,
        })
        .collect();
    rankings::compare(&inputs, in_split, settings)
        .map_err(|error| StepError::failed(format!("step `{}`", ctx.step.name), error))
}
