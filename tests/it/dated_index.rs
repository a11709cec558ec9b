//! Environments bounded by a commit's date (`releases: at-commit`): the dated index in front of a
//! fake upstream read by real pips, new and old, and a repository whose test passed only with
//! what was released at its commit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use claimflow::process::environment::ChildEnvironment;
use claimflow::python::{DatedIndex, IndexProblem, PageError, ReleaseCutoff};

use crate::common::project::Project;
use crate::environments::commit_versions;
use crate::models::fake_server::{FakeServer, Reply};

/// PEP 691's content type.
const JSON_PAGE: &str = "application/vnd.pypi.simple.v1+json";
/// The project the fake upstream serves.
const DEMO: &str = "claimflow-dated-demo";

/// Writes a pure-Python wheel of `claimflow-dated-demo` `version` into `directory` (with
/// Python's `zipfile`: the crate has no zip writer) and returns its path and sha256.
fn build_wheel(directory: &Path, version: &str) -> (PathBuf, String) {
    const SCRIPT: &str = r#"
import base64, hashlib, sys, zipfile
directory, version = sys.argv[1], sys.argv[2]
dist_info = "claimflow_dated_demo-%s.dist-info" % version
files = {
    "claimflow_dated_demo/__init__.py": "__version__ = %r\n" % version,
    dist_info + "/METADATA": "Metadata-Version: 2.1\nName: claimflow-dated-demo\nVersion: %s\n" % version,
    dist_info + "/WHEEL": "Wheel-Version: 1.0\nGenerator: claimflow-tests\nRoot-Is-Purelib: true\nTag: py2-none-any\nTag: py3-none-any\n",
}
record = []
for name, text in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
    record.append("%s,sha256=%s,%d" % (name, digest, len(text.encode())))
record.append(dist_info + "/RECORD,,")
files[dist_info + "/RECORD"] = "\n".join(record) + "\n"
path = "%s/claimflow_dated_demo-%s-py2.py3-none-any.whl" % (directory, version)
with zipfile.ZipFile(path, "w") as wheel:
    for name, text in files.items():
        wheel.writestr(name, text)
print(path)
print(hashlib.sha256(open(path, "rb").read()).hexdigest())
"#;
    let python = claimflow::python::interpreter_for("3.11").expect("python 3.11 is installed");
    let output = Command::new(&python.path)
        .args(["-c", SCRIPT])
        .arg(directory)
        .arg(version)
        .output()
        .unwrap();
    crate::common::assert_ran(&output, "the wheel builder");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let mut lines = stdout.lines();
    let path = PathBuf::from(lines.next().unwrap());
    (path, lines.next().unwrap().to_string())
}

/// A fake upstream index: `claimflow-dated-demo` 1.0 uploaded in 2019 and 2.0 in 2021 (files on
/// disk, linked as `file://`), and `claimflow-undated-demo` whose file has no upload time.
fn fake_upstream(directory: &Path) -> FakeServer {
    let file = |version: &str, uploaded: Option<&str>| {
        let (path, sha256) = build_wheel(directory, version);
        let mut file = serde_json::json!({
            "filename": path.file_name().unwrap().to_str().unwrap(),
            "url": format!("file://{}", path.display()),
            "hashes": {"sha256": sha256},
            "requires-python": null,
            "yanked": false,
        });
        if let Some(uploaded) = uploaded {
            file["upload-time"] = uploaded.into();
        }
        file
    };
    let dated = serde_json::json!({
        "meta": {"api-version": "1.1"},
        "name": DEMO,
        "files": [
            file("1.0", Some("2019-01-01T00:00:00.000000Z")),
            file("2.0", Some("2021-01-01T00:00:00.000000Z")),
        ],
    })
    .to_string();
    let undated = serde_json::json!({
        "meta": {"api-version": "1.0"},
        "name": "claimflow-undated-demo",
        "files": [file("3.0", None)],
    })
    .to_string();
    FakeServer::start(move |_, request| {
        let body = match request.path.as_str() {
            "/simple/claimflow-dated-demo/" => &dated,
            "/simple/claimflow-undated-demo/" => &undated,
            _ => return Reply::status(404, "not found"),
        };
        Reply {
            headers: vec![("content-type".into(), JSON_PAGE.into())],
            ..Reply::status(200, body)
        }
    })
}

/// A venv of python `version` in `directory`.
fn venv(directory: &Path, version: &str) -> PathBuf {
    let python = claimflow::python::interpreter_for(version)
        .unwrap_or_else(|| panic!("python {version} is installed"));
    let root = directory.join(format!("venv-{version}"));
    let output = Command::new(&python.path)
        .args(["-m", "venv"])
        .arg(&root)
        .output()
        .unwrap();
    crate::common::assert_ran(&output, "python -m venv");
    root.join("bin/python")
}

/// `pip install <requirement>` from the one index at `index`, as claimflow's installer environment
/// keeps pip to it; the output, and whether pip succeeded.
fn pip_install(python: &Path, index: &str, requirement: &str) -> (bool, String) {
    let mut command = Command::new(python);
    command
        .args(["-m", "pip", "install", "--no-cache-dir", "--upgrade"])
        .args(["--index-url", index, requirement]);
    ChildEnvironment::scrubbed()
        .installer(None)
        .only_index(index)
        .apply(&mut command);
    let output = command.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

/// The installed `claimflow_dated_demo.__version__`.
fn installed_version(python: &Path) -> String {
    let output = Command::new(python)
        .args([
            "-c",
            "import claimflow_dated_demo as d; print(d.__version__)",
        ])
        .output()
        .unwrap();
    crate::common::assert_ran(&output, "the import");
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

/// pip given the dated index installs the release that was out at the cutoff (1.0 in 2020), the
/// newer one when the cutoff is later; given the upstream itself, the newest. pip 18 (Python
/// 3.6's) reads the same pages.
#[test]
fn pip_installs_what_was_released_before_the_cutoff() {
    let directory = tempfile::tempdir().unwrap();
    let upstream = fake_upstream(directory.path());
    let index = DatedIndex::start(&upstream.url("/simple/")).unwrap();
    // 2020-01-01 and 2022-01-01.
    let in_2020 = index.index_url(ReleaseCutoff::from_seconds(1_577_836_800));
    let in_2022 = index.index_url(ReleaseCutoff::from_seconds(1_640_995_200));

    let python = venv(directory.path(), "3.11");
    let (installed, output) = pip_install(&python, &in_2020, DEMO);
    assert!(installed, "{output}");
    assert_eq!(installed_version(&python), "1.0", "{output}");
    let (installed, output) = pip_install(&python, &in_2022, DEMO);
    assert!(installed, "{output}");
    assert_eq!(installed_version(&python), "2.0", "{output}");

    // Without a cutoff: the upstream itself (pip 23 reads its JSON), whose newest is 2.0.
    let fresh = venv(&directory.path().join("unbounded"), "3.11");
    let (installed, output) = pip_install(&fresh, &upstream.url("/simple/"), DEMO);
    assert!(installed, "{output}");
    assert_eq!(installed_version(&fresh), "2.0", "{output}");

    let old = venv(directory.path(), "3.6");
    let (installed, output) = pip_install(&old, &in_2020, DEMO);
    assert!(installed, "{output}");
    assert_eq!(installed_version(&old), "1.0", "{output}");
}

/// A project whose upstream page gives no upload time is not offered unbounded: pip finds
/// nothing, and the index keeps the reason the builder reports.
#[test]
fn an_index_without_upload_times_is_refused_not_offered_unbounded() {
    let directory = tempfile::tempdir().unwrap();
    let upstream = fake_upstream(directory.path());
    let index = DatedIndex::start(&upstream.url("/simple/")).unwrap();
    let python = venv(directory.path(), "3.11");
    let url = index.index_url(ReleaseCutoff::from_seconds(1_577_836_800));
    let (installed, output) = pip_install(&python, &url, "claimflow-undated-demo");
    assert!(!installed, "{output}");
    assert_eq!(
        index.problem("claimflow-undated-demo"),
        Some(IndexProblem::Undated(PageError::Undated {
            project: "claimflow-undated-demo".into(),
            filename: "claimflow_dated_demo-3.0-py2.py3-none-any.whl".into(),
        }))
    );
    assert_eq!(index.problem(DEMO), None);
}

/// A test dated 2019-06-01 that asserts the `six` of its day (1.12.0, from December 2018; 1.13.0
/// came in November 2019), which the project declares unpinned, as arrow declared `dateparser`
/// without the `regex` under it. `rank -> claims -> truth` through the binary, the repository
/// carrying `releases: <releases>` (`None`: the key left out), with a cache of its own;
/// truth.jsonl's lines and the descriptions of the environments built.
fn label_six(releases: Option<&str>) -> (Vec<serde_json::Value>, Vec<serde_json::Value>) {
    const SOURCE: &str = "def add(a, b):\n    return a + b\n";
    const TEST: &str = "import six\nfrom demo import add\n\n\ndef test_add():\n    \
                        assert six.__version__ == \"1.12.0\"\n    assert add(1, 2) == 3\n    \
                        assert add(2, 2) == 4\n";
    let child_source = SOURCE.replace("a + b", "a + b + 1");
    let child_test = TEST
        .replace("== 3", "== 4")
        .replace("    assert add(2, 2) == 4\n", "");
    fn version<'a>(source: &'a str, test: &'a str) -> BTreeMap<&'a str, &'a str> {
        BTreeMap::from([
            ("demo/__init__.py", source),
            ("tests/__init__.py", ""),
            ("tests/test_demo.py", test),
            ("test-requirements.txt", "six\n"),
        ])
    }
    let repository = tempfile::tempdir().unwrap();
    commit_versions(
        repository.path(),
        1_559_347_200,
        &[version(SOURCE, TEST), version(&child_source, &child_test)],
    );
    let project = Project::new();
    let releases = releases.map_or(String::new(), |value| format!("    releases: {value}\n"));
    project.file(
        "pipeline.yaml",
        &format!(
            "version: 1\nname: six\nrepos:\n  - name: demo\n    path: {}\n    branch: main\n    \
             python: [\"3.6\"]\n{releases}steps:\n  rank: {{uses: rank-commits}}\n  \
             claims: {{uses: mine-claims, needs: [rank]}}\n  \
             truth: {{uses: oracle, needs: [claims], with: {{runs: 2}}}}\n",
            repository.path().display()
        ),
    );
    let cache = tempfile::tempdir().unwrap();
    let output = project
        .command(&["run", "pipeline.yaml"])
        .env("CLAIMFLOW_CACHE_DIR", cache.path())
        .output()
        .unwrap();
    crate::common::assert_ran(&output, "the run");
    let truth = project
        .read("results/six/truth.jsonl")
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let environments = std::fs::read_dir(cache.path().join("envs"))
        .unwrap()
        .flatten()
        .filter_map(|entry| std::fs::read(entry.path().join("claimflow-environment.json")).ok())
        .map(|bytes| serde_json::from_slice(&bytes).unwrap())
        .collect();
    (truth, environments)
}

/// Regression (arrow c856ab9dad and 34213790eb, 2 claims discarded): a test that passed at its
/// commit failed at the parent on a dependency released years later, which the project never
/// pinned. With `releases: at-commit` the environment holds what was released at the parent's
/// date, the test passes there and its flip is labelled; with the newest releases it is discarded.
#[test]
fn a_test_of_its_day_passes_at_the_parent_with_the_releases_of_its_day() {
    let (truth, environments) = label_six(Some("at-commit"));
    assert_eq!(truth.len(), 1, "{truth:?}");
    assert_eq!(truth[0]["label"], "flipped", "{truth:?}");
    // One environment, for mining and the oracle alike (the child adds no requirement).
    assert_eq!(environments.len(), 1, "{environments:?}");
    let environment = &environments[0];
    assert_eq!(
        environment["distributions"]["six"], "1.12.0",
        "{environment}"
    );
    assert_eq!(
        environment["released_before"]["cutoff"], "2019-06-01T00:00:00Z",
        "{environment}"
    );
    // Every atomicwrites file was uploaded again in July 2022: offered whole, and said so.
    assert_eq!(
        environment["released_before"]["undated"],
        serde_json::json!(["atomicwrites"]),
        "{environment}"
    );

    let (truth, environments) = label_six(None);
    assert_eq!(truth.len(), 1, "{truth:?}");
    assert_eq!(truth[0]["label"], "discarded", "{truth:?}");
    assert_eq!(truth[0]["cause"], "not_passing_at_parent", "{truth:?}");
    assert_eq!(environments[0].get("released_before"), None);
}
