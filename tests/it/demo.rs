//! The shipped demo corpus through the binary: mining and the oracle label every claim the way
//! `corpus/demo/EXPECTED.md` documents — the assertion and removed-API flips flipped, the refactor and
//! unrelated change held, the broken child excluded, the nondeterministic test discarded, the file
//! that no longer imports discarded while its sibling file still gets verdicts, the mixin and the
//! aliased-fixture tests restored and judged.

use std::collections::BTreeMap;
use std::path::Path;

use claimflow::corpus::expected::load_expected;
use claimflow::corpus::preview;
use claimflow::records::{Label, Outcome, TruthRecord};

use crate::common::project::Project;

pub(crate) fn copy_dir(from: &Path, to: &Path) {
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

/// The lines of a `truth.jsonl` by claim id.
fn truth_lines(text: &str) -> BTreeMap<String, &str> {
    text.lines()
        .map(|line| {
            let record: TruthRecord = serde_json::from_str(line).unwrap();
            (record.claim, line)
        })
        .collect()
}

fn summary(runs: &[claimflow::records::RunRecord]) -> String {
    let count = |outcome| runs.iter().filter(|run| run.outcome == outcome).count();
    format!(
        "{}P/{}F/{}U",
        count(Outcome::Passed),
        count(Outcome::Failed),
        count(Outcome::Unknown)
    )
}

/// Regression: the broken child's failing test is one the commit added, so a check of the kept
/// claims alone missed it and the child's artefact was labelled a flip.
#[test]
fn the_demo_corpus_gets_the_labels_its_script_documents() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/demo");
    let project = Project::new();
    copy_dir(&corpus, &project.path("corpus/demo"));
    project.file(
        "pipeline.yaml",
        r#"version: 1
name: demo
repos:
  - {name: demo, corpus: corpus/demo, branch: main, python: ["3.11"]}
steps:
  rank:   {uses: rank-commits, with: {top: 40, min_score: 0}}
  claims: {uses: mine-claims, needs: [rank]}
  truth:  {uses: oracle, needs: [claims], with: {runs: 10}}
  rank_kw:   {uses: rank-commits, with: {by: keywords, top: 40}}
  claims_kw: {uses: mine-claims, needs: [rank_kw]}
  truth_kw:  {uses: oracle, needs: [claims_kw], with: {runs: 10}}
  stats:
    uses: stats
    needs: [rank, truth, rank_kw, truth_kw]
    with: {bootstrap: 1000, seed: 1, rankings: [rank, rank_kw]}
"#,
    );
    project.ok(&["run", "pipeline.yaml", "-j", "2", "-q"]);

    let truth: BTreeMap<String, (TruthRecord, serde_json::Value)> = project
        .read("results/demo/truth.jsonl")
        .lines()
        .map(|line| {
            let record: TruthRecord = serde_json::from_str(line).unwrap();
            (
                record.claim.clone(),
                (record, serde_json::from_str(line).unwrap()),
            )
        })
        .collect();
    let expected = load_expected(&corpus.join("EXPECTED.md")).unwrap();
    let commits = preview(&corpus).unwrap();
    let parent_of: BTreeMap<&str, &str> = commits
        .windows(2)
        .map(|pair| (pair[1].name.as_str(), pair[0].id.as_str()))
        .collect();

    let mut lines = Vec::new();
    for claim in &expected.claims {
        let id = format!("demo@{}::{}", parent_of[claim.commit.as_str()], claim.node);
        let (record, raw) = truth
            .get(&id)
            .unwrap_or_else(|| panic!("no truth record for {id}"));
        assert_eq!(record.label, claim.label, "{id}: {:?}", record.reason);
        let line = if record.label == Label::Discarded {
            // Discarded claims may stop early (a flaky one at a random run): name the cause only.
            let cause = raw["cause"].as_str().unwrap_or("-");
            format!("{} {} discarded ({cause})", claim.commit, claim.node)
        } else {
            format!(
                "{} {} {:?} parent {} child {} {}",
                claim.commit,
                claim.node,
                record.label,
                summary(&record.parent_runs),
                summary(&record.child_runs),
                record
                    .child_runs
                    .first()
                    .and_then(|run| run.detail.clone())
                    .unwrap_or_default()
            )
        };
        lines.push(line);
    }
    assert_eq!(
        truth.len(),
        expected.claims.len(),
        "every mined claim is documented"
    );
    insta::assert_snapshot!(lines.join("\n"));

    let summary: serde_json::Value =
        serde_json::from_str(&project.read("results/demo/oracle_summary.json")).unwrap();
    assert_eq!(
        summary["broken_commits"].as_array().unwrap().len(),
        1,
        "{summary}"
    );

    // The keyword ranking's commits are ones the assertion ranking picked too: mined and labelled
    // under the same keys, so their labels are the first chain's, run for run, and its files sit
    // under its own step's name.
    let first_text = project.read("results/demo/truth.jsonl");
    let keyword_text = project.read("results/demo/truth_kw/truth.jsonl");
    let first = truth_lines(&first_text);
    let keyword = truth_lines(&keyword_text);
    assert!(!keyword.is_empty());
    for (claim, line) in &keyword {
        assert_eq!(first.get(claim), Some(line), "{claim}");
    }
    let stats: serde_json::Value =
        serde_json::from_str(&project.read("results/demo/stats.json")).unwrap();
    insta::assert_json_snapshot!("demo_rankings", stats["rankings"]);

    // A re-run runs no pytest at all.
    let again = project.ok(&["run", "pipeline.yaml"]);
    assert!(
        again.stderr.contains("run finished: 0 computed"),
        "{}",
        again.stderr
    );
}

/// The demo's labels (claim, label, cause) and the verdicts of the arms that read no model (claim,
/// verdict per arm step), pinned: a change to how steps are declared, parsed or executed must
/// leave every one of them as it was.
#[test]
fn the_demo_labels_and_static_verdicts_stay_as_pinned() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/demo");
    let project = Project::new();
    copy_dir(&corpus, &project.path("corpus/demo"));
    project.file(
        "pipeline.yaml",
        r#"version: 1
name: demo
repos:
  - {name: demo, corpus: corpus/demo, branch: main, split: dev, python: ["3.11"]}
steps:
  rank:   {uses: rank-commits, with: {by: assertion-deletions, top: 40, min_score: 0}}
  claims: {uses: mine-claims, needs: [rank]}
  truth:  {uses: oracle, needs: [claims], with: {runs: 10}}
  a0:     {uses: arm, needs: [claims], with: {arm: a0}}
  a1:     {uses: arm, needs: [claims], with: {arm: a1}}
  a3:     {uses: arm, needs: [claims], with: {arm: file-anchoring}}
  a4:     {uses: arm, needs: [claims], with: {arm: symbol-anchoring}}
  a4b:    {uses: arm, needs: [claims], with: {arm: testmon}}
  sample: {uses: stratify, needs: [truth], with: {split: dev, flip_rate: 0.25, seed: 1}}
  a4_sampled:  {uses: arm, needs: [claims, sample], with: {arm: symbol-anchoring}}
  shuffled:    {uses: shuffle, needs: [rank, claims], with: {seed: 1}}
  a3_shuffled: {uses: arm, needs: [claims, shuffled], with: {arm: file-anchoring}}
  a4_shuffled: {uses: arm, needs: [claims, shuffled], with: {arm: symbol-anchoring}}
"#,
    );
    project.ok(&["run", "pipeline.yaml", "-j", "2", "-q"]);

    let mut labels = Vec::new();
    for line in project.read("results/demo/truth.jsonl").lines() {
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        labels.push(format!(
            "{} {} {}",
            value["claim"].as_str().unwrap(),
            value["label"].as_str().unwrap(),
            value["cause"].as_str().unwrap_or("-")
        ));
    }
    labels.sort();
    let mut verdicts: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let arms = [
        "a0",
        "a1",
        "a3",
        "a4",
        "a4b",
        "a4_sampled",
        "a3_shuffled",
        "a4_shuffled",
    ];
    for arm in arms {
        for line in project
            .read(&format!("results/demo/predictions/{arm}.jsonl"))
            .lines()
        {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            verdicts
                .entry(value["claim"].as_str().unwrap().to_string())
                .or_default()
                .push(format!("{arm}={}", value["verdict"].as_str().unwrap()));
        }
    }
    let verdicts: Vec<String> = verdicts
        .into_iter()
        .map(|(claim, verdicts)| format!("{claim} {}", verdicts.join(" ")))
        .collect();
    insta::assert_snapshot!(format!(
        "# claim label cause\n{}\n\n# claim verdict per arm\n{}",
        labels.join("\n"),
        verdicts.join("\n")
    ));
}

/// Regression: a project whose path holds a `:` panicked on every pytest launch (`PYTHONPATH` was
/// joined with `expect`), and the run then hung instead of exiting. The shipped smoke pipeline, run
/// from a copy in a directory named with a colon, labels its claims and ends.
#[test]
fn a_colon_in_the_project_path_runs_the_smoke_pipeline() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let outer = tempfile::tempdir().unwrap();
    let project = Project::new_in(&outer.path().join("run:2"));
    assert!(project.root().to_string_lossy().contains(':'));
    copy_dir(&manifest.join("corpus/demo"), &project.path("corpus/demo"));
    std::fs::create_dir_all(project.path("pipelines")).unwrap();
    std::fs::copy(
        manifest.join("pipelines/smoke.yaml"),
        project.path("pipelines/smoke.yaml"),
    )
    .unwrap();
    let mut child = project
        .command(&["run", "pipelines/smoke.yaml", "-j", "2", "-q"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(900) {
            child.kill().unwrap();
            panic!("the smoke run did not end in 15 minutes");
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let ran = child.wait_with_output().unwrap();
    crate::common::assert_ran(&ran, "the smoke run from a path with a colon");
    let labels: Vec<Label> = project
        .read("results/smoke/truth.jsonl")
        .lines()
        .map(|line| serde_json::from_str::<TruthRecord>(line).unwrap().label)
        .collect();
    assert!(labels.contains(&Label::Flipped), "{labels:?}");
    assert!(labels.contains(&Label::Held), "{labels:?}");
}
