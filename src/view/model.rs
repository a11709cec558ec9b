//! What the results page shows, as plain inputs, and the compact JSON the page embeds.
//!
//! The inputs are what a run's cached outputs hold (claims, labels with their runs, each arm's
//! predictions with evidence, the source-only diffs the model arms were shown, the report's
//! tables and figures); the `report` step fills them from its upstream, and the
//! synthetic bench fills them with made-up data, so both go through the same rendering.
//!
//! The embedded data must load fast at ten thousand claims and ten arms, and grow linearly with
//! claims: claims and predictions are positional arrays rather than objects, repeated strings
//! (run details, discard reasons) and identical evidence are stored once and referred to by index,
//! and each diff is stored once per commit (and diff limit), never once per claim. Everything is
//! sorted, so the same inputs give the same bytes.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::records::{
    ClaimRecord, CommitRecord, Label, Outcome, PredictionRecord, RunRecord, TruthRecord, Verdict,
};
use crate::stats::report::Section;

/// The version of the embedded data's layout (the page's script reads this one).
pub const SCHEMA: u32 = 1;

/// Everything the page shows.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    pub title: String,
    pub provenance: Provenance,
    /// Repository name → its `split:`.
    pub repositories: BTreeMap<String, Option<String>>,
    pub commits: Vec<CommitRecord>,
    pub claims: Vec<ClaimRecord>,
    pub truth: Vec<TruthRecord>,
    /// Arms and controls, by step name.
    pub arms: Vec<ArmView>,
    /// The source-only diff as the model arms were shown it, by repository, commit and limit.
    pub diffs: BTreeMap<DiffKey, String>,
    pub report: ReportParts,
}

/// Which diff: a commit, cut at a number of characters.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct DiffKey {
    pub repository: String,
    pub commit: String,
    pub limit: usize,
}

/// Where the results come from.
#[derive(Debug, Clone, Default)]
pub struct Provenance {
    /// The claimflow version that rendered the page.
    pub version: String,
    pub pipeline: String,
    /// blake3 of the pipeline file.
    pub pipeline_digest: String,
    /// `models:` entry → `provider model`.
    pub models: BTreeMap<String, String>,
    /// The newest commit time of the corpus (seconds since the epoch): the date the data speaks
    /// for, taken from the data rather than the clock.
    pub latest_commit: Option<i64>,
}

/// One scored step: an arm or a control of one.
#[derive(Debug, Clone, Default)]
pub struct ArmView {
    pub step: String,
    pub kind: String,
    pub strategy: Option<String>,
    /// The `models:` entry it asks.
    pub model: Option<String>,
    /// The arm step a control wraps, and which control it is.
    pub control_of: Option<String>,
    pub control: Option<String>,
    /// The characters of diff its model was shown (model arms).
    pub diff_limit: Option<usize>,
    pub predictions: Vec<PredictionRecord>,
    /// Replicates 1.. of its calls (replicate 0 is `predictions`).
    pub replicates: Vec<Vec<PredictionRecord>>,
    /// The agreement between its replicates, as the arm recorded it.
    pub agreement: Option<Value>,
}

/// The report's tables and figures.
#[derive(Debug, Clone, Default)]
pub struct ReportParts {
    pub preamble: Vec<String>,
    pub sections: Vec<Section>,
    /// `figures/<name>.svg` → the SVG text.
    pub figures: BTreeMap<String, String>,
}

/// A claim's label as one letter: `f`lipped, `h`eld, `d`iscarded, `u`nlabelled.
pub fn label_letter(label: Option<Label>) -> char {
    match label {
        Some(Label::Flipped) => 'f',
        Some(Label::Held) => 'h',
        Some(Label::Discarded) => 'd',
        None => 'u',
    }
}

/// A verdict as one letter: `f`lipped, `h`eld, `n`one; `.` when the step did not judge the claim.
pub fn verdict_letter(verdict: Option<Verdict>) -> char {
    match verdict {
        Some(Verdict::Flipped) => 'f',
        Some(Verdict::Held) => 'h',
        Some(Verdict::None) => 'n',
        None => '.',
    }
}

fn outcome_letter(outcome: Outcome) -> char {
    match outcome {
        Outcome::Passed => 'p',
        Outcome::Failed => 'f',
        Outcome::Unknown => 'u',
    }
}

/// Strings stored once, referred to by index in first-use order (the inputs are sorted, so the
/// order is too).
#[derive(Default)]
struct Interned {
    index: BTreeMap<String, usize>,
    values: Vec<String>,
}

impl Interned {
    fn of(&mut self, text: &str) -> usize {
        if let Some(index) = self.index.get(text) {
            return *index;
        }
        self.values.push(text.to_string());
        self.index.insert(text.to_string(), self.values.len() - 1);
        self.values.len() - 1
    }

    fn maybe(&mut self, text: Option<&str>) -> i64 {
        text.map_or(-1, |text| self.of(text) as i64)
    }
}

/// The claims in page order (by id), with what the page knows of each.
pub struct Claimed<'a> {
    pub ids: Vec<&'a str>,
    pub claims: BTreeMap<&'a str, &'a ClaimRecord>,
    pub truth: BTreeMap<&'a str, &'a TruthRecord>,
    /// Step → claim id → its prediction.
    pub predictions: BTreeMap<&'a str, BTreeMap<&'a str, &'a PredictionRecord>>,
}

impl<'a> Claimed<'a> {
    /// Every claim any input names: mined, labelled or judged.
    pub fn of(inputs: &'a Inputs) -> Self {
        let claims: BTreeMap<&str, &ClaimRecord> = inputs
            .claims
            .iter()
            .map(|claim| (claim.id.as_str(), claim))
            .collect();
        let mut truth: BTreeMap<&str, &TruthRecord> = BTreeMap::new();
        for record in &inputs.truth {
            truth.entry(record.claim.as_str()).or_insert(record);
        }
        let predictions: BTreeMap<&str, BTreeMap<&str, &PredictionRecord>> = inputs
            .arms
            .iter()
            .map(|arm| {
                let by_claim = arm
                    .predictions
                    .iter()
                    .map(|prediction| (prediction.claim.as_str(), prediction))
                    .collect();
                (arm.step.as_str(), by_claim)
            })
            .collect();
        let mut ids: Vec<&str> = claims.keys().chain(truth.keys()).copied().collect();
        ids.extend(
            predictions
                .values()
                .flat_map(|by_claim| by_claim.keys().copied()),
        );
        ids.sort_unstable();
        ids.dedup();
        Claimed {
            ids,
            claims,
            truth,
            predictions,
        }
    }

    pub fn label(&self, id: &str) -> Option<Label> {
        self.truth.get(id).map(|record| record.label)
    }

    pub fn verdict(&self, step: &str, id: &str) -> Option<Verdict> {
        self.predictions
            .get(step)?
            .get(id)
            .map(|prediction| prediction.verdict)
    }

    /// The repository of a claim: its record's, else the prefix of its id.
    pub fn repository(&self, id: &'a str) -> &'a str {
        match self.claims.get(id) {
            Some(claim) => claim.repo.as_str(),
            None => id.split('@').next().unwrap_or(id),
        }
    }
}

/// The lines (0-based) of `source` that hold one of `assertions`: each assertion's lines where its
/// first line appears, trimmed.
pub fn assertion_lines(source: &str, assertions: &[String]) -> Vec<usize> {
    let lines: Vec<&str> = source.lines().map(str::trim).collect();
    let mut marked = std::collections::BTreeSet::new();
    for assertion in assertions {
        let mut parts = assertion.lines().map(str::trim);
        let Some(first) = parts.next().filter(|first| !first.is_empty()) else {
            continue;
        };
        let length = assertion.lines().count().max(1);
        for (number, line) in lines.iter().enumerate() {
            if line.starts_with(first) {
                marked.extend(number..(number + length).min(lines.len()));
            }
        }
    }
    marked.into_iter().collect()
}

fn runs(runs: &[RunRecord], strings: &mut Interned) -> Value {
    let outcomes: String = runs.iter().map(|run| outcome_letter(run.outcome)).collect();
    let details: Vec<i64> = runs
        .iter()
        .map(|run| strings.maybe(run.detail.as_deref()))
        .collect();
    if details.iter().all(|detail| *detail < 0) {
        json!([outcomes])
    } else {
        json!([outcomes, details])
    }
}

/// The embedded data, in two parts: the index the page reads as it loads (claims, labels,
/// verdicts, commits) and the text it reads when a claim's page first opens (test sources, diffs,
/// evidence), so the load parses what the overview and the explorer show and no more.
pub struct Data {
    pub index: Value,
    pub text: Value,
}

/// The embedded data: see the module's doc, and `assets/view.js` for the reader.
pub fn data(inputs: &Inputs) -> Data {
    let claimed = Claimed::of(inputs);
    let mut strings = Interned::default();
    let repositories: Vec<&String> = inputs.repositories.keys().collect();
    let repository_index = |name: &str| repositories.iter().position(|known| *known == name);
    let commit_keys = commit_keys(&claimed);
    let mut diffs = Interned::default();
    let commits = commits_data(inputs, &commit_keys, &repository_index, &mut diffs);
    let claims = claims_data(&claimed, &commit_keys, &repository_index, &mut strings);
    let mut evidence = Interned::default();
    let arms: Vec<Value> = inputs
        .arms
        .iter()
        .map(|arm| arm_data(arm, &claimed, &mut evidence))
        .collect();
    let evidence: Vec<Value> = evidence
        .values
        .iter()
        .map(|text| serde_json::from_str(text).expect("interned evidence is JSON"))
        .collect();
    let sources: Vec<Option<&str>> = claimed
        .ids
        .iter()
        .map(|id| claimed.claims.get(id).map(|claim| claim.source.as_str()))
        .collect();
    let index = json!({
        "schema": SCHEMA,
        "title": inputs.title,
        "repositories": inputs.repositories.iter().map(|(name, split)| json!([name, split])).collect::<Vec<_>>(),
        "commits": commits,
        "strings": strings.values,
        "claims": claims,
        "arms": arms,
    });
    let text = json!({
        "schema": SCHEMA,
        "sources": sources,
        "diffs": diffs.values,
        "evidence": evidence,
    });
    Data { index, text }
}

/// A commit a claim names: repository, commit and parent.
type CommitKey<'a> = (&'a str, &'a str, &'a str);

/// Every (repository, commit) a claim names, once each, in order.
fn commit_keys<'a>(claimed: &Claimed<'a>) -> Vec<CommitKey<'a>> {
    let mut commit_keys: Vec<CommitKey> = claimed
        .claims
        .values()
        .map(|claim| {
            (
                claim.repo.as_str(),
                claim.commit.as_str(),
                claim.parent.as_str(),
            )
        })
        .collect();
    commit_keys.sort_unstable();
    commit_keys.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
    commit_keys
}

/// One row per commit of `commit_keys`: its repository's index, ids, subject and time when its
/// record is known, and the index in `diffs` of each diff shown of it, by limit.
fn commits_data(
    inputs: &Inputs,
    commit_keys: &[CommitKey],
    repository_index: &impl Fn(&str) -> Option<usize>,
    diffs: &mut Interned,
) -> Vec<Value> {
    let records: BTreeMap<(&str, &str), &CommitRecord> = inputs
        .commits
        .iter()
        .map(|commit| ((commit.repo.as_str(), commit.commit.as_str()), commit))
        .collect();
    commit_keys
        .iter()
        .map(|(repository, commit, parent)| {
            let record = records.get(&(*repository, *commit));
            let shown: BTreeMap<String, usize> = inputs
                .diffs
                .range(
                    DiffKey {
                        repository: repository.to_string(),
                        commit: commit.to_string(),
                        limit: 0,
                    }..=DiffKey {
                        repository: repository.to_string(),
                        commit: commit.to_string(),
                        limit: usize::MAX,
                    },
                )
                .map(|(key, text)| (key.limit.to_string(), diffs.of(text)))
                .collect();
            json!([
                repository_index(repository),
                commit,
                parent,
                record.map(|record| record.subject.as_str()),
                record.map(|record| record.time),
                shown,
            ])
        })
        .collect()
}

/// One row per claim: its id, node, repository and commit (as indexes), label, discard reason and
/// runs (strings interned in `strings`), and its assertions' lines.
fn claims_data(
    claimed: &Claimed,
    commit_keys: &[CommitKey],
    repository_index: &impl Fn(&str) -> Option<usize>,
    strings: &mut Interned,
) -> Vec<Value> {
    let commit_index: BTreeMap<(&str, &str), usize> = commit_keys
        .iter()
        .enumerate()
        .map(|(index, (repository, commit, _))| ((*repository, *commit), index))
        .collect();
    claimed
        .ids
        .iter()
        .map(|id| {
            let claim = claimed.claims.get(id);
            let truth = claimed.truth.get(id);
            json!([
                id,
                claim.map(|claim| claim.node.as_str()),
                repository_index(claimed.repository(id)),
                claim.and_then(
                    |claim| commit_index.get(&(claim.repo.as_str(), claim.commit.as_str()))
                ),
                label_letter(truth.map(|truth| truth.label)).to_string(),
                strings.maybe(truth.and_then(|truth| truth.reason.as_deref())),
                truth.map(|truth| runs(&truth.parent_runs, strings)),
                truth.map(|truth| runs(&truth.child_runs, strings)),
                claim.map(|claim| assertion_lines(&claim.source, &claim.assertions)),
            ])
        })
        .collect()
}

/// One arm: what it is, one verdict letter per claim, and for each claim it judged
/// `[claim, evidence, tokens in, tokens out, cost, replicate verdicts]`.
fn arm_data(arm: &ArmView, claimed: &Claimed, evidence: &mut Interned) -> Value {
    let verdicts: String = claimed
        .ids
        .iter()
        .map(|id| verdict_letter(claimed.verdict(&arm.step, id)))
        .collect();
    let replicates: Vec<BTreeMap<&str, Verdict>> = arm
        .replicates
        .iter()
        .map(|set| set.iter().map(|p| (p.claim.as_str(), p.verdict)).collect())
        .collect();
    let by_claim = &claimed.predictions[arm.step.as_str()];
    let predictions: Vec<Value> = claimed
        .ids
        .iter()
        .enumerate()
        .filter_map(|(index, id)| Some((index, by_claim.get(id)?)))
        .map(|(index, prediction)| {
            let mut row = vec![
                json!(index),
                json!(evidence.of(&prediction.evidence.to_string())),
            ];
            let model = prediction.tokens_in.is_some() || prediction.cost.is_some();
            if model || !replicates.is_empty() {
                row.extend([
                    json!(prediction.tokens_in),
                    json!(prediction.tokens_out),
                    json!(prediction.cost),
                ]);
            }
            if !replicates.is_empty() {
                let again: String = replicates
                    .iter()
                    .map(|set| verdict_letter(set.get(prediction.claim.as_str()).copied()))
                    .collect();
                row.push(json!(again));
            }
            Value::Array(row)
        })
        .collect();
    json!({
        "step": arm.step,
        "kind": arm.kind,
        "strategy": arm.strategy,
        "model": arm.model,
        "control_of": arm.control_of,
        "control": arm.control,
        "diff_limit": arm.diff_limit,
        "agreement": arm.agreement,
        "verdicts": verdicts,
        "predictions": predictions,
    })
}

/// An arm's verdicts against the labels, over every labelled claim it judged: the cells the
/// claims explorer filters by (`tp`: flipped and said flipped, `fp`: held and said flipped, `fn`:
/// flipped and said held, `tn`: held and said held), and the claims it gave no verdict on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cells {
    pub tp: u64,
    pub fp: u64,
    pub false_negatives: u64,
    pub tn: u64,
    pub none: u64,
}

impl Cells {
    pub fn of(step: &str, claimed: &Claimed) -> Self {
        let mut cells = Cells::default();
        for id in &claimed.ids {
            let (Some(label), Some(verdict)) = (claimed.label(id), claimed.verdict(step, id))
            else {
                continue;
            };
            match (label, verdict) {
                (Label::Discarded, _) => {}
                (_, Verdict::None) => cells.none += 1,
                (Label::Flipped, Verdict::Flipped) => cells.tp += 1,
                (Label::Held, Verdict::Flipped) => cells.fp += 1,
                (Label::Flipped, Verdict::Held) => cells.false_negatives += 1,
                (Label::Held, Verdict::Held) => cells.tn += 1,
            }
        }
        cells
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_holds_every_claim_every_arm_and_the_evidence_of_every_prediction() {
        let inputs = crate::view::synthetic::inputs(200, 10, 7);
        let Data { index, text } = data(&inputs);
        let claims = index["claims"].as_array().unwrap();
        assert_eq!(claims.len(), 200);
        let ids: Vec<&str> = claims
            .iter()
            .map(|claim| claim[0].as_str().unwrap())
            .collect();
        let mut expected: Vec<&str> = inputs
            .claims
            .iter()
            .map(|claim| claim.id.as_str())
            .collect();
        expected.sort_unstable();
        assert_eq!(ids, expected);
        assert_eq!(text["sources"].as_array().unwrap().len(), 200);
        let arms = index["arms"].as_array().unwrap();
        assert_eq!(arms.len(), 10);
        let evidence = text["evidence"].as_array().unwrap();
        for (arm, view) in arms.iter().zip(&inputs.arms) {
            assert_eq!(arm["step"], view.step.as_str());
            let verdicts = arm["verdicts"].as_str().unwrap();
            assert_eq!(verdicts.len(), 200);
            let rows = arm["predictions"].as_array().unwrap();
            assert_eq!(rows.len(), view.predictions.len());
            for row in rows {
                let claim = row[0].as_u64().unwrap() as usize;
                let prediction = view
                    .predictions
                    .iter()
                    .find(|prediction| prediction.claim == ids[claim])
                    .unwrap();
                assert_eq!(
                    evidence[row[1].as_u64().unwrap() as usize],
                    prediction.evidence
                );
                assert_eq!(
                    verdicts.as_bytes()[claim] as char,
                    verdict_letter(Some(prediction.verdict))
                );
                if prediction.tokens_in.is_some() {
                    assert_eq!(row[2], json!(prediction.tokens_in));
                    assert_eq!(row[4], json!(prediction.cost));
                }
            }
        }
        // Each commit's diff is stored once, however many claims it has.
        let commits = index["commits"].as_array().unwrap();
        assert_eq!(commits.len(), inputs.commits.len());
        assert_eq!(text["diffs"].as_array().unwrap().len(), inputs.diffs.len());
    }

    #[test]
    fn an_unjudged_claim_is_a_dot_and_a_missing_verdict_stays_none() {
        let mut inputs = crate::view::synthetic::inputs(20, 6, 3);
        inputs.arms[5].predictions.truncate(10);
        inputs.arms[5].predictions[0].verdict = Verdict::None;
        let claimed = Claimed::of(&inputs);
        let index = data(&inputs).index;
        let verdicts = index["arms"][5]["verdicts"].as_str().unwrap();
        let judged: Vec<usize> = inputs.arms[5]
            .predictions
            .iter()
            .map(|p| claimed.ids.iter().position(|id| *id == p.claim).unwrap())
            .collect();
        for (position, letter) in verdicts.chars().enumerate() {
            assert_eq!(letter == '.', !judged.contains(&position), "{verdicts}");
        }
        assert_eq!(verdicts.as_bytes()[judged[0]], b'n');
    }

    #[test]
    fn assertion_lines_mark_each_assertion_statement_whole() {
        let source = "def test_x():\n    value = 1\n    assert value == 1\n    assert (value\n            > 0)\n";
        let assertions = vec![
            "assert value == 1".to_string(),
            "assert (value\n        > 0)".to_string(),
        ];
        assert_eq!(assertion_lines(source, &assertions), vec![2, 3, 4]);
    }

    #[test]
    fn cells_count_verdicts_against_labels_and_leave_discarded_claims_out() {
        let inputs = crate::view::synthetic::inputs(300, 10, 5);
        let claimed = Claimed::of(&inputs);
        let cells = Cells::of("a0", &claimed);
        let flipped = inputs
            .truth
            .iter()
            .filter(|t| t.label == Label::Flipped)
            .count() as u64;
        let held = inputs
            .truth
            .iter()
            .filter(|t| t.label == Label::Held)
            .count() as u64;
        // A0 says flipped of every claim.
        assert_eq!(
            (cells.tp, cells.fp, cells.false_negatives, cells.tn),
            (flipped, held, 0, 0)
        );
    }
}
