//! The two rankings of commits, side by side.

use super::{Section, Table, names, split_name};
use crate::stats::document::StatsDocument;
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
    let mut rows: Vec<Vec<Value>> = comparison
        .steps
        .iter()
        .map(|ranking| {
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
        })
        .collect();
    let mut overlaps = Vec::new();
    for difference in &comparison.differences {
        let blank = || Value::text("");
        rows.push(vec![
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
        ]);
        overlaps.push(format!(
            "`{}` and `{}` both picked {} commit{}; each ranking counts {}.",
            difference.ranking,
            difference.other,
            difference.shared_commits,
            if difference.shared_commits == 1 {
                ""
            } else {
                "s"
            },
            if difference.shared_commits == 1 {
                "it"
            } else {
                "them"
            }
        ));
    }
    let settings = &document.bootstrap;
    let mut notes = vec![
        "Flips per commit: flipped claims per commit ranked (commits that gave no claims count). \
         Flip rate: flipped claims per labelled (flipped or held) claim; discarded claims are \
         excluded. With a flip: the share of commits ranked with at least one flipped claim."
            .to_string(),
    ];
    notes.extend(overlaps);
    notes.push(format!(
        "Intervals: {:.0}% bootstrap percentile, {} resamples of the {} commits any ranking \
         picked (a commit drawn with all its claims, for every ranking that picked it), seed {}. \
         A difference is the earlier ranking minus the later, paired on shared commits.",
        settings.confidence * 100.0,
        settings.resamples,
        comparison.commits,
        settings.seed
    ));
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
        notes,
    })
}
