//! The splits and controls on the demo corpus through the binary: a stratified sample at 25%
//! flips with its natural rate, an arm that judges only the sampled claims, the post-cutoff split
//! at a `models:` entry's `cutoff:` (reported whole a second time) and the fixed-repository
//! comparison across it (Table IX), the shuffle across two repositories, and the rename class (the demo's one
//! pure rename, `Inventory.is_low` → `needs_restock`), as `corpus/demo/EXPECTED.md` documents.

use std::collections::BTreeSet;

use claimflow::records::{Label, PredictionRecord, TruthRecord};

use crate::common::project::Project;

const PIPELINE: &str = r#"version: 1
name: demo
repos:
  - {name: demo, corpus: corpus/demo, branch: main, split: dev, python: ["3.11"]}
models:
  judge: {provider: llama-server, cutoff: 2024-03-10}
steps:
  rank:    {uses: rank-commits, with: {top: 40, min_score: 0}}
  claims:  {uses: mine-claims, needs: [rank]}
  truth:   {uses: oracle, needs: [claims], with: {runs: 10}}
  sample:  {uses: stratify, needs: [truth], with: {split: dev, flip_rate: 0.25, seed: 1}}
  post:    {uses: cutoff, needs: [rank, truth], with: {model: judge}}
  renames: {uses: rename-class, needs: [claims]}
  a3:      {uses: arm, needs: [claims], with: {arm: file-anchoring}}
  a4:      {uses: arm, needs: [claims], with: {arm: symbol-anchoring}}
  a4_sampled: {uses: arm, needs: [claims, sample], with: {arm: symbol-anchoring}}
  shuffled: {uses: shuffle, needs: [rank, claims], with: {seed: 1}}
  a3_shuffled: {uses: arm, needs: [claims, shuffled], with: {arm: file-anchoring}}
  a4_shuffled: {uses: arm, needs: [claims, shuffled], with: {arm: symbol-anchoring}}
  paraphrased: {uses: paraphrase, needs: [claims, sample], with: {runs: 2}}
  a4_paraphrased: {uses: arm, needs: [claims, sample, paraphrased], with: {arm: symbol-anchoring}}
  stats:
    uses: stats
    needs: [truth, sample, post, renames, a3, a4, a4_sampled, a3_shuffled, a4_shuffled,
            a4_paraphrased]
    with: {bootstrap: 1000, seed: 1}
  report: {uses: report, needs: [stats]}
"#;

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The report's sections whose heading starts with one of `titles`.
fn sections(report: &str, titles: &[&str]) -> String {
    report
        .split("\n## ")
        .filter(|section| titles.iter().any(|title| section.starts_with(title)))
        .map(|section| format!("## {}", section.trim_end()))
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[test]
fn the_demo_controls_report_what_expected_md_documents() {
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/demo");
    let project = Project::new();
    copy_dir(&corpus, &project.path("corpus/demo"));
    project.file("pipeline.yaml", PIPELINE);
    project.ok(&["run", "pipeline.yaml", "-j", "2", "-q"]);

    // The sample: every flip, three held claims per flip, the natural rate recorded.
    let summary: serde_json::Value =
        serde_json::from_str(&project.read("results/demo/sample.json")).unwrap();
    assert_eq!(summary["flipped"], 7, "{summary}");
    assert_eq!(summary["held"], 21, "{summary}");
    assert_eq!(summary["achieved_rate"], 0.25, "{summary}");
    assert_eq!(summary["population_flipped"], 7, "{summary}");
    assert_eq!(summary["population_held"], 78, "{summary}");
    let sampled: BTreeSet<String> = project
        .read("results/demo/sample.jsonl")
        .lines()
        .map(|line| serde_json::from_str::<TruthRecord>(line).unwrap().claim)
        .collect();
    assert_eq!(sampled.len(), 28);

    // An arm over the sample judges the sampled claims and no other.
    let judged: BTreeSet<String> = project
        .read("results/demo/predictions/a4_sampled.jsonl")
        .lines()
        .map(|line| {
            serde_json::from_str::<PredictionRecord>(line)
                .unwrap()
                .claim
        })
        .collect();
    assert_eq!(judged, sampled);

    // The post-cutoff split: commits 06 to 14 are after 2024-03-10.
    let cutoff: serde_json::Value =
        serde_json::from_str(&project.read("results/demo/cutoff.json")).unwrap();
    assert_eq!(
        (&cutoff["before"], &cutoff["after"]),
        (
            &serde_json::json!({"claims": 30, "flipped": 4}),
            &serde_json::json!({"claims": 55, "flipped": 3})
        ),
        "{cutoff}"
    );
    let after: Vec<TruthRecord> = project
        .read("results/demo/cutoff.jsonl")
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(
        after
            .iter()
            .filter(|record| record.label != Label::Discarded)
            .count(),
        55
    );

    // The rename class: the two tests that call `is_low`, and nothing else.
    let members: Vec<String> = project
        .read("results/demo/rename_class.jsonl")
        .lines()
        .map(|line| {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            record["claim"]
                .as_str()
                .unwrap()
                .split("::")
                .skip(1)
                .collect::<Vec<_>>()
                .join("::")
        })
        .collect();
    assert_eq!(
        members,
        vec![
            "tests/test_inventory.py::test_pear_is_low",
            "tests/test_inventory.py::test_threshold_of_its_own",
        ]
    );

    // The shuffled-diff null: every claim paired with another commit of the one repository,
    // never its own; the arms over the pairs are reported as controls of their twins.
    let pairings: Vec<serde_json::Value> = project
        .read("results/demo/shuffle.jsonl")
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let claims = project.read("results/demo/claims.jsonl").lines().count();
    assert_eq!(pairings.len(), claims);
    for pairing in &pairings {
        assert_ne!(
            pairing["paired"]["commit"], pairing["own"]["commit"],
            "{pairing}"
        );
        assert_eq!(pairing["other_repository"], false, "{pairing}");
    }
    let paired_commits: BTreeSet<&str> = pairings
        .iter()
        .map(|pairing| pairing["paired"]["commit"].as_str().unwrap())
        .collect();
    assert!(paired_commits.len() > 1, "{paired_commits:?}");
    let stats: serde_json::Value =
        serde_json::from_str(&project.read("results/demo/stats.json")).unwrap();
    for (control, arm) in [("a3_shuffled", "a3"), ("a4_shuffled", "a4")] {
        assert_eq!(
            stats["controls"][control]["of"], arm,
            "{}",
            stats["controls"]
        );
        assert_eq!(stats["controls"][control]["by"], "shuffled-diff");
        assert!(stats["arms"].get(control).is_none());
    }

    // The paraphrase control: each sampled claim rewritten and run at the parent; kept only
    // when it passed, else listed with why. The arm over the rewrites is a control of its twin.
    let summary: serde_json::Value =
        serde_json::from_str(&project.read("results/demo/paraphrase.json")).unwrap();
    let kept: Vec<serde_json::Value> = project
        .read("results/demo/paraphrase.jsonl")
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(summary["kept"], kept.len(), "{summary}");
    assert_eq!(
        kept.len() + summary["refused"].as_u64().unwrap() as usize,
        28
    );
    assert!(!kept.is_empty(), "{summary}");
    for record in &kept {
        assert!(sampled.contains(record["id"].as_str().unwrap()));
        assert_ne!(record["source"], record["original_source"], "{record}");
        assert_eq!(record["paraphrase"]["runs_passed"], 2, "{record}");
    }
    for refusal in summary["refusals"].as_array().unwrap() {
        assert!(!refusal["why"].as_str().unwrap().is_empty(), "{refusal}");
    }
    assert_eq!(stats["controls"]["a4_paraphrased"]["of"], "a4_sampled");
    assert_eq!(stats["controls"]["a4_paraphrased"]["by"], "paraphrase");
    insta::assert_json_snapshot!("demo_paraphrase_summary", summary);

    let report = project.read("results/demo/report.md");
    insta::assert_snapshot!(sections(
        &report,
        &["Table VI", "Table IX", "Controls", "Rename class"]
    ));

    // The post-cutoff split, its date from `models: judge`'s `cutoff:`, reported whole again:
    // the sampled claims after 2024-03-10, every table the whole set's report has but the
    // rankings and the comparison across the cutoff, in `post-cutoff/`.
    let post = &stats["post_cutoff"];
    assert_eq!(post["step"], "post", "{post}");
    assert_eq!(post["cutoff"]["text"], "2024-03-10", "{post}");
    let after: BTreeSet<&str> = sides(&cutoff, "after");
    let expected: Vec<&String> = sampled
        .iter()
        .filter(|claim| after.contains(claim.as_str()))
        .collect();
    assert_eq!(
        post["document"]["sample"]["claims"],
        expected.len(),
        "{}",
        post["document"]["sample"]
    );
    assert_eq!(
        post["document"]["natural_rate"]["value"], cutoff["natural_rate"],
        "the split's own flip rate"
    );
    assert!(
        report.contains("[post-cutoff/report.md](post-cutoff/report.md)"),
        "{report}"
    );
    let tables = |directory: &str| -> BTreeSet<String> {
        std::fs::read_dir(project.path(directory))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    };
    let whole = tables("results/demo/tables");
    let split = tables("results/demo/post-cutoff/tables");
    let about_the_whole: BTreeSet<String> = whole
        .iter()
        .filter(|name| name.starts_with("table9") || name.starts_with("flip_density"))
        .cloned()
        .collect();
    assert!(!about_the_whole.is_empty(), "{whole:?}");
    assert_eq!(
        split,
        whole.difference(&about_the_whole).cloned().collect(),
        "every table again but those about the whole set"
    );
    insta::assert_snapshot!(
        "demo_post_cutoff_report",
        project.read("results/demo/post-cutoff/report.md")
    );
}

/// The claims on one side of a `cutoff.json`.
fn sides<'a>(cutoff: &'a serde_json::Value, side: &str) -> BTreeSet<&'a str> {
    cutoff["sides"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, value)| value.as_str() == Some(side))
        .map(|(claim, _)| claim.as_str())
        .collect()
}

#[test]
fn a_cutoff_takes_its_date_from_a_models_entry_and_says_when_it_has_none() {
    let text = |judge_cutoff: &str| {
        format!(
            "version: 1\nname: cut\nrepos:\n  - {{name: demo, corpus: corpus/demo, branch: main}}\n\
             models:\n  judge: {{provider: llama-server, model: local{judge_cutoff}}}\n\
             steps:\n  rank: {{uses: rank-commits}}\n  claims: {{uses: mine-claims, needs: [rank]}}\n  \
             truth: {{uses: oracle, needs: [claims]}}\n  \
             post: {{uses: cutoff, needs: [rank, truth], with: {{model: judge}}}}\n  \
             both: {{uses: cutoff, needs: [rank, truth], with: {{model: judge, date: 2024-01-01}}}}\n"
        )
    };
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let file = std::path::Path::new("pipelines/cut.yaml");
    let registry = claimflow::steps::Registry::builtin();
    let problems = claimflow::pipeline::load_str(&text(""), file, root, &registry)
        .unwrap_err()
        .to_string();
    insta::assert_snapshot!(problems);
    let problems =
        claimflow::pipeline::load_str(&text(", cutoff: 2024-03-10"), file, root, &registry)
            .unwrap_err()
            .to_string();
    assert!(!problems.contains("`post`"), "{problems}");
    assert!(problems.contains("both `date` and `model`"), "{problems}");
}

const TWO_REPOSITORIES: &str = r#"version: 1
name: shuffled
repos:
  - {name: demo, corpus: corpus/demo, branch: main, split: dev, python: ["3.11"]}
  - {name: ledger, corpus: corpus/ledger, branch: main, split: heldout, python: ["3.11"]}
steps:
  rank:     {uses: rank-commits, with: {top: 40, min_score: 0}}
  claims:   {uses: mine-claims, needs: [rank]}
  shuffled: {uses: shuffle, needs: [rank, claims], with: {seed: 1}}
  a3_shuffled: {uses: arm, needs: [claims, shuffled], with: {arm: file-anchoring}}
"#;

#[test]
fn the_shuffle_pairs_every_claim_with_a_commit_of_the_other_repository() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let project = Project::new();
    for corpus in ["corpus/demo", "corpus/ledger"] {
        copy_dir(&root.join(corpus), &project.path(corpus));
    }
    project.file("pipeline.yaml", TWO_REPOSITORIES);
    project.ok(&["run", "pipeline.yaml", "-j", "2", "-q"]);

    // The commits each repository offers (those whose diff touches a source file).
    let mut offered: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
    for line in project.read("results/shuffled/commits.jsonl").lines() {
        let commit: serde_json::Value = serde_json::from_str(line).unwrap();
        offered
            .entry(commit["repo"].as_str().unwrap().to_string())
            .or_default()
            .insert(commit["commit"].as_str().unwrap().to_string());
    }
    assert_eq!(offered.len(), 2, "{offered:?}");

    let pairings: Vec<serde_json::Value> = project
        .read("results/shuffled/shuffle.jsonl")
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let claims = project
        .read("results/shuffled/claims.jsonl")
        .lines()
        .count();
    assert_eq!(pairings.len(), claims);
    let mut seen = BTreeSet::new();
    for pairing in &pairings {
        let (own, paired) = (&pairing["own"], &pairing["paired"]);
        assert_ne!(paired["commit"], own["commit"], "{pairing}");
        assert_ne!(paired["repo"], own["repo"], "{pairing}");
        assert_eq!(pairing["other_repository"], true, "{pairing}");
        let repository = paired["repo"].as_str().unwrap();
        assert!(
            offered[repository].contains(paired["commit"].as_str().unwrap()),
            "{pairing}"
        );
        seen.insert(own["repo"].as_str().unwrap().to_string());
    }
    assert_eq!(seen.len(), 2, "claims of both repositories are paired");
    let summary: serde_json::Value =
        serde_json::from_str(&project.read("results/shuffled/shuffle.json")).unwrap();
    assert_eq!(summary["other_repository"], summary["paired"], "{summary}");
    assert_eq!(summary["unpaired"], serde_json::json!([]), "{summary}");

    // The arm over the pairs judged each claim against the other repository's diff.
    for line in project
        .read("results/shuffled/predictions/a3_shuffled.jsonl")
        .lines()
    {
        let prediction: serde_json::Value = serde_json::from_str(line).unwrap();
        let claim = prediction["claim"].as_str().unwrap();
        let own = claim.split('@').next().unwrap();
        let diff_of = prediction["evidence"]["diff_of"].as_str().unwrap();
        assert!(!diff_of.starts_with(&format!("{own}@")), "{prediction}");
    }
    insta::assert_json_snapshot!("two_repository_shuffle_summary", summary);
}
