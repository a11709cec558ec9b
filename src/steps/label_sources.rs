//! Which oracle step labels what a `stats` step scores, read from the pipeline's graph.
//!
//! A pipeline may mine and label two rankings side by side (`rank` → `claims` → `truth` beside
//! `rank_kw` → `claims_kw` → `truth_kw`) and hand `stats` both oracle steps. The arms are scored
//! against the oracle step whose claims they read; each ranking named in `rankings:` is paired
//! with the one oracle step among the needs that labels claims mined from it. Both are resolved
//! here, once when the pipeline loads (every problem reported with its place) and again when the
//! step runs.

use std::collections::BTreeSet;

use crate::engine::{PipelineProblem, Role};
use crate::pipeline::{Pipeline, StepSpec};

/// One ranking to compare: its rank step, what it ranks by, and the oracle step labelling it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankingSource {
    /// The `rank-commits` step.
    pub rank: String,
    /// Its `by:` (`assertion-deletions` or `keywords`).
    pub by: String,
    /// The `oracle` step among the needs whose claims were mined from it.
    pub oracle: String,
}

/// Where a `stats` step's labels come from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSources {
    /// The oracle step the arms are scored against (its population, when a sampling step
    /// supplies the labels).
    pub arms: Option<String>,
    /// The rankings to compare, in the order `rankings:` lists them.
    pub rankings: Vec<RankingSource>,
}

/// Every step `name` depends on, directly or not.
pub fn ancestors(pipeline: &Pipeline, name: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![name.to_string()];
    while let Some(current) = stack.pop() {
        for need in pipeline
            .step(&current)
            .map(|step| step.needs.as_slice())
            .unwrap_or_default()
        {
            if seen.insert(need.clone()) {
                stack.push(need.clone());
            }
        }
    }
    seen
}

/// The `rank-commits` steps whose commits the claims labelled by oracle step `oracle` were mined
/// from: those a `mine-claims` step upstream of it needs directly. (A rank step needed only to
/// order two steps, `rank_kw: {needs: [rank]}`, is not one.)
pub fn rankings_labelled_by(pipeline: &Pipeline, oracle: &str) -> BTreeSet<String> {
    ancestors(pipeline, oracle)
        .iter()
        .filter(|step| has_role(pipeline, step, &Role::Claims))
        .filter_map(|step| pipeline.step(step))
        .flat_map(|mine| mine.needs.iter())
        .filter(|need| has_role(pipeline, need, &Role::Commits))
        .cloned()
        .collect()
}

fn kind_of<'a>(pipeline: &'a Pipeline, name: &str) -> &'a str {
    pipeline.step(name).map_or("", |step| step.uses.as_str())
}

/// Whether the step `name` declares `role`.
fn has_role(pipeline: &Pipeline, name: &str, role: &Role) -> bool {
    pipeline.step(name).is_some_and(|step| step.role == *role)
}

/// The `by:` of a `rank-commits` step, its default when not written.
pub fn ranked_by(step: &StepSpec) -> String {
    step.params
        .get::<super::rank_commits::RankCommitsParams>()
        .map(|params| params.by)
        .unwrap_or_default()
        .name()
        .to_string()
}

fn quoted(names: &[&String]) -> String {
    names
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Resolves the sources of `stats`, whose arm steps are `arms` and whose `rankings:` lists
/// `rankings` (empty when absent). Every problem is returned, placed at the parameter it is about.
pub fn resolve(
    pipeline: &Pipeline,
    stats: &StepSpec,
    arms: &[&str],
    rankings: &[String],
) -> Result<LabelSources, Vec<PipelineProblem>> {
    let owner = format!("step `{}`", stats.name);
    let mut problems = Vec::new();
    let oracles: Vec<&String> = stats
        .needs
        .iter()
        .filter(|need| has_role(pipeline, need, &Role::Labels))
        .collect();
    let mut sources = Vec::new();
    for (index, rank) in rankings.iter().enumerate() {
        match ranking_source(
            pipeline,
            &owner,
            &oracles,
            (index, rank),
            &rankings[..index],
        ) {
            Ok(source) => sources.push(source),
            Err(problem) => problems.push(problem),
        }
    }
    let problem = ranking_problem;
    for (index, first) in sources.iter().enumerate() {
        if let Some(second) = sources[index + 1..]
            .iter()
            .find(|other| other.oracle == first.oracle)
        {
            let at = rankings.iter().position(|rank| *rank == second.rank);
            problems.push(problem(
                at,
                format!(
                    "rankings `{}` and `{}` are both labelled by `{}`, so they cannot be told apart",
                    first.rank, second.rank, first.oracle
                ),
                format!(
                    "give each ranking its own `mine-claims` and `oracle` steps (e.g. `claims_{0}` \
                     and `truth_{0}` needing `{0}`)",
                    second.rank
                ),
            ));
        }
    }
    if rankings.len() == 1 && problems.is_empty() {
        problems.push(problem(
            Some(0),
            format!("`rankings` of {owner} names one ranking; it compares two or more"),
            "add the other `rank-commits` step to compare it with, or remove `rankings`"
                .to_string(),
        ));
    }

    let arm_oracle = match arms_oracle(pipeline, stats, arms, &oracles, &sources) {
        Ok(oracle) => oracle,
        Err((message, hint)) => {
            problems.push(PipelineProblem {
                param: None,
                index: None,
                message: format!("{owner} {message}"),
                hint,
            });
            None
        }
    };
    if problems.is_empty() {
        Ok(LabelSources {
            arms: arm_oracle,
            rankings: sources,
        })
    } else {
        Err(problems)
    }
}

/// The oracle step the arms are scored against: the only one needed; else the one whose claims
/// every arm reads (through a sampling step when there is one); with no arms, the first ranking's.
/// A problem comes back as its message (after the step's name) and hint.
fn arms_oracle(
    pipeline: &Pipeline,
    stats: &StepSpec,
    arms: &[&str],
    oracles: &[&String],
    rankings: &[RankingSource],
) -> Result<Option<String>, (String, String)> {
    if oracles.len() <= 1 {
        return Ok(oracles.first().map(|oracle| (*oracle).clone()));
    }
    let samplers: Vec<&String> = stats
        .needs
        .iter()
        .filter(|need| has_role(pipeline, need, &Role::LabelSample))
        .collect();
    let readers: Vec<&str> = if samplers.is_empty() {
        arms.to_vec()
    } else {
        samplers.iter().map(|name| name.as_str()).collect()
    };
    let claims_of = |name: &str| -> BTreeSet<String> {
        let mut mined = ancestors(pipeline, name);
        mined.insert(name.to_string());
        mined
            .into_iter()
            .filter(|step| has_role(pipeline, step, &Role::Claims))
            .collect()
    };
    let candidates: Vec<&String> = oracles
        .iter()
        .copied()
        .filter(|oracle| {
            let labelled = claims_of(oracle);
            readers
                .iter()
                .all(|reader| !labelled.is_disjoint(&claims_of(reader)))
        })
        .collect();
    let first_ranking = rankings
        .iter()
        .find(|ranking| candidates.contains(&&ranking.oracle));
    match (candidates.as_slice(), first_ranking) {
        ([one], _) => Ok(Some((*one).clone())),
        (_, Some(first)) if readers.is_empty() => Ok(Some(first.oracle.clone())),
        _ if readers.is_empty() => Err((
            format!(
                "needs the oracle steps {} and no arm or `rankings:` says which labels are the \
                 sample",
                quoted(oracles)
            ),
            "name the rankings they label in `rankings:` (the first one's labels are the \
             sample), or keep one oracle step in `needs`"
                .to_string(),
        )),
        ([], _) => Err((
            format!(
                "needs the oracle steps {}, and its arms do not all read the claims of one of them",
                quoted(oracles)
            ),
            "score arms that read the claims of one oracle step, and name the other oracle \
             steps' rankings in `rankings:`"
                .to_string(),
        )),
        (several, _) => Err((
            format!(
                "needs the oracle steps {}, and the arms read the claims of {} of them",
                quoted(oracles),
                several.len()
            ),
            "keep in `needs` the one oracle step whose claims the arms read, and name the other \
             oracle steps' rankings in `rankings:`"
                .to_string(),
        )),
    }
}

/// A problem with the `rankings` entry at `index` (or with the parameter as a whole).
fn ranking_problem(index: Option<usize>, message: String, hint: String) -> PipelineProblem {
    PipelineProblem {
        param: index.map(|_| "rankings".to_string()),
        index,
        message,
        hint,
    }
}

/// Where the ranking `rank` (entry `index` of `rankings`, after `before`) gets its labels: the
/// one oracle step among `oracles` labelling claims mined from it.
fn ranking_source(
    pipeline: &Pipeline,
    owner: &str,
    oracles: &[&String],
    (index, rank): (usize, &String),
    before: &[String],
) -> Result<RankingSource, PipelineProblem> {
    let problem = |message: String, hint: &str| ranking_problem(Some(index), message, hint.into());
    let kind = kind_of(pipeline, rank);
    if !has_role(pipeline, rank, &Role::Commits) {
        return Err(problem(
            format!(
                "`rankings` of {owner} names `{rank}` (uses: {kind}), which is not a \
                 `rank-commits` step"
            ),
            "list the `rank-commits` steps whose rankings to compare, e.g. \
             `rankings: [rank, rank_kw]`",
        ));
    }
    if before.contains(rank) {
        return Err(problem(
            format!("`rankings` of {owner} names `{rank}` twice"),
            "remove one of them",
        ));
    }
    let labelling: Vec<&String> = oracles
        .iter()
        .copied()
        .filter(|oracle| rankings_labelled_by(pipeline, oracle).contains(rank))
        .collect();
    match labelling.as_slice() {
        [oracle] => Ok(RankingSource {
            rank: rank.clone(),
            by: pipeline.step(rank).map(ranked_by).unwrap_or_default(),
            oracle: (*oracle).clone(),
        }),
        [] => {
            let elsewhere = pipeline.steps.iter().find(|step| {
                step.role == Role::Labels
                    && rankings_labelled_by(pipeline, &step.name).contains(rank)
            });
            let hint = match elsewhere {
                Some(oracle) => format!(
                    "add `{}` to `needs` of {owner}: it labels the claims mined from `{rank}`",
                    oracle.name
                ),
                None => format!(
                    "add a `mine-claims` step that needs `{rank}` and an `oracle` step that \
                     needs it, and list the oracle step in `needs` of {owner}"
                ),
            };
            Err(problem(
                format!(
                    "ranking `{rank}` has no labels: no `oracle` step in `needs` of {owner} \
                     labels claims mined from it"
                ),
                &hint,
            ))
        }
        several => Err(problem(
            format!(
                "ranking `{rank}` is labelled by {} in `needs` of {owner}; one ranking has \
                 one oracle step",
                quoted(several)
            ),
            "keep only the oracle step that labels this ranking's claims in `needs`",
        )),
    }
}
