//! `claimflow check`: a fixture repository whose second commit makes `parse_url` return a dict,
//! and claims about it decided by each stage of the cascade: execution (a check command, a test
//! by node id with the parent's test file restored, a test by source), A4 clearance of claims
//! whose anchors the commit did not touch, and the model arm at a scripted fake server (whose
//! requests are counted: only the claims the static stages left reach it, and a second run asks
//! nothing).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use claimflow::check::claim::{Anchor, MemoryClaim, SourceFormat, SourceSpan, Stage, Verdict};
use claimflow::check::model_stage::ModelSettings;
use claimflow::check::range::Range;
use claimflow::check::{CheckOptions, check_claims};
use claimflow::steps::FixedEnvironment;
use serde_json::Value;

use crate::common::git::FixtureRepo;
use crate::common::project::{Project, Ran};
use crate::models::fake_server::{FakeServer, Reply};
use crate::models::{KEY, answer};

const URLS: &str = "\
DEFAULT_SCHEME = \"http\"


def parse_url(url):
    scheme, rest = url.split(\"://\", 1)
    host, _, path = rest.partition(\"/\")
    return (scheme, host, \"/\" + path)


def join_url(scheme, host, path):
    return scheme + \"://\" + host + path
";

const URLS_AFTER: &str = "\
DEFAULT_SCHEME = \"http\"


def parse_url(url):
    scheme, rest = url.split(\"://\", 1)
    host, _, path = rest.partition(\"/\")
    return {\"scheme\": scheme, \"host\": host, \"path\": \"/\" + path}


def join_url(scheme, host, path):
    return scheme + \"://\" + host + path
";

const STACK: &str = "\
class Stack:
    def __init__(self):
        self.items = []

    def push(self, item):
        self.items.append(item)

    def pop(self):
        return self.items.pop()
";

const TEST_URLS: &str = "\
from pkg.urls import parse_url


def test_parse_url_returns_a_tuple():
    assert parse_url(\"http://a/b\") == (\"http\", \"a\", \"/b\")
";

/// The commit's own edit of the test: restored from the parent before the claim's test runs.
const TEST_URLS_AFTER: &str = "\
from pkg.urls import parse_url


def test_parse_url_returns_a_tuple():
    assert parse_url(\"http://a/b\")[\"host\"] == \"a\"
";

/// The claims file: (id, JSON line). Each is decided by the stage its comment names.
const CLAIMS: &[&str] = &[
    // exec, by a check command: flipped.
    r#"{"id": "check-tuple", "text": "parse_url builds a tuple", "check": "grep -q 'return (scheme' pkg/urls.py"}"#,
    // exec, by a check command: held.
    r#"{"id": "check-join", "text": "there is a join_url helper", "check": "grep -q 'def join_url' pkg/urls.py"}"#,
    // a4: the anchor's definition did not change: held, no call.
    r#"{"id": "stack-pop", "text": "Stack.pop returns the last pushed item", "anchors": ["pkg/stack.py::Stack.pop"]}"#,
    // a4: a file anchor the commit did not touch: held.
    r#"{"id": "readme-file", "text": "the README names the package", "anchors": ["README.md"]}"#,
    // a4 sees the anchor touched and passes it on; the model says flipped.
    r#"{"id": "url-anchored", "text": "parse_url returns a (scheme, host, path) tuple", "anchors": ["pkg/urls.py::parse_url"]}"#,
    // no anchors: the model says held.
    r#"{"id": "loose", "text": "the default scheme is http"}"#,
];

/// The fixture: the repository (claims file untracked in its directory) at two commits.
fn repository() -> FixtureRepo {
    let mut repo = FixtureRepo::new();
    repo.commit(
        "Add urls and a stack",
        &[
            ("README.md", Some("# pkg\n")),
            ("pkg/__init__.py", Some("")),
            ("pkg/urls.py", Some(URLS)),
            ("pkg/stack.py", Some(STACK)),
            ("tests/test_urls.py", Some(TEST_URLS)),
        ],
    )
    .commit(
        "parse_url returns a dict",
        &[
            ("pkg/urls.py", Some(URLS_AFTER)),
            ("tests/test_urls.py", Some(TEST_URLS_AFTER)),
        ],
    );
    std::fs::write(repo.path().join("claims.jsonl"), CLAIMS.join("\n") + "\n").unwrap();
    repo
}

/// A fake OpenAI-compatible server: `flipped` for claims about parse_url's tuple, `held` else.
fn judge() -> FakeServer {
    FakeServer::start(|_, request| {
        let flipped = request.body.contains("(scheme, host, path) tuple");
        let verdict = if flipped { "flipped" } else { "held" };
        Reply::json(answer(
            claimflow::pipeline::Provider::Openai,
            &format!("{{\"verdict\": \"{verdict}\"}}"),
        ))
    })
}

/// A project with a pipeline whose `models:` asks `server`.
fn project(server: &FakeServer) -> Project {
    let project = Project::new();
    project.file(
        "models.yaml",
        &format!(
            "version: 1\nname: check-models\nworkdir: .claimflow\nmodels:\n  judge: {{provider: openai, model: test-model, base_url: \"{}\", api_key_env: CLAIMFLOW_IT_CHECK_KEY, retries: 0, price_per_mtok: {{input: 0.25, output: 1.0}}}}\nsteps:\n  noop: {{uses: command, with: {{run: \"true\"}}}}\n",
            server.url("/v1")
        ),
    );
    project
}

fn run_check(project: &Project, repo: &FixtureRepo, extra: &[&str]) -> Ran {
    let claims = repo.path().join("claims.jsonl").display().to_string();
    check_in(project, repo, project.path("."), extra, &[&claims])
}

/// `claimflow check` on `repo` from `directory`, asking the models of the project's
/// `models.yaml`, with `extra` flags and the claim `sources`.
fn check_in(
    project: &Project,
    repo: &FixtureRepo,
    directory: impl AsRef<Path>,
    extra: &[&str],
    sources: &[&str],
) -> Ran {
    let repo_dir = repo.path().display().to_string();
    let pipeline = project.path("models.yaml").display().to_string();
    let mut args = vec!["check", "--repo", &repo_dir, "--pipeline", &pipeline];
    args.extend_from_slice(extra);
    args.extend_from_slice(sources);
    let output = project
        .command(&args)
        .current_dir(directory.as_ref())
        .env("CLAIMFLOW_IT_CHECK_KEY", KEY)
        .env("CLAIMFLOW_CACHE_DIR", project.path("cache"))
        .output()
        .expect("claimflow runs");
    Ran {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// The results by claim id: (verdict, decided_by).
fn verdicts(stdout: &str) -> Vec<(String, String, String)> {
    stdout
        .lines()
        .map(|line| {
            let value: Value =
                serde_json::from_str(line).unwrap_or_else(|error| panic!("{line}: {error}"));
            (
                value["id"].as_str().unwrap().to_string(),
                value["verdict"].as_str().unwrap().to_string(),
                value["decided_by"].as_str().unwrap_or("-").to_string(),
            )
        })
        .collect()
}

fn expected() -> Vec<(String, String, String)> {
    [
        ("check-tuple", "flipped", "exec"),
        ("check-join", "held", "exec"),
        ("stack-pop", "held", "a4"),
        ("readme-file", "held", "a4"),
        ("url-anchored", "flipped", "a6_risk"),
        ("loose", "held", "a6_risk"),
    ]
    .iter()
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
    .collect()
}

#[test]
fn each_stage_decides_its_claims_and_a_flip_exits_1() {
    let repo = repository();
    let server = judge();
    let project = project(&server);
    let ran = run_check(&project, &repo, &[]);
    assert_eq!(ran.code, 1, "{}\n{}", ran.stdout, ran.stderr);
    assert_eq!(verdicts(&ran.stdout), expected(), "{}", ran.stderr);
    // Only the two claims the static stages left reached the model.
    assert_eq!(server.count(), 2, "{}", ran.stderr);
    for request in server.requests() {
        assert!(
            !request.body.contains("tests/test_urls.py"),
            "a test file was shown: {}",
            request.body
        );
        assert!(
            request.body.contains("pkg/urls.py"),
            "the source diff is shown"
        );
    }
    let first: Value = serde_json::from_str(ran.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(first["source"], "claims.jsonl:1");
    assert!(
        first["evidence"].as_str().unwrap().contains("exited 1"),
        "{first}"
    );
    let modelled: Value = serde_json::from_str(ran.stdout.lines().nth(4).unwrap()).unwrap();
    assert!(modelled["tokens_in"].as_u64().unwrap() > 0, "{modelled}");
    assert!(modelled["cost"].as_f64().unwrap() > 0.0, "{modelled}");
    assert!(
        ran.stderr.contains("6 claims: 2 flipped, 4 held"),
        "{}",
        ran.stderr
    );

    // The same check again: every answer is cached, nothing is asked.
    let again = run_check(&project, &repo, &[]);
    assert_eq!(verdicts(&again.stdout), expected(), "{}", again.stderr);
    assert_eq!(server.count(), 2, "a repeated check asked the model again");
}

/// A project under a directory named with `:` (the separator of `PYTHONPATH`): the check
/// commands run in a checkout under it, and every stage decides as anywhere else.
#[test]
fn a_project_under_a_directory_named_with_a_colon_checks_its_claims() {
    let repo = repository();
    let server = judge();
    let parent = tempfile::tempdir().unwrap();
    let project = {
        let project = Project::new_in(&parent.path().join("team:memories"));
        project.file(
            "models.yaml",
            &std::fs::read_to_string(self::project(&server).path("models.yaml")).unwrap(),
        );
        project
    };
    let ran = run_check(&project, &repo, &[]);
    assert_eq!(ran.code, 1, "{}\n{}", ran.stdout, ran.stderr);
    assert_eq!(verdicts(&ran.stdout), expected(), "{}", ran.stderr);
}

#[test]
fn offline_answers_only_from_the_cache() {
    let repo = repository();
    let server = judge();
    let project = project(&server);
    let ran = run_check(&project, &repo, &["--offline"]);
    assert_eq!(server.count(), 0);
    let results = verdicts(&ran.stdout);
    let model_claims: Vec<_> = results
        .iter()
        .filter(|(id, ..)| id == "url-anchored" || id == "loose")
        .collect();
    for (_, verdict, stage) in &model_claims {
        assert_eq!(
            (verdict.as_str(), stage.as_str()),
            ("none", "-"),
            "{}",
            ran.stdout
        );
    }
    assert!(
        ran.stdout.contains("offline, and no cached answer"),
        "{}",
        ran.stdout
    );
    // Exec still flipped one claim.
    assert_eq!(ran.code, 1);

    run_check(&project, &repo, &[]);
    assert_eq!(server.count(), 2);
    let cached = run_check(&project, &repo, &["--offline"]);
    assert_eq!(verdicts(&cached.stdout), expected(), "{}", cached.stderr);
    assert_eq!(server.count(), 2);
}

#[test]
fn nothing_flipped_exits_0() {
    let repo = repository();
    let server = judge();
    let project = project(&server);
    // The range from the second commit to itself changes nothing: every anchored claim is held.
    let head = repo.head().to_string();
    let ran = run_check(
        &project,
        &repo,
        &["--from", &head, "--to", &head, "--arm", "a4"],
    );
    // Claims without anchors have no verdict (a4 alone cannot tell), and none is a flip.
    assert_eq!(ran.code, 0, "{}\n{}", ran.stdout, ran.stderr);
    assert_eq!(server.count(), 0);
}

#[test]
fn the_github_format_annotates_the_memory_files_lines_and_summarises() {
    let repo = repository();
    let server = judge();
    let project = project(&server);
    let summary = project.path("summary.md");
    let repo_dir = repo.path().display().to_string();
    let claims = repo.path().join("claims.jsonl").display().to_string();
    let output = project
        .command(&[
            "check",
            "--repo",
            &repo_dir,
            "--pipeline",
            "models.yaml",
            "--format",
            "github",
            &claims,
        ])
        .env("CLAIMFLOW_IT_CHECK_KEY", KEY)
        .env("CLAIMFLOW_CACHE_DIR", project.path("cache"))
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let annotations: Vec<&str> = stdout.lines().collect();
    assert_eq!(annotations.len(), 2, "{stdout}");
    let lines: Vec<u32> = annotations
        .iter()
        .map(|line| {
            let rest = line
                .strip_prefix("::warning file=claims.jsonl,line=")
                .unwrap_or_else(|| panic!("{line}"));
            rest.split(',').next().unwrap().parse().unwrap()
        })
        .collect();
    assert_eq!(lines, vec![1, 5]);
    let markdown = std::fs::read_to_string(&summary).unwrap();
    assert!(
        markdown.starts_with("### claimflow check: 2 of 6 claims falsified"),
        "{markdown}"
    );
    assert!(
        markdown.contains("| **flipped** | parse\\_url builds a tuple | `claims.jsonl:1` | exec |"),
        "{markdown}"
    );
}

#[test]
fn the_sarif_format_is_a_sarif_log_with_a_result_per_flip() {
    let repo = repository();
    let server = judge();
    let project = project(&server);
    let ran = run_check(&project, &repo, &["--format", "sarif"]);
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    let log: Value = serde_json::from_str(&ran.stdout).expect("SARIF is JSON");
    assert_eq!(log["version"], "2.1.0");
    let run = &log["runs"][0];
    let rules: Vec<&str> = run["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|rule| rule["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        rules,
        vec!["claimflow/exec", "claimflow/a4", "claimflow/a6_risk"]
    );
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    let location = &results[1]["locations"][0]["physicalLocation"];
    assert_eq!(location["artifactLocation"]["uri"], "claims.jsonl");
    assert_eq!(location["region"]["startLine"], 5);
    assert_eq!(results[1]["ruleId"], "claimflow/a6_risk");
    assert_eq!(
        results[1]["partialFingerprints"]["claimflowClaimId/v1"],
        "url-anchored"
    );
}

#[test]
fn a_directory_that_is_no_repository_is_an_input_error() {
    let project = Project::new();
    project.file("claims.jsonl", &format!("{}\n", CLAIMS[0]));
    let ran = project.run(&["check", "--repo", ".", "claims.jsonl"]);
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("is not inside a git repository"),
        "{}",
        ran.stderr
    );

    let ran = project.run(&["check", "--repo", "no-such-dir", "claims.jsonl"]);
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("cannot read the directory"),
        "{}",
        ran.stderr
    );
}

#[test]
fn a_bad_revision_or_a_bad_claim_line_is_an_input_error() {
    let repo = repository();
    let server = judge();
    let project = project(&server);
    let ran = run_check(&project, &repo, &["--to", "no-such-branch"]);
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("--to no-such-branch: not a commit"),
        "{}",
        ran.stderr
    );

    std::fs::write(
        repo.path().join("claims.jsonl"),
        format!("{}\n{{\"txt\": 1}}\n", CLAIMS[0]),
    )
    .unwrap();
    let ran = run_check(&project, &repo, &[]);
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    assert!(ran.stderr.contains("claims.jsonl:2"), "{}", ran.stderr);
    let ran = run_check(&project, &repo, &["--cascade", "exec,a9"]);
    assert_eq!(ran.code, 2, "{}", ran.stderr);
}

fn claim(id: &str, test: &str) -> MemoryClaim {
    MemoryClaim {
        id: id.into(),
        text: format!("claim {id}"),
        source: SourceSpan {
            file: "claims.jsonl".into(),
            line: 1,
        },
        format: SourceFormat::Jsonl,
        anchors: vec![Anchor::File {
            path: "pkg/urls.py".into(),
        }],
        test: Some(test.into()),
        check: None,
        record_key: None,
        origin: None,
    }
}

#[test]
fn a_claims_test_runs_at_the_ranges_end_with_the_parents_test_file_restored() {
    let repo = repository();
    let commits = repo.commits().to_vec();
    let range = Range::open(
        repo.path(),
        &commits[0].to_string(),
        &commits[1].to_string(),
    )
    .unwrap();
    let workdir = tempfile::tempdir().unwrap();
    let options = CheckOptions {
        repo: repo.path_buf(),
        from: None,
        to: None,
        stages: vec![Stage::Exec],
        sources: Vec::new(),
        source_format: None,
        discover: false,
        write: false,
        max_memory_file_size: claimflow::check::memory_file::DEFAULT_MAX_SIZE,
        model: ModelSettings::default(),
        workdir: Some(workdir.path().to_path_buf()),
        timeout: Duration::from_secs(120),
    };
    let claims = [
        // The parent's version of the test (restored) fails against the new parse_url.
        claim("node", "tests/test_urls.py::test_parse_url_returns_a_tuple"),
        // A test given as source: join_url did not change.
        claim(
            "source",
            "from pkg.urls import join_url\n\ndef test_join():\n    assert join_url('http', 'a', '/b') == 'http://a/b'\n",
        ),
        claim("missing", "tests/test_urls.py::test_no_such_test"),
    ];
    let environment = crate::oracle::python::environment();
    let outcome = check_claims(
        &options,
        &range,
        &claims,
        Arc::new(FixedEnvironment(environment)),
    )
    .unwrap();
    let got: Vec<(Verdict, Option<Stage>)> = outcome
        .results
        .iter()
        .map(|result| (result.verdict, result.decided_by.clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            (Verdict::Flipped, Some(Stage::Exec)),
            (Verdict::Held, Some(Stage::Exec)),
            (Verdict::None, None),
        ],
        "{:#?}",
        outcome.results
    );
    assert!(
        outcome.results[0]
            .evidence
            .contains("failed at the range's end (assertion)"),
        "{}",
        outcome.results[0].evidence
    );
    assert!(
        outcome.results[2]
            .evidence
            .starts_with("exec: tests/test_urls.py::test_no_such_test gave no verdict"),
        "{}",
        outcome.results[2].evidence
    );
    assert!(
        !Path::new(&workdir.path().join("exec"))
            .read_dir()
            .unwrap()
            .any(|_| true),
        "the checkout is removed"
    );
}

fn anchored(id: &str, anchors: Vec<Anchor>) -> MemoryClaim {
    MemoryClaim {
        anchors,
        test: None,
        ..claim(id, "")
    }
}

fn symbol(path: &str, name: &str) -> Anchor {
    Anchor::Symbol {
        path: path.into(),
        name: name.into(),
    }
}

#[test]
fn a4_clears_only_what_it_can_see_untouched() {
    let repo = repository();
    let commits = repo.commits().to_vec();
    let range = Range::open(
        repo.path(),
        &commits[0].to_string(),
        &commits[1].to_string(),
    )
    .unwrap();
    let options = CheckOptions {
        repo: repo.path_buf(),
        from: None,
        to: None,
        stages: vec![Stage::A4],
        sources: Vec::new(),
        source_format: None,
        discover: false,
        write: false,
        max_memory_file_size: claimflow::check::memory_file::DEFAULT_MAX_SIZE,
        model: ModelSettings::default(),
        workdir: Some(tempfile::tempdir().unwrap().path().to_path_buf()),
        timeout: Duration::from_secs(10),
    };
    let claims = [
        // A name without its file, defined in an untouched class.
        anchored("name-only", vec![symbol("", "push")]),
        // A name without its file, whose definition changed.
        anchored("name-touched", vec![symbol("", "parse_url")]),
        // A class anchor is touched by a change to any of its members; Stack's did not change.
        anchored("class", vec![symbol("pkg/stack.py", "Stack")]),
        // A constant of the touched file whose own text did not change.
        anchored("constant", vec![symbol("pkg/urls.py", "DEFAULT_SCHEME")]),
        // Nothing at the range's end is called so: it cannot clear the claim.
        anchored("dangling", vec![symbol("pkg/urls.py", "split_url")]),
        anchored(
            "no-file",
            vec![Anchor::File {
                path: "docs/guide.md".into(),
            }],
        ),
        // A glob matching the touched module.
        anchored(
            "glob",
            vec![Anchor::File {
                path: "pkg/*.py".into(),
            }],
        ),
        // One untouched and one touched anchor: passed on.
        anchored(
            "mixed",
            vec![
                symbol("pkg/stack.py", "Stack.pop"),
                symbol("pkg/urls.py", "parse_url"),
            ],
        ),
    ];
    let outcome = check_claims(
        &options,
        &range,
        &claims,
        Arc::new(FixedEnvironment(crate::oracle::python::environment())),
    )
    .unwrap();
    let got: Vec<(&str, Verdict)> = outcome
        .results
        .iter()
        .map(|result| (result.id.as_str(), result.verdict))
        .collect();
    assert_eq!(
        got,
        vec![
            ("name-only", Verdict::Held),
            ("name-touched", Verdict::None),
            ("class", Verdict::Held),
            ("constant", Verdict::Held),
            ("dangling", Verdict::None),
            ("no-file", Verdict::None),
            ("glob", Verdict::None),
            ("mixed", Verdict::None),
        ],
        "{:#?}",
        outcome.results
    );
    assert!(
        outcome.results[4]
            .evidence
            .contains("not defined at the range's end"),
        "{}",
        outcome.results[4].evidence
    );
    assert!(
        outcome.results[1].evidence.contains("changed parse_url"),
        "{}",
        outcome.results[1].evidence
    );
}

#[test]
fn an_answer_without_a_verdict_is_no_verdict() {
    let repo = repository();
    let server = FakeServer::start(|_, _| {
        Reply::json(answer(
            claimflow::pipeline::Provider::Openai,
            "It depends on the caller.",
        ))
    });
    let project = project(&server);
    let ran = run_check(&project, &repo, &[]);
    let results = verdicts(&ran.stdout);
    let asked: Vec<_> = results
        .iter()
        .filter(|(id, ..)| id == "url-anchored" || id == "loose")
        .collect();
    assert_eq!(asked.len(), 2);
    for (_, verdict, stage) in asked {
        assert_eq!(
            (verdict.as_str(), stage.as_str()),
            ("none", "-"),
            "{}",
            ran.stdout
        );
    }
    assert!(
        ran.stdout.contains("answer gave no verdict"),
        "{}",
        ran.stdout
    );
    // The check command's flip is still a flip.
    assert_eq!(ran.code, 1);
}

#[test]
fn calibration_prints_the_measured_cascade_and_refuses_stats_without_one() {
    let repo = repository();
    let server = judge();
    let project = project(&server);
    project.file(
        "stats.json",
        r#"{"arms": {"a4": {"step": {"strategy": "a4"}, "claims": 6, "precision": 0.5},
                     "cascade": {"step": {"strategy": "cascade"}, "claims": 6, "precision": 0.75,
                                 "precision_ci": [0.5, 1.0], "recall": 0.6, "coverage": 1.0,
                                 "cost": {"per_claim": 0.00012}}}}"#,
    );
    let ran = run_check(
        &project,
        &repo,
        &["--arm", "a4", "--calibration", "stats.json"],
    );
    assert!(
        ran.stderr.contains("arm `cascade`, 6 claims): precision 0.750 (95% CI 0.500–1.000), recall 0.600, coverage 1.000, cost per claim $0.000120"),
        "{}",
        ran.stderr
    );
    project.file(
        "other.json",
        r#"{"arms": {"a4": {"step": {"strategy": "a4"}}}}"#,
    );
    let ran = run_check(&project, &repo, &["--calibration", "other.json"]);
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("no arm of strategy `cascade`"),
        "{}",
        ran.stderr
    );
}

#[test]
fn write_marks_the_flipped_claims_in_their_file_once_and_deletes_nothing() {
    let repo = repository();
    let server = judge();
    let project = project(&server);
    let claims = repo.path().join("claims.jsonl");
    let before = std::fs::read_to_string(&claims).unwrap();
    let ran = run_check(&project, &repo, &["--write"]);
    assert_eq!(ran.code, 1, "{}\n{}", ran.stdout, ran.stderr);
    assert!(
        ran.stderr.contains("marked 2 flipped claims in 1 files"),
        "{}",
        ran.stderr
    );
    let after = std::fs::read_to_string(&claims).unwrap();
    let marked: Vec<Value> = after
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(
        marked.len(),
        before.lines().count(),
        "no record was deleted"
    );
    let invalidated: Vec<&str> = marked
        .iter()
        .filter(|record| record.get("invalidated_by").is_some())
        .map(|record| record["id"].as_str().unwrap())
        .collect();
    assert_eq!(invalidated, ["check-tuple", "url-anchored"], "{after}");
    let head = git2::Repository::open(repo.path())
        .unwrap()
        .head()
        .unwrap()
        .target()
        .unwrap()
        .to_string();
    assert!(marked.iter().all(|record| {
        record
            .get("invalidated_by")
            .is_none_or(|by| by == head.as_str())
    }));
    // Unmarked records are byte for byte what they were.
    for (old, new) in before.lines().zip(after.lines()) {
        let record: Value = serde_json::from_str(new).unwrap();
        if record.get("invalidated_by").is_none() {
            assert_eq!(old, new);
        }
    }
    // A second write of the same range changes nothing.
    let again = run_check(&project, &repo, &["--write"]);
    assert_eq!(again.code, 1, "{}", again.stderr);
    assert!(
        again.stderr.contains("(2 already marked)"),
        "{}",
        again.stderr
    );
    assert_eq!(std::fs::read_to_string(&claims).unwrap(), after);
}

/// The fixture of every memory-file kind (CLAUDE.md, a Cursor rule, Copilot JSON, JSON Lines),
/// then a commit that makes `parse_url` return a dict.
fn memory_files_repository() -> FixtureRepo {
    let mut repo = crate::check_sources::fixture_repository();
    let parse = std::fs::read_to_string(repo.path().join("src/urlkit/parse.py")).unwrap();
    let returns_a_dict = parse.replace(
        "return Url(scheme, host.lower(), \"/\" + path)",
        "return {\"scheme\": scheme, \"host\": host.lower(), \"path\": \"/\" + path}",
    );
    assert_ne!(
        parse, returns_a_dict,
        "the fixture's parse_url changed its shape"
    );
    repo.commit(
        "parse_url returns a dict",
        &[("src/urlkit/parse.py", Some(returns_a_dict.as_str()))],
    );
    repo.checkout();
    repo
}

#[test]
fn memory_files_of_every_kind_go_through_the_cascade_and_write_marks_markdown_once() {
    let repo = memory_files_repository();
    let server = FakeServer::start(|_, request| {
        let flipped = request.body.contains("tuple of scheme, host and path");
        let verdict = if flipped { "flipped" } else { "held" };
        Reply::json(answer(
            claimflow::pipeline::Provider::Openai,
            &format!("{{\"verdict\": \"{verdict}\"}}"),
        ))
    });
    let project = project(&server);
    let check = |extra: &[&str]| {
        let mut flags = vec!["--cascade", "a4,a6_risk", "--discover"];
        flags.extend_from_slice(extra);
        check_in(
            &project,
            &repo,
            repo.path(),
            &flags,
            &["memory.json", "claims.jsonl"],
        )
    };
    let ran = check(&[]);
    assert_eq!(ran.code, 1, "{}\n{}", ran.stdout, ran.stderr);
    let results: Vec<Value> = ran
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let at = |source: &str| {
        results
            .iter()
            .find(|result| result["source"] == source)
            .unwrap_or_else(|| panic!("no claim at {source}: {}", ran.stdout))
    };
    // Every kind of file was read.
    for file in [
        "CLAUDE.md:",
        ".cursor/rules/python.mdc:",
        "memory.json:",
        "claims.jsonl:",
    ] {
        assert!(
            results
                .iter()
                .any(|result| result["source"].as_str().unwrap().starts_with(file)),
            "nothing read from {file}: {}",
            ran.stdout
        );
    }
    // The claim the commit falsified, decided by the model; claims whose anchors the commit
    // left alone cleared by A4 without a call.
    assert_eq!(at("CLAUDE.md:7")["verdict"], "flipped");
    assert_eq!(at("CLAUDE.md:7")["decided_by"], "a6_risk");
    assert_eq!(at("CLAUDE.md:8")["verdict"], "held");
    assert_eq!(at("CLAUDE.md:8")["decided_by"], "a4");
    assert_eq!(at("claims.jsonl:2")["decided_by"], "a4");
    let flipped = results
        .iter()
        .filter(|result| result["verdict"] == "flipped")
        .count();
    assert_eq!(flipped, 1, "{}", ran.stdout);
    let asked = server.count();
    assert!(asked < results.len(), "A4 cleared nothing: {asked} calls");

    // --write marks the Markdown item after its line; a second write changes nothing; the
    // change to the file is additions only.
    let written = check(&["--write"]);
    assert_eq!(written.code, 1, "{}", written.stderr);
    assert_eq!(
        server.count(),
        asked,
        "a repeated check asked the model again"
    );
    let memory = std::fs::read_to_string(repo.path().join("CLAUDE.md")).unwrap();
    let lines: Vec<&str> = memory.lines().collect();
    assert!(
        lines[6].contains("`parse_url()` returns a `Url` tuple"),
        "{memory}"
    );
    assert!(
        lines[7]
            .trim_start()
            .starts_with("<!-- claimflow: false since "),
        "{memory}"
    );
    assert_eq!(memory.matches("<!-- claimflow:").count(), 1, "{memory}");
    let again = check(&["--write"]);
    assert_eq!(again.code, 1, "{}", again.stderr);
    assert_eq!(
        std::fs::read_to_string(repo.path().join("CLAUDE.md")).unwrap(),
        memory
    );
    let diff = std::process::Command::new("git")
        .args(["diff", "--numstat", "--", "CLAUDE.md"])
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&diff.stdout).trim(),
        "1\t0\tCLAUDE.md"
    );
}

/// A source diff over the paper's 12,000-character cut: the cut diff reaches the model, marked,
/// and the claim gets the model's verdict. The guard used to read the cut's own marker as "not a
/// diff line" and refuse every such call, silently: the claim got `none` and the exit was 0.
#[test]
fn a_diff_over_the_cut_reaches_the_model_instead_of_tripping_the_guard_on_its_marker() {
    let mut repo = FixtureRepo::new();
    let big: String = (0..600)
        .map(|index| format!("VALUE_{index:04} = {index}  # a constant of the table\n"))
        .collect();
    assert!(big.len() > 20_000);
    repo.commit(
        "Add urls",
        &[("pkg/__init__.py", Some("")), ("pkg/urls.py", Some(URLS))],
    )
    .commit(
        "parse_url returns a dict, and a big table",
        &[
            ("pkg/urls.py", Some(URLS_AFTER)),
            ("pkg/table.py", Some(&big)),
        ],
    );
    std::fs::write(
        repo.path().join("claims.jsonl"),
        r#"{"id": "loose", "text": "the default scheme is http"}"#.to_string() + "\n",
    )
    .unwrap();
    let server = judge();
    let project = project(&server);
    let ran = run_check(&project, &repo, &[]);
    assert_eq!(
        verdicts(&ran.stdout),
        [(
            "loose".to_string(),
            "held".to_string(),
            "a6_risk".to_string()
        )],
        "{}\n{}",
        ran.stdout,
        ran.stderr
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let user = requests[0].json()["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    let marker = user
        .lines()
        .find(|line| line.starts_with("[diff truncated: 12000 of "))
        .unwrap_or_else(|| panic!("no cut marker in the message:\n{user}"));
    assert!(marker.ends_with(" characters shown]"), "{marker}");
}
