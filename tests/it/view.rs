//! The results page through the binary and in a real browser: a run of the demo corpus writes
//! `index.html` with every claim, every arm and the evidence of every verdict, the same bytes on
//! every re-run; `claimflow view` prints its path and compares two runs; headless Chromium loads
//! the page, applies a filter, opens a claim and shows what the data says, and hostile text in a
//! test's source or a commit message stays text. The screenshots of the overview and of a claim
//! page are kept under `results/view-demo/` (a CI artifact).
//!
//! The browser tests fail when `CI=true` and Chromium is missing; elsewhere they skip, saying why.

use std::path::{Path, PathBuf};
use std::process::Command;

use claimflow::view::compare::embedded;
use claimflow::view::page::{DATA_ID, TEXT_ID};

use crate::common::project::Project;

const PIPELINE: &str = r#"version: 1
name: demo
repos:
  - {name: demo, corpus: corpus/demo, branch: main, split: dev, python: ["3.11"]}
steps:
  rank:   {uses: rank-commits, with: {top: 3}}
  claims: {uses: mine-claims, needs: [rank]}
  truth:  {uses: oracle, needs: [claims], with: {runs: 10}}
  a0:     {uses: arm, needs: [claims], with: {arm: a0}}
  a3:     {uses: arm, needs: [claims], with: {arm: file-anchoring}}
  a4:     {uses: arm, needs: [claims], with: {arm: symbol-anchoring}}
  stats:  {uses: stats, needs: [truth, a0, a3, a4], with: {bootstrap: 200, seed: 1}}
  report: {uses: report, needs: [stats, rank, claims, truth, a0, a3, a4]}
"#;

/// Chromium, or None with the reason printed; a failure under CI, where it must be installed.
fn chromium() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|directory| directory.join("chromium"))
            .find(|path| path.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true and no `chromium` on PATH: the browser test must run (apt-get install chromium)"
        );
        eprintln!("skipped: no `chromium` on PATH to load the results page in");
    }
    found
}

/// Runs headless Chromium on `url` with `extra` arguments; its stdout.
fn browse(chromium: &Path, profile: &Path, url: &str, extra: &[&str]) -> String {
    let output = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=10000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .output()
        .expect("chromium starts");
    assert!(
        output.status.success(),
        "chromium {url}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `text` percent-encoded for a URL fragment.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (byte as char).to_string()
            }
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

fn file_url(path: &Path, fragment: &str) -> String {
    format!("file://{}#{fragment}", path.display())
}

fn lines_of<T: serde::de::DeserializeOwned>(text: &str) -> Vec<T> {
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn a_demo_run_writes_a_page_with_every_claim_and_verdict_the_same_bytes_every_time() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/demo");
    let project = Project::new();
    crate::demo::copy_dir(&corpus, &project.path("corpus/demo"));
    project.file("pipeline.yaml", PIPELINE);
    project.ok(&["run", "pipeline.yaml", "-j", "2", "-q"]);
    let page = project.read("results/demo/index.html");

    // Every claim, every arm, the evidence of every prediction.
    let index = embedded(&page, DATA_ID).unwrap();
    let text = embedded(&page, TEXT_ID).unwrap();
    let claims: Vec<claimflow::records::ClaimRecord> =
        lines_of(&project.read("results/demo/claims.jsonl"));
    assert!(!claims.is_empty());
    let ids: Vec<&str> = index["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|claim| claim[0].as_str().unwrap())
        .collect();
    let mut expected: Vec<&str> = claims.iter().map(|claim| claim.id.as_str()).collect();
    expected.sort_unstable();
    assert_eq!(ids, expected);
    let arms: Vec<&str> = index["arms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|arm| arm["step"].as_str().unwrap())
        .collect();
    assert_eq!(arms, ["a0", "a3", "a4"]);
    for (position, step) in arms.iter().enumerate() {
        let predictions: Vec<claimflow::records::PredictionRecord> =
            lines_of(&project.read(&format!("results/demo/predictions/{step}.jsonl")));
        let rows = index["arms"][position]["predictions"].as_array().unwrap();
        assert_eq!(rows.len(), predictions.len(), "{step}");
        for prediction in &predictions {
            let at = ids.iter().position(|id| *id == prediction.claim).unwrap();
            let row = rows.iter().find(|row| row[0] == at).unwrap();
            let evidence = &text["evidence"][row[1].as_u64().unwrap() as usize];
            assert_eq!(
                evidence, &prediction.evidence,
                "{step} {}",
                prediction.claim
            );
        }
    }
    // Each claim's commit has its source-only diff, and each claim its source.
    for (position, claim) in index["claims"].as_array().unwrap().iter().enumerate() {
        let commit = &index["commits"][claim[3].as_u64().unwrap() as usize];
        assert!(!commit[5].as_object().unwrap().is_empty(), "{commit}");
        assert!(text["sources"][position].is_string());
    }

    // Re-runs: from the cache, and rendered again, the same bytes.
    project.ok(&["run", "pipeline.yaml", "-q"]);
    assert!(
        project.read("results/demo/index.html") == page,
        "a re-run changed the page"
    );
    std::fs::remove_file(project.path("results/demo/index.html")).unwrap();
    project.ok(&["run", "pipeline.yaml", "-q", "--force", "report"]);
    assert!(
        project.read("results/demo/index.html") == page,
        "rendering again changed the page"
    );

    // `claimflow view` prints the page's path; two runs give a comparison page.
    let printed = project.ok(&["view", "pipeline.yaml"]).stdout;
    assert_eq!(printed.trim(), "results/demo/index.html");
    let compared = project
        .ok(&["view", "pipeline.yaml", "results/demo"])
        .stdout;
    let comparison = project.read(compared.trim());
    assert!(comparison.contains("a4: 0 changed"), "{comparison}");
    std::fs::create_dir_all(project.path("results/nothing")).unwrap();
    let missing = project.run(&["view", "results/nothing"]);
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    assert!(
        missing.stderr.contains("no results page"),
        "{}",
        missing.stderr
    );

    browse_the_demo(&project, &index);
}

/// Loads the demo's page in Chromium: a filter, a claim's page, two screenshots.
fn browse_the_demo(project: &Project, index: &serde_json::Value) {
    let Some(chromium) = chromium() else {
        return;
    };
    let page = project.path("results/demo/index.html");
    let profile = tempfile::tempdir().unwrap();
    let claims = index["claims"].as_array().unwrap();
    let a4 = index["arms"][2]["verdicts"].as_str().unwrap().as_bytes();

    // The confusion matrix's cell links filter the claims to that cell.
    let false_negatives = claims
        .iter()
        .enumerate()
        .filter(|(at, claim)| a4[*at] == b'h' && claim[4] == "f")
        .count();
    let dom = browse(
        &chromium,
        profile.path(),
        &file_url(&page, "claims?arm=a4&cell=fn"),
        &["--dump-dom"],
    );
    let summary = format!("{false_negatives} of {} claims", claims.len());
    assert!(dom.contains(&summary), "{summary} not in the explorer");
    assert!(dom.contains("id=\"claims-list\""));

    // A flipped claim's page: its test with the assertions marked, the diff, the runs, each arm.
    let flipped = claims
        .iter()
        .find(|claim| claim[4] == "f")
        .expect("the demo has a flip");
    let id = flipped[0].as_str().unwrap();
    let fragment = format!("claim/{}", encode(id));
    let dom = browse(
        &chromium,
        profile.path(),
        &file_url(&page, &fragment),
        &["--dump-dom"],
    );
    let node = flipped[1].as_str().unwrap();
    for shown in [
        node,
        "The test at the parent",
        "class=\"assert\"",
        "diff --git",
        "The oracle's runs",
        "Each arm's verdict and evidence",
        "flipped",
    ] {
        assert!(dom.contains(shown), "`{shown}` not on the claim's page");
    }
    for step in ["a0", "a3", "a4"] {
        assert!(
            dom.contains(&format!("<b>{step}</b>")),
            "{step} not on the claim's page"
        );
    }

    // Screenshots, kept as the CI's artifact.
    let kept = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/view-demo");
    std::fs::create_dir_all(kept.join("screenshots")).unwrap();
    for (name, fragment, size) in [
        ("overview", "overview", "1400,2000"),
        ("claim", fragment.as_str(), "1400,2400"),
    ] {
        let shot = kept.join(format!("screenshots/{name}.png"));
        browse(
            &chromium,
            profile.path(),
            &file_url(&page, fragment),
            &[
                &format!("--screenshot={}", shot.display()),
                &format!("--window-size={size}"),
            ],
        );
        let bytes = std::fs::read(&shot).unwrap();
        assert!(
            bytes.starts_with(b"\x89PNG"),
            "{} is not a PNG",
            shot.display()
        );
    }
    std::fs::copy(&page, kept.join("index.html")).unwrap();
}

#[test]
fn hostile_text_renders_as_text_in_the_browser() {
    let Some(chromium) = chromium() else {
        return;
    };
    let mut inputs = claimflow::view::synthetic::inputs(40, 10, 3);
    let hostile = "</script><h1 id=\"owned\">owned</h1><script>document.title='owned'</script>";
    inputs.claims[0].source = format!("def test_x():\n    assert '{hostile}'\n");
    inputs.claims[0].assertions = vec![format!("assert '{hostile}'")];
    inputs.commits[0].subject = format!("<img id=\"owned-img\" src=x> {hostile}");
    let id = inputs.claims[0].id.clone();
    for arm in &mut inputs.arms {
        for prediction in &mut arm.predictions {
            if prediction.claim == id {
                prediction.evidence = serde_json::json!({"answer": hostile});
            }
        }
    }
    let directory = tempfile::tempdir().unwrap();
    let page = directory.path().join("index.html");
    std::fs::write(&page, claimflow::view::render(&inputs)).unwrap();
    let profile = tempfile::tempdir().unwrap();
    let dom = browse(
        &chromium,
        profile.path(),
        &file_url(&page, &format!("claim/{}", encode(&id))),
        &["--dump-dom"],
    );
    assert!(!dom.contains("<h1 id=\"owned\""), "an element was injected");
    assert!(
        !dom.contains("<img id=\"owned-img\""),
        "an element was injected"
    );
    assert!(!dom.contains("<title>owned"), "a script ran");
    assert!(
        dom.contains("&lt;/script&gt;&lt;h1 id=\"owned\"&gt;owned&lt;/h1&gt;"),
        "the hostile source is not shown as text"
    );
    assert!(dom.contains("&lt;img id=\"owned-img\" src=x&gt;"));
}
