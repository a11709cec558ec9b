//! The pipeline DSL: bad pipelines report every problem with its place and a hint; good ones load
//! into the pipeline the engine runs, and render as graphs.

use std::path::{Path, PathBuf};

use std::sync::Arc;

use claimflow::engine::{
    Dag, ItemPlan, ItemResult, ModelName, ParamsDecl, ProjectFile, StepContext, StepError,
    StepKind, StepName, Upstream,
};
use claimflow::pipeline::{Pipeline, load, load_str};
use claimflow::steps::Registry;

/// The step kinds claimflow ships: every loader snapshot is taken against them.
fn registry() -> Registry {
    Registry::builtin()
}

/// A kind whose parameters name a prompt file, a model and another step: the loader's checks of
/// references, whichever kind declares them.
struct Ask;

/// The parameters of [`Ask`].
#[derive(Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct AskParams {
    /// The prompt template.
    #[serde(default)]
    prompt: Option<ProjectFile>,
    /// A `models:` entry.
    #[serde(default)]
    model: Option<ModelName>,
    /// The arm this step wraps.
    #[serde(default)]
    arm: Option<StepName>,
}

impl StepKind for Ask {
    fn name(&self) -> &'static str {
        "ask"
    }
    fn version(&self) -> u32 {
        1
    }
    fn about(&self) -> &'static str {
        "a kind with reference parameters, for loader tests"
    }
    fn params(&self) -> ParamsDecl {
        ParamsDecl::of::<AskParams>()
    }
    fn items(&self, _: &StepContext, _: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        Ok(Vec::new())
    }
    fn publish(&self, _: &StepContext, _: &[ItemResult]) -> Result<(), StepError> {
        Ok(())
    }
}

/// The project root the test pipelines resolve their paths against.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pipelines")
}

/// The path of a test pipeline as a user would name it: relative to the project root.
fn relative(path: &Path) -> PathBuf {
    path.strip_prefix(root())
        .expect("test pipelines live under the root")
        .to_path_buf()
}

fn load_good(file: &str, registry: &Registry) -> Pipeline {
    load(Path::new(file), &root(), registry).unwrap_or_else(|problems| panic!("{problems}"))
}

/// The pipeline as JSON, with the machine-specific root written as `[ROOT]`.
fn portable(pipeline: &Pipeline) -> String {
    let root = root();
    serde_json::to_string_pretty(pipeline)
        .expect("a pipeline serializes")
        .replace(root.to_str().expect("a UTF-8 root"), "[ROOT]")
}

#[test]
fn bad_pipelines_report_every_problem() {
    insta::glob!("../pipelines/bad", "*.yaml", |path| {
        let problems =
            load(&relative(path), &root(), &registry()).expect_err("a bad pipeline must not load");
        insta::assert_snapshot!(problems.to_string());
    });
}

#[test]
fn bad_references_report_every_problem() {
    let mut kinds: Vec<Arc<dyn StepKind>> = vec![Arc::new(Ask)];
    let builtin = Registry::builtin();
    kinds.extend(
        builtin
            .names()
            .into_iter()
            .filter_map(|name| builtin.get(name)),
    );
    let registry = Registry::with(kinds);
    insta::glob!("../pipelines/references", "*.yaml", |path| {
        let problems =
            load(&relative(path), &root(), &registry).expect_err("a bad pipeline must not load");
        insta::assert_snapshot!(problems.to_string());
    });
}

#[test]
fn good_pipelines_load() {
    insta::glob!("../pipelines/good", "*.yaml", |path| {
        let pipeline = load(&relative(path), &root(), &registry())
            .unwrap_or_else(|problems| panic!("{problems}"));
        insta::assert_snapshot!(portable(&pipeline));
    });
}

#[test]
fn every_bad_pipeline_problem_is_in_file_order_with_a_hint() {
    insta::glob!("../pipelines/bad", "*.yaml", |path| {
        let problems = load(&relative(path), &root(), &registry()).unwrap_err();
        let places: Vec<_> = problems
            .0
            .iter()
            .map(|problem| (problem.line, problem.column))
            .collect();
        let mut sorted = places.clone();
        sorted.sort_unstable();
        assert_eq!(places, sorted, "{}", path.display());
        for problem in &problems.0 {
            assert!(problem.hint.is_some(), "no hint for: {problem}");
        }
    });
}

#[test]
fn several_problems_are_reported_together() {
    let problems = load(Path::new("bad/several_problems.yaml"), &root(), &registry()).unwrap_err();
    assert!(problems.0.len() >= 8, "{problems}");
}

#[test]
fn a_key_that_looks_like_a_secret_is_never_echoed() {
    let problems = load(Path::new("bad/api_key_literal.yaml"), &root(), &registry()).unwrap_err();
    let text = problems.to_string();
    assert!(!text.contains("Zq3v8XkR2mN7pL4tY9wB1cD6fH0jK5sA"), "{text}");
    assert!(!text.contains("my key"), "{text}");
}

#[test]
fn with_becomes_sorted_json_and_lines_point_at_step_names() {
    let pipeline = load_good("good/paper.yaml", &registry());
    let a4 = pipeline.step("a4").unwrap();
    assert_eq!(a4.line, 39);
    assert_eq!(
        serde_json::to_string(&a4.with).unwrap(),
        r#"{"arm":"symbol-anchoring","transitive":false}"#
    );
    let stats = pipeline.step("stats").unwrap();
    assert_eq!(stats.with["bootstrap"], serde_json::json!(10000));
    assert!(stats.with["bootstrap"].is_i64());
}

#[test]
fn relative_paths_resolve_against_the_root_and_absolute_ones_stay() {
    let commands = load_good("good/commands.yaml", &registry());
    assert_eq!(
        commands.workdir,
        PathBuf::from("/tmp/claimflow-absolute-workdir")
    );
    assert_eq!(commands.results, root().join("out/commands"));
    let minimal = load_good("good/minimal.yaml", &registry());
    assert_eq!(minimal.workdir, root().join(".claimflow"));
    assert_eq!(minimal.results, root().join("results/minimal"));
}

#[test]
fn load_str_reads_text_as_if_from_the_named_file() {
    let problems = load_str(
        "version: 1\nname: inline\nsteps:\n  a: {uses: command}\n",
        Path::new("pipelines/inline.yaml"),
        &root(),
        &registry(),
    )
    .unwrap_err();
    insta::assert_snapshot!(problems.to_string(), @r"
    pipelines/inline.yaml:4:3: error: step `a` (`command`) is missing the required parameter `run`
      hint: add `run:` under `with:`: the command, run by `sh -c` in the project root
    1 problem found
    ");
}

#[test]
fn a_missing_pipeline_file_is_a_problem_not_a_panic() {
    let problems = load(Path::new("good/absent.yaml"), &root(), &registry()).unwrap_err();
    assert_eq!(problems.0.len(), 1);
    assert!(
        problems.0[0]
            .message
            .starts_with("cannot read the pipeline")
    );
}

#[test]
fn the_paper_pipeline_orders_and_renders() {
    let pipeline = load_good("good/paper.yaml", &registry());
    let dag = Dag::new(&pipeline).unwrap();
    assert_eq!(
        dag.topological(),
        [
            "rank", "claims", "truth", "a3", "a4", "a4b", "stats", "report"
        ]
    );
    assert_eq!(dag.dependents("a4").unwrap(), ["stats", "report"]);
    assert_eq!(dag.ancestors("a4").unwrap(), ["rank", "claims"]);
    insta::assert_snapshot!("paper_dot", dag.dot());
    insta::assert_snapshot!("paper_mermaid", dag.mermaid());
}

#[test]
fn declaration_order_breaks_ties_not_dependency_order() {
    let pipeline = load_good("good/commands.yaml", &registry());
    let dag = Dag::new(&pipeline).unwrap();
    assert_eq!(dag.topological(), ["gen", "shout", "count", "each"]);
    insta::assert_snapshot!("commands_dot", dag.dot());
    insta::assert_snapshot!("commands_mermaid", dag.mermaid());
}

#[test]
fn the_builtin_registry_loads_a_pipeline_of_command_steps() {
    let pipeline = load_good("good/commands.yaml", &Registry::builtin());
    assert_eq!(pipeline.steps.len(), 4);
    assert!(pipeline.steps.iter().all(|step| step.uses == "command"));
}

#[test]
fn a_byte_order_mark_is_not_part_of_the_first_key() {
    let pipeline = load_str(
        "\u{feff}version: 1\nname: bom\nsteps:\n  a: {uses: command, with: {run: \"true\"}}\n",
        Path::new("bom.yaml"),
        &root(),
        &registry(),
    )
    .unwrap_or_else(|problems| panic!("{problems}"));
    assert_eq!(pipeline.version, 1);
}

/// A repository `path:` under an absolute directory this machine does not have.
fn is_missing_local_clone(diagnostic: &claimflow::pipeline::Diagnostic) -> bool {
    matches!(
        &diagnostic.kind,
        claimflow::pipeline::DiagnosticKind::MissingDirectory(path) if path.is_absolute()
    )
}

/// Every pipeline the project ships (`pipelines/` and `pipelines/real/`) loads with the builtin
/// step kinds, its commit lists included, and the paper's pipelines are among them.
#[test]
fn every_shipped_pipeline_loads() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let registry = claimflow::steps::Registry::builtin();
    let mut loaded = Vec::new();
    for directory in ["pipelines", "pipelines/real"] {
        for entry in std::fs::read_dir(root.join(directory)).unwrap() {
            let path = entry.unwrap().path();
            if path
                .extension()
                .is_some_and(|extension| extension == "yaml")
            {
                let relative = path.strip_prefix(root).unwrap();
                if let Err(diagnostics) = claimflow::pipeline::load(relative, root, &registry) {
                    // The real-repository pipelines read local clones by absolute path: on a
                    // machine without them, the only problem may be those directories.
                    let elsewhere: Vec<_> = diagnostics
                        .0
                        .iter()
                        .filter(|diagnostic| !is_missing_local_clone(diagnostic))
                        .collect();
                    assert!(elsewhere.is_empty(), "{diagnostics}");
                }
                loaded.push(relative.display().to_string());
            }
        }
    }
    for expected in [
        "pipelines/demo.yaml",
        "pipelines/smoke.yaml",
        "pipelines/dev.yaml",
        "pipelines/heldout.yaml",
        "pipelines/post-cutoff.yaml",
        "pipelines/real/dev.yaml",
        "pipelines/real/heldout.yaml",
    ] {
        assert!(
            loaded.iter().any(|path| path == expected),
            "{expected} not loaded: {loaded:?}"
        );
    }
}

/// Out-of-range numbers, an empty `foreach`, a URL that is none and an unknown repository setting
/// stop `claimflow run` before anything runs: exit 2, each problem at its place, no workdir made.
#[test]
fn bad_parameters_stop_a_run_before_anything_runs() {
    let cases = [
        ("oracle_runs_negative.yaml", "5:38"),
        ("oracle_runs_zero.yaml", "5:38"),
        ("rank_top_zero.yaml", "5:42"),
        ("stats_bootstrap_too_few.yaml", "5:42"),
        ("command_foreach_empty.yaml", "5:61"),
        ("repo_url_not_a_url.yaml", "5:29"),
        ("repo_unknown_setting.yaml", "8:5"),
        ("stratify_flip_rate_above_one.yaml", "5:46"),
        ("llm_arm_replicates_zero.yaml", "7:104"),
        ("cutoff_date_malformed.yaml", "5:37"),
    ];
    for (file, place) in cases {
        let project = crate::common::project::Project::new();
        let text = std::fs::read_to_string(root().join("bad").join(file)).unwrap();
        project.file("pipeline.yaml", &text);
        let ran = project.run(&["run", "pipeline.yaml"]);
        assert_eq!(ran.code, 2, "{file}: {}", ran.stderr);
        assert!(
            ran.stderr
                .contains(&format!("pipeline.yaml:{place}: error")),
            "{file}: {}",
            ran.stderr
        );
        let entries: Vec<_> = std::fs::read_dir(project.root())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(
            entries,
            ["pipeline.yaml"],
            "{file}: the workdir was touched"
        );
    }
}

/// `claimflow schema` describes every kind's `with:` from the same structs the loader checks.
#[test]
fn schema_describes_each_kinds_parameters_with_their_ranges() {
    let project = crate::common::project::Project::new();
    let ran = project.ok(&["schema"]);
    let schema: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    let kinds = schema["properties"]["steps"]["additionalProperties"]["oneOf"]
        .as_array()
        .unwrap();
    let oracle = kinds
        .iter()
        .find(|kind| kind["title"] == "oracle")
        .expect("the oracle is described");
    let runs = &oracle["properties"]["with"]["properties"]["runs"];
    assert_eq!(runs["minimum"], 1, "{runs}");
    assert_eq!(runs["default"], 10, "{runs}");
    assert_eq!(kinds.len(), registry().names().len());
    // The sections are described too, with their ranges and help.
    let model = &schema["properties"]["models"]["additionalProperties"]["properties"];
    assert_eq!(model["retries"]["maximum"], 20, "{model}");
    assert!(
        model["provider"].to_string().contains("llama-server"),
        "{model}"
    );
    let repository = &schema["properties"]["repos"]["items"];
    assert_eq!(
        repository["required"],
        serde_json::json!(["name", "branch"])
    );
    let releases = repository["properties"]["releases"].to_string();
    assert!(
        releases.contains("\"newest\"") && releases.contains("\"at-commit\""),
        "{releases}"
    );
    assert!(releases.contains("committer time"), "{releases}");
    let executor = &schema["properties"]["executor"]["anyOf"][0]["properties"];
    assert_eq!(executor["cpus"]["minimum"], 1, "{executor}");
}
