//! The paper's shipped pipelines (`pipelines/dev.yaml`, `heldout.yaml`, `post-cutoff.yaml`) hold
//! what issue #14 promises a user: public repositories on named branches, every arm and every
//! control, a stratified 25% sample, replicates of the held-out model arms, stats and the report. Checked
//! on the loaded pipeline against the real step kinds (planning would clone the repositories), and
//! through the binary with and without the hosted model's key set.

use std::collections::BTreeSet;
use std::path::Path;

use claimflow::pipeline::{Pipeline, RepoSource, Role};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn load(file: &str) -> Pipeline {
    claimflow::pipeline::load(
        Path::new(file),
        root(),
        &claimflow::steps::Registry::builtin(),
    )
    .unwrap_or_else(|diagnostics| panic!("{file}: {diagnostics}"))
}

/// The names of the repositories, each checked to be a public URL on a named branch.
fn public_repositories(pipeline: &Pipeline) -> BTreeSet<String> {
    pipeline
        .repos
        .iter()
        .map(|repository| {
            let RepoSource::Url(url) = &repository.source else {
                panic!(
                    "{}: repository `{}` is not a public URL: {:?}",
                    pipeline.file.display(),
                    repository.name,
                    repository.source
                );
            };
            assert!(url.starts_with("https://"), "{}: {url}", repository.name);
            assert!(
                !repository.branch.is_empty() && repository.branch != "HEAD",
                "{}: branch {:?}",
                repository.name,
                repository.branch
            );
            repository.name.clone()
        })
        .collect()
}

/// Step names whose role is one of `wanted`.
fn steps_with(pipeline: &Pipeline, wanted: fn(&Role) -> bool) -> Vec<&str> {
    pipeline
        .steps
        .iter()
        .filter(|step| wanted(&step.role))
        .map(|step| step.name.as_str())
        .collect()
}

/// The strategies the arm steps judge with, and the controls: (which control, the strategy of the
/// arm step it is a control of).
fn arms_and_controls(pipeline: &Pipeline) -> (BTreeSet<String>, BTreeSet<(String, String)>) {
    let mut strategies = BTreeSet::new();
    let mut controls = BTreeSet::new();
    for step in &pipeline.steps {
        match &step.role {
            Role::Predictions { strategy, .. } => {
                strategies.insert(strategy.clone());
            }
            Role::Control { of, control, .. } => {
                let twin = pipeline
                    .step(of)
                    .unwrap_or_else(|| panic!("control `{}` has no twin: {of}", step.name));
                let strategy = twin.role.strategy().expect("a control's twin is an arm");
                controls.insert((control.clone(), strategy.to_string()));
            }
            _ => {}
        }
    }
    (strategies, controls)
}

/// What every paper pipeline has, whatever its repositories: every arm, both controls over a
/// static arm and over A6-risk, the rename class, a post-cutoff split, a sample at 25% flips
/// judged by the model arms, stats over every scored step and the report.
fn check_the_papers_dag(pipeline: &Pipeline) {
    let file = pipeline.file.display().to_string();
    let (strategies, controls) = arms_and_controls(pipeline);
    for arm in [
        "a0", "a1", "a3", "a4", "a4b", "a5", "a5c", "a6_base", "a6_risk", "prose",
    ] {
        assert!(
            strategies.contains(arm),
            "{file}: no arm {arm}: {strategies:?}"
        );
    }
    for control in [
        ("shuffled-diff", "a4"),
        ("shuffled-diff", "a6_risk"),
        ("paraphrase", "a4"),
        ("paraphrase", "a6_risk"),
    ] {
        assert!(
            controls.contains(&(control.0.to_string(), control.1.to_string())),
            "{file}: no {control:?} control: {controls:?}"
        );
    }
    assert_eq!(
        steps_with(pipeline, |role| *role == Role::RenameClass).len(),
        1,
        "{file}"
    );
    let split = steps_with(pipeline, |role| *role == Role::LabelSplit);
    assert_eq!(split.len(), 1, "{file}: {split:?}");
    // The split reads its date from the judge model's `cutoff:`, not from a second copy of it.
    let split = pipeline.step(split[0]).unwrap();
    let model = split.with["model"]
        .as_str()
        .unwrap_or_else(|| panic!("{file}: the split names no model: {}", split.with));
    assert!(split.with.get("date").is_none(), "{file}: {}", split.with);
    assert_eq!(
        pipeline.models[model].cutoff.as_deref(),
        Some("2024-05-31"),
        "{file}: {model}"
    );

    let samples = steps_with(pipeline, |role| *role == Role::LabelSample);
    assert_eq!(samples.len(), 1, "{file}: {samples:?}");
    let sample = pipeline.step(samples[0]).unwrap();
    assert_eq!(sample.with["flip_rate"], 0.25, "{file}");
    assert!(
        sample.with.get("size").is_none(),
        "{file}: a sample of every flip"
    );
    for step in &pipeline.steps {
        if step.role.model().is_some() {
            assert!(
                step.needs.contains(&sample.name),
                "{file}: model arm `{}` judges more than the sample",
                step.name
            );
        }
    }

    let stats = steps_with(pipeline, |role| *role == Role::Stats);
    assert_eq!(stats, ["stats"], "{file}");
    let stats = pipeline.step("stats").unwrap();
    for step in &pipeline.steps {
        if step.role.is_scored() || step.role.is_selection() || step.role.control().is_some() {
            assert!(
                stats.needs.contains(&step.name),
                "{file}: stats does not read `{}`",
                step.name
            );
        }
    }
    let report = pipeline.step("report").expect("a report step");
    assert_eq!(report.role, Role::Report, "{file}");
    // The report reads the statistics, and the results page shows the claims, the labels and
    // every arm's verdicts: it needs each step they come from.
    assert_eq!(report.needs[0], "stats", "{file}");
    for step in &pipeline.steps {
        let shown = step.role.is_scored() || matches!(step.role, Role::Claims | Role::Labels);
        if shown {
            assert!(
                report.needs.contains(&step.name),
                "{file}: the results page does not show `{}`",
                step.name
            );
        }
    }
}

/// The held-out split: at least eight public libraries besides the development pair, every arm and
/// control, the stratified sample, stats and the report.
#[test]
fn heldout_yaml_is_the_papers_held_out_split() {
    let pipeline = load("pipelines/heldout.yaml");
    let repositories = public_repositories(&pipeline);
    let others: Vec<_> = repositories
        .iter()
        .filter(|name| !["boltons", "arrow"].contains(&name.as_str()))
        .collect();
    assert!(others.len() >= 8, "{repositories:?}");
    assert!(
        pipeline
            .repos
            .iter()
            .all(|repository| repository.split.as_deref() == Some("heldout"))
    );
    for largest in ["cachetools", "more-itertools"] {
        assert!(repositories.contains(largest), "{repositories:?}");
    }
    check_the_papers_dag(&pipeline);
    let sample = pipeline.step("sample").unwrap();
    assert_eq!(sample.with["split"], "heldout");
    // Run-to-run variance: every model arm that is no control asks each call again, so the report
    // has the agreement the controls' agreement is read against.
    for step in &pipeline.steps {
        if let Role::Predictions {
            strategy,
            model: Some(_),
        } = &step.role
            && strategy != "prose"
        {
            let replicates = step.with["replicates"].as_u64().unwrap_or(1);
            assert!(replicates >= 2, "`{}` asks each call once", step.name);
        }
    }
}

/// The development split: boltons and arrow, the same DAG.
#[test]
fn dev_yaml_is_the_papers_development_split() {
    let pipeline = load("pipelines/dev.yaml");
    let repositories = public_repositories(&pipeline);
    assert_eq!(
        repositories,
        BTreeSet::from(["arrow".to_string(), "boltons".to_string()])
    );
    assert!(
        pipeline
            .repos
            .iter()
            .all(|repository| repository.split.as_deref() == Some("dev"))
    );
    check_the_papers_dag(&pipeline);
}

/// The post-cutoff split samples the claims after the cutoff.
#[test]
fn post_cutoff_yaml_samples_the_claims_after_the_models_training_cutoff() {
    let pipeline = load("pipelines/post-cutoff.yaml");
    public_repositories(&pipeline);
    check_the_papers_dag(&pipeline);
    let split = steps_with(&pipeline, |role| *role == Role::LabelSplit);
    assert_eq!(pipeline.step("sample").unwrap().needs, split);
}

/// Each paper pipeline loads through the binary with the hosted model's key set and without it
/// (the local model stands in, said once): `claimflow graph` loads and validates, clones nothing.
#[test]
fn the_paper_pipelines_load_with_and_without_the_hosted_models_key() {
    for file in [
        "pipelines/dev.yaml",
        "pipelines/heldout.yaml",
        "pipelines/post-cutoff.yaml",
    ] {
        for key in [None, Some("sk-shipped-test-not-a-key")] {
            let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_claimflow"));
            command
                .args(["-C", &root().display().to_string(), "graph", file])
                .env_remove("OPENAI_API_KEY");
            if let Some(key) = key {
                command.env("OPENAI_API_KEY", key);
            }
            let ran = command.output().unwrap();
            let stderr = String::from_utf8_lossy(&ran.stderr);
            assert!(ran.status.success(), "{file} (key {key:?}): {stderr}");
            let stdout = String::from_utf8_lossy(&ran.stdout);
            assert!(stdout.contains("a6_risk"), "{file}: {stdout}");
        }
    }
}
