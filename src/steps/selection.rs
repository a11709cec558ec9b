//! Which labels a selecting step reads, and which claims an arm judges when a selection is
//! upstream.
//!
//! A `stratify` sample and a `cutoff` split are selections of labelled claims: their records are
//! the selected claims' truth records (and one summary record). A step that needs a selection
//! reads its labels from it instead of from the oracle; an arm that needs one judges only the
//! selected claims, so no verdict (and no model call) is spent on a claim the evaluation leaves
//! out, and a larger sample computes only the claims it adds.

use std::collections::{BTreeMap, BTreeSet};

use crate::controls::sample::Sample;
use crate::stats::cutoff::{Cutoff, Side};

use serde::{Deserialize, Serialize};

use crate::engine::{ItemResult, Role, StepContext, StepError, StepOutput, Upstream};
use crate::records::TruthRecord;

/// Whether a needed step's records are a selection of labelled claims (a sample, a split).
pub fn is_selection(output: &StepOutput) -> bool {
    output.role.is_selection()
}

/// Roles a selection may draw its labels from, narrowest first.
const LABEL_ROLES: [Role; 3] = [Role::LabelSample, Role::LabelSplit, Role::Labels];

/// The needed step whose labels a selection draws from: a selection if one is needed, else the
/// oracle.
pub fn label_step<'a>(
    ctx: &StepContext,
    upstream: &'a Upstream,
) -> Result<&'a StepOutput, StepError> {
    LABEL_ROLES
        .iter()
        .find_map(|role| upstream.first_with_role(|candidate| candidate == role))
        .ok_or_else(|| {
            StepError::Input(format!(
                "step `{}`: needs an `oracle` step (or a `cutoff` or `stratify` step) for the \
                 labels; add it to `needs:`",
                ctx.step.name
            ))
        })
}

/// The summary record of a selection, told apart from the truth records beside it by its
/// `record` tag.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "lowercase")]
pub enum SelectionSummary {
    /// A `stratify` sample's (`sample.json`).
    Sample(SampleSummary),
    /// A `cutoff` split's (`cutoff.json`).
    Cutoff(CutoffSummary),
}

impl SelectionSummary {
    /// The flip rate of the population the selection stands for, when it records one.
    pub fn natural_rate(&self) -> Option<f64> {
        match self {
            SelectionSummary::Sample(sample) => sample.natural_rate,
            SelectionSummary::Cutoff(split) => split.natural_rate,
        }
    }
}

/// The summary record of a sample (`sample.json`), tagged `record: sample`
/// ([`SelectionSummary`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleSummary {
    pub split: Option<String>,
    pub seed: u64,
    pub size: Option<u64>,
    /// The step whose labels were drawn from.
    pub labels_from: String,
    /// The population's flip rate, which precision is reweighted to.
    pub natural_rate: Option<f64>,
    #[serde(flatten)]
    pub sample: Sample,
}

/// Claims and flips on one side.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SideCount {
    pub claims: u64,
    pub flipped: u64,
}

/// The summary record of a cutoff split (`cutoff.json`), tagged `record: cutoff`
/// ([`SelectionSummary`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CutoffSummary {
    pub cutoff: Cutoff,
    pub split: Option<String>,
    pub labels_from: String,
    pub before: SideCount,
    pub after: SideCount,
    /// The flip rate after the cutoff: the natural rate of the post-cutoff split.
    pub natural_rate: Option<f64>,
    /// Every labelled claim's side.
    pub sides: BTreeMap<String, Side>,
}

/// The records of a labels step (an oracle, a sample, a split), decoded once.
#[derive(Debug, Clone, Default)]
pub struct Labelled {
    /// The selection's summary; none for an oracle.
    pub summary: Option<SelectionSummary>,
    pub truth: Vec<TruthRecord>,
}

/// One record of a labels step: a truth record, or (with a `record` tag) a selection's summary.
pub enum LabelRecord {
    Summary(SelectionSummary),
    Truth(TruthRecord),
}

impl LabelRecord {
    /// The record decoded by its tag: a tagged one must be a summary, any other a truth record.
    pub fn decode(record: &serde_json::Value) -> Result<Self, serde_json::Error> {
        if record.get("record").is_some() {
            SelectionSummary::deserialize(record).map(LabelRecord::Summary)
        } else {
            TruthRecord::deserialize(record).map(LabelRecord::Truth)
        }
    }
}

/// The records of the labels step `output`, decoded once. A record that is neither a truth
/// record nor a summary is an error naming the step, never skipped.
pub fn labelled(output: &StepOutput) -> Result<Labelled, StepError> {
    let mut labelled = Labelled::default();
    for record in output
        .items
        .iter()
        .flat_map(|item| item.output.records.iter())
    {
        let decoded = LabelRecord::decode(record).map_err(|source| StepError::Record {
            step: output.step.clone(),
            source,
        })?;
        match decoded {
            LabelRecord::Summary(summary) => labelled.summary = Some(summary),
            LabelRecord::Truth(truth) => labelled.truth.push(truth),
        }
    }
    Ok(labelled)
}

/// The truth records of a labels step, its summary record left out.
pub fn truth_records(output: &StepOutput) -> Result<Vec<TruthRecord>, StepError> {
    labelled(output).map(|labelled| labelled.truth)
}

/// The claims selected by every selection step needed, or `None` when none is needed.
pub fn selected_claims(upstream: &Upstream) -> Result<Option<BTreeSet<String>>, StepError> {
    let mut selected: Option<BTreeSet<String>> = None;
    for output in upstream.all().filter(|output| is_selection(output)) {
        let claims: BTreeSet<String> = truth_records(output)?
            .into_iter()
            .map(|record| record.claim)
            .collect();
        selected = Some(match selected {
            Some(previous) => previous.intersection(&claims).cloned().collect(),
            None => claims,
        });
    }
    Ok(selected)
}

/// Publishes a step whose items hold one summary record (`record: <summary>`) beside its other
/// records: the summary to `<name>.json`, the rest to `<name>.jsonl` (under the step's own name
/// when an earlier step of its kind took those files). A `stratify` sample, a `cutoff` split and
/// a `shuffle` publish so; `is_summary` decodes a record and says whether it is the summary. The
/// records are written as they are.
pub fn publish_with_summary(
    ctx: &StepContext,
    items: &[ItemResult],
    is_summary: impl Fn(&serde_json::Value) -> Result<bool, serde_json::Error>,
    name: &str,
) -> Result<(), StepError> {
    let mut found = None;
    let mut records = Vec::new();
    for record in items.iter().flat_map(|item| item.output.records.iter()) {
        let summary = is_summary(record).map_err(|source| StepError::Record {
            step: ctx.step.name.clone(),
            source,
        })?;
        if summary {
            found = Some(record);
        } else {
            records.push(record);
        }
    }
    let found = found.ok_or_else(|| {
        StepError::Invariant(format!("step `{}` produced no summary", ctx.step.name))
    })?;
    let mut bytes = serde_json::to_vec_pretty(found).expect("a summary serializes");
    bytes.push(b'\n');
    ctx.write_result(&ctx.own_result(&format!("{name}.json")), &bytes)?;
    ctx.write_jsonl(&ctx.own_result(&format!("{name}.jsonl")), records)
}

/// Whether a selection's record is its summary, decoded ([`publish_with_summary`]).
pub fn is_selection_summary(record: &serde_json::Value) -> Result<bool, serde_json::Error> {
    LabelRecord::decode(record).map(|decoded| matches!(decoded, LabelRecord::Summary(_)))
}
