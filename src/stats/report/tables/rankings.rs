//! The two rankings of commits, side by side.

use super::{Section, Table, names, split_name};
use crate::stats::document::StatsDocument;
use crate::stats::rankings::{RankingComparison, RankingDifference, RankingStats};
use crate::stats::report::value::Value;

pub(super) fn rankings(document: &StatsDocument) -> Section {
    let title = "Flip density by ranking".to_string();
    let Some(comparison) = &document.rankings else {
        return Section::Omitted {
            title,
            needs: "it needs two commit rankings mined and labelled side by side, named in the \
                    stats step's `rankings:` (e.g. `rankings: [rank, rank_kw]`)."
                .into(),
        };
    };
    let rows = comparison
        .steps
        .iter()
        .map(ranking_row)
        .chain(comparison.differences.iter().map(difference_row))
        .collect();
    Section::Table(Table {
        slug: "flip_density_by_ranking".into(),
        title,
        context: format!(
            "Split: {} · {} distinct commits ranked by {} rankings",
            split_name(document),
            comparison.commits,
            comparison.steps.len()
        ),
        columns: names(&[
            "ranking",
            "by",
            "labels from",
            "commits ranked",
            "commits labelled",
            "claims labelled",
            "flipped",
            "held",
            "discarded",
            "flips per commit [95% CI]",
            "flip rate [95% CI]",
            "with a flip [95% CI]",
        ]),
        rows,
        notes: notes(document, comparison),
    })
}

/// One ranking's counts and densities.
fn ranking_row(ranking: &RankingStats) -> Vec<Value> {
    vec![
        Value::text(&ranking.step),
        Value::text(&ranking.by),
        Value::text(&ranking.labels_from),
        Value::Count(ranking.commits),
        Value::Count(ranking.commits_labelled),
        Value::Count(ranking.claims),
        Value::Count(ranking.flipped),
        Value::Count(ranking.held),
        Value::Count(ranking.discarded),
        Value::RateInterval(ranking.flips_per_commit, ranking.flips_per_commit_ci),
        Value::RateInterval(ranking.flip_rate, ranking.flip_rate_ci),
        Value::RateInterval(ranking.flip_commit_share, ranking.flip_commit_share_ci),
    ]
}

/// Two rankings' difference, under the rankings: densities only.
fn difference_row(difference: &RankingDifference) -> Vec<Value> {
    let blank = || Value::text("");
    vec![
        Value::text(format!("{} − {}", difference.ranking, difference.other)),
        Value::text("difference"),
        blank(),
        blank(),
        blank(),
        blank(),
        blank(),
        blank(),
        blank(),
        Value::GapInterval(difference.flips_per_commit, difference.flips_per_commit_ci),
        Value::GapInterval(difference.flip_rate, difference.flip_rate_ci),
        Value::GapInterval(
            difference.flip_commit_share,
            difference.flip_commit_share_ci,
        ),
    ]
}

/// What the densities mean, how many commits each pair of rankings shares, and how the intervals
/// were made.
fn notes(document: &StatsDocument, comparison: &RankingComparison) -> Vec<String> {
    let settings = &document.bootstrap;
    let mut notes = vec![
        "Flips per commit: flipped claims per commit ranked (commits that gave no claims count). \
         Flip rate: flipped claims per labelled (flipped or held) claim; discarded claims are \
         excluded. With a flip: the share of commits ranked with at least one flipped claim."
            .to_string(),
    ];
    notes.extend(comparison.differences.iter().map(overlap_note));
    notes.push(format!(
        "Intervals: {:.0}% bootstrap percentile, {} resamples of the {} commits any ranking \
         picked (a commit drawn with all its claims, for every ranking that picked it), seed {}. \
         A difference is the earlier ranking minus the later, paired on shared commits.",
        settings.confidence * 100.0,
        settings.resamples,
        comparison.commits,
        settings.seed
    ));
    notes
}

/// How many commits two rankings both picked.
fn overlap_note(difference: &RankingDifference) -> String {
    let one = difference.shared_commits == 1;
    format!(
        "`{}` and `{}` both picked {} commit{}; each ranking counts {}.",
        difference.ranking,
        difference.other,
        difference.shared_commits,
        if one { "" } else { "s" },
        if one { "it" } else { "them" }
    )
}
