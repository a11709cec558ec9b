//! Confinement, proved with a canary secret and canary paths for each kind of process that runs
//! code claimflow did not write: a mined test (through the oracle), the build script of a package
//! an environment installs, and a memory file's `check` command. claimflow runs with the secret in
//! its own environment (as it holds an API key); each process searches every `/proc/*/environ` it
//! can open for it, and tries to write outside its checkout: into a directory of the machine and
//! into the user's working tree (the project claimflow runs in). Each passes only when it found
//! nothing and wrote nothing, and the canary paths must not exist afterwards.
//!
//! Where the kernel refuses the namespaces the checks cannot hold; `claimflow doctor` says so, and
//! these tests then require it to say so (under `CI` the machine must confine).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::git::FixtureRepo;
use crate::common::project::Project;

const SECRET: &str = "sk-canary-0d9e4b7f2a61";

/// Python that looks for the secret everywhere in `/proc` and tries each write of `targets`; it
/// defines `LEAKED` (the files the secret was read from) and `WROTE` (the targets written).
fn snoop(targets: &[PathBuf]) -> String {
    format!(
        r#"import glob
SECRET = {SECRET:?}
TARGETS = {targets:?}
LEAKED = []
for path in glob.glob("/proc/*/environ") + glob.glob("/proc/*/task/*/environ"):
    try:
        with open(path, "rb") as handle:
            if SECRET.encode() in handle.read():
                LEAKED.append(path)
    except Exception:
        pass
WROTE = []
for target in TARGETS:
    try:
        with open(target, "a") as handle:
            handle.write("canary")
        WROTE.append(target)
    except Exception:
        pass
"#,
        targets = targets
            .iter()
            .map(|path| path.display().to_string())
            .collect::<Vec<_>>()
    )
}

/// Whether this machine must confine: util-linux's `unshare` makes the namespaces, or CI is set.
fn confinement_expected() -> bool {
    std::env::var_os("CI").is_some()
        || Command::new("unshare")
            .args([
                "--user",
                "--map-current-user",
                "--mount",
                "--pid",
                "--fork",
                "true",
            ])
            .status()
            .is_ok_and(|status| status.success())
}

/// The canary paths outside a project: a file in a directory of the machine, and one in the
/// user's working tree.
fn canaries(outside: &Path, project: &Project, label: &str) -> Vec<PathBuf> {
    vec![
        outside.join(format!("{label}-machine")),
        project.path(&format!("{label}-working-tree")),
    ]
}

/// A source distribution in `directory` whose `setup.py` snoops while pip builds it and records
/// what it saw in the module it installs, `claimflow_canary_build`.
fn canary_package(directory: &Path, targets: &[PathBuf]) {
    let source = directory.join("claimflow_canary_build-1.0");
    std::fs::create_dir_all(&source).unwrap();
    let setup = format!(
        "{}\nwith open('claimflow_canary_build.py', 'w') as module:\n    \
         module.write('LEAKED = %r\\nWROTE = %r\\n' % (LEAKED, WROTE))\n\
         from setuptools import setup\n\
         setup(name='claimflow-canary-build', version='1.0', py_modules=['claimflow_canary_build'])\n",
        snoop(targets)
    );
    std::fs::write(source.join("setup.py"), setup).unwrap();
    std::fs::write(
        source.join("PKG-INFO"),
        "Metadata-Version: 1.1\nName: claimflow-canary-build\nVersion: 1.0\n",
    )
    .unwrap();
    let packed = Command::new("tar")
        .current_dir(directory)
        .args([
            "czf",
            "claimflow_canary_build-1.0.tar.gz",
            "claimflow_canary_build-1.0",
        ])
        .status()
        .unwrap();
    assert!(packed.success());
    std::fs::remove_dir_all(&source).unwrap();
}

#[test]
fn mined_tests_and_the_build_scripts_of_their_environment_read_no_secret_and_write_nothing_outside()
{
    if !confinement_expected() {
        eprintln!("this machine refuses namespaces: nothing to prove");
        return;
    }
    let outside = tempfile::tempdir().unwrap();
    let links = tempfile::tempdir().unwrap();
    let project = Project::new();
    let build_targets = canaries(outside.path(), &project, "build");
    let test_targets = canaries(outside.path(), &project, "test");
    canary_package(links.path(), &build_targets);
    let test_file = format!(
        "{}\nimport claimflow_canary_build as build\n\n\ndef test_confined():\n    \
         assert (build.LEAKED, build.WROTE) == ([], [])\n    assert (LEAKED, WROTE) == ([], [])\n    \
         assert True\n",
        snoop(&test_targets)
    );
    let mut repository = FixtureRepo::new();
    repository
        .commit(
            "A library",
            &[
                ("pkg/__init__.py", Some("")),
                ("pkg/core.py", Some("def one():\n    return 1\n")),
                ("requirements-test.txt", Some("claimflow-canary-build\n")),
                ("tests/test_core.py", Some(&test_file)),
            ],
        )
        .commit(
            "one is two",
            &[
                ("pkg/core.py", Some("def one():\n    return 2\n")),
                (
                    "tests/test_core.py",
                    Some(&test_file.replace("    assert True\n", "")),
                ),
            ],
        );
    project.file(
        "pipeline.yaml",
        &format!(
            "version: 1\nname: canary\nrepos:\n  - {{name: lib, path: \"{}\", branch: main, python: [\"3.11\"]}}\n\
             steps:\n  rank: {{uses: rank-commits}}\n  claims: {{uses: mine-claims, needs: [rank]}}\n  \
             truth: {{uses: oracle, needs: [claims], with: {{runs: 2}}}}\n",
            repository.path().display()
        ),
    );
    // A cache of its own: the canary package must be built here, not found built in a shared one.
    let cache = tempfile::tempdir().unwrap();
    let ran = project
        .command(&["run", "pipeline.yaml"])
        .env("OPENAI_API_KEY", SECRET)
        .env("CLAIMFLOW_API_KEY", SECRET)
        .env("CLAIMFLOW_CACHE_DIR", cache.path())
        .env("PIP_FIND_LINKS", links.path())
        .output()
        .expect("claimflow runs");
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(ran.status.success(), "{stderr}");
    assert!(
        stderr.contains("a /proc of their own") && stderr.contains("writes only to their checkout"),
        "the run does not say its test processes were confined: {stderr}"
    );
    let truth = project.read("results/canary/truth.jsonl");
    let label = truth
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .find(|record| {
            record["claim"]
                .as_str()
                .is_some_and(|claim| !claim.is_empty())
        })
        .unwrap_or_else(|| panic!("no claim was labelled: {truth}\n{stderr}"));
    // The test passes only when neither it nor the build script found the secret or wrote out.
    assert_eq!(label["label"], "held", "{truth}");
    for target in build_targets.iter().chain(&test_targets) {
        assert!(!target.exists(), "{} was written", target.display());
    }
}

#[test]
fn a_check_command_reads_no_secret_and_writes_nothing_outside_its_checkout() {
    if !confinement_expected() {
        eprintln!("this machine refuses namespaces: nothing to prove");
        return;
    }
    let outside = tempfile::tempdir().unwrap();
    let project = Project::new();
    let targets = canaries(outside.path(), &project, "check");
    let mut repository = FixtureRepo::new();
    repository
        .commit(
            "A library",
            &[("pkg/core.py", Some("def one():\n    return 1\n"))],
        )
        .commit(
            "one is two",
            &[
                ("pkg/core.py", Some("def one():\n    return 2\n")),
                (
                    "snoop.py",
                    Some(&format!(
                        "{}\nimport sys\nsys.exit(1 if LEAKED or WROTE else 0)\n",
                        snoop(&targets)
                    )),
                ),
            ],
        );
    project.file(
        "claims.jsonl",
        r#"{"id": "confined", "text": "the check runs confined", "check": "python3 snoop.py"}"#,
    );
    let ran = project
        .command(&[
            "check",
            "--repo",
            &repository.path().display().to_string(),
            "--arm",
            "exec",
            "claims.jsonl",
        ])
        .env("OPENAI_API_KEY", SECRET)
        .env("CLAIMFLOW_CACHE_DIR", project.path("cache"))
        .output()
        .expect("claimflow runs");
    let stdout = String::from_utf8_lossy(&ran.stdout);
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(
        !stdout.contains(SECRET) && !stderr.contains(SECRET),
        "{stdout}\n{stderr}"
    );
    let verdict: serde_json::Value =
        serde_json::from_str(stdout.lines().next().unwrap_or("{}")).unwrap();
    assert_eq!(verdict["verdict"], "held", "{stdout}\n{stderr}");
    for target in &targets {
        assert!(!target.exists(), "{} was written", target.display());
    }
}
