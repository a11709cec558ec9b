//! Faults, each a named test: SIGKILL at seeded random moments of the full demo (its model arms at
//! a fake server); on the real chain (ranking, mining, the oracle, two static arms) over the
//! `repro_smoke` fixture: a corrupted cache, two runs at once, tests that hang, kill their interpreter, leave a daemon behind or flood stdout, and a
//! read-only or full workdir (mounted over in a user + mount namespace, `unshare -rm`; skipped
//! with the reason where the kernel forbids one).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::git::FixtureRepo;
use crate::common::project::Project;

fn pipeline(repository: &Path, runs: u32, timeout: u32) -> String {
    format!(
        r#"version: 1
name: faults
repos:
  - {{name: fixture, path: "{repository}", branch: main, python: ["3.11"]}}
steps:
  rank:   {{uses: rank-commits, with: {{by: assertion-deletions, top: 3}}}}
  claims: {{uses: mine-claims, needs: [rank]}}
  truth:  {{uses: oracle, needs: [claims], with: {{runs: {runs}, timeout: {timeout}}}}}
  a3:     {{uses: arm, needs: [claims], with: {{arm: file-anchoring}}}}
  a4:     {{uses: arm, needs: [claims], with: {{arm: symbol-anchoring}}}}
"#,
        repository = repository.display()
    )
}

fn project(repository: &Path) -> Project {
    let project = Project::new();
    project.file("pipeline.yaml", &pipeline(repository, 3, 60));
    project
}

/// The result files that must not depend on how a run got there.
const RESULTS: &[&str] = &[
    "results/faults/commits.jsonl",
    "results/faults/claims.jsonl",
    "results/faults/truth.jsonl",
    "results/faults/predictions/a3.jsonl",
    "results/faults/predictions/a4.jsonl",
];

/// The result files with what may differ between runs taken out: how long a run took.
fn results(project: &Project) -> Vec<(String, String)> {
    RESULTS
        .iter()
        .map(|file| {
            let text = project.read(file);
            let lines: Vec<String> = text
                .lines()
                .map(|line| {
                    let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
                    strip_timings(&mut value);
                    value.to_string()
                })
                .collect();
            (file.to_string(), lines.join("\n"))
        })
        .collect()
}

fn strip_timings(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.retain(|key, _| {
                !key.contains("seconds") && !key.contains("elapsed") && !key.contains("latency")
            });
            map.values_mut().for_each(strip_timings);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip_timings),
        _ => {}
    }
}

/// Processes whose working directory or command line is inside `root` (claimflow runs there, and
/// pytest in its worktrees), except zombies.
fn processes_in(root: &Path) -> Vec<String> {
    let root_text = root.display().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if !name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let zombie = std::fs::read_to_string(entry.path().join("stat"))
            .map(|stat| {
                stat.split(") ")
                    .nth(1)
                    .is_some_and(|rest| rest.starts_with('Z'))
            })
            .unwrap_or(true);
        if zombie {
            continue;
        }
        let cwd = std::fs::read_link(entry.path().join("cwd")).ok();
        let cmdline = std::fs::read(entry.path().join("cmdline"))
            .map(|bytes| String::from_utf8_lossy(&bytes).replace('\0', " "))
            .unwrap_or_default();
        if cwd.is_some_and(|cwd| cwd.starts_with(root)) || cmdline.contains(&root_text) {
            found.push(format!("{name}: {cmdline}"));
        }
    }
    found
}

/// Waits up to 10 s for every process in `root` to be gone; returns those left.
fn left_running(root: &Path) -> Vec<String> {
    let started = Instant::now();
    loop {
        let left = processes_in(root);
        if left.is_empty() || started.elapsed() > Duration::from_secs(10) {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn verify(project: &Project) -> crate::common::project::Ran {
    project.run(&["cache", "verify", "pipeline.yaml"])
}

/// The variable the demo pipeline's model entry names for its key, and the key.
const DEMO_KEY_VARIABLE: &str = "CLAIMFLOW_FAULTS_KEY";
const DEMO_KEY: &str = "sk-faults-91b2e7";

/// Answers as a model would, the same for the same request: a prose note naming the claim's
/// first line, A5 "not semantics preserving", A6 "flipped" for claims whose test mentions
/// `Inventory` and "held" for the others.
fn demo_model(
    _: usize,
    request: &crate::models::fake_server::Recorded,
) -> crate::models::fake_server::Reply {
    let body = request.json();
    let system = body["messages"][0]["content"].as_str().unwrap_or_default();
    let user = body["messages"][1]["content"].as_str().unwrap_or_default();
    let text = if system.contains("prose") {
        format!("A note about {}.", user.lines().next().unwrap_or_default())
    } else if system.contains("semantics_preserving") {
        r#"{"semantics_preserving": false}"#.to_string()
    } else if user.contains("Inventory") {
        r#"{"verdict": "flipped"}"#.to_string()
    } else {
        r#"{"verdict": "held"}"#.to_string()
    };
    crate::models::fake_server::Reply::json(crate::models::answer(
        claimflow::pipeline::Provider::Openai,
        &text,
    ))
}

/// A project holding the shipped demo (`pipelines/demo.yaml`, its corpus and the prompts), its
/// model entry pointed at `server`.
fn demo_project(server: &crate::models::fake_server::FakeServer) -> Project {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let project = Project::new();
    crate::demo::copy_dir(&manifest.join("corpus/demo"), &project.path("corpus/demo"));
    crate::demo::copy_dir(&manifest.join("prompts"), &project.path("prompts"));
    let demo = std::fs::read_to_string(manifest.join("pipelines/demo.yaml")).unwrap();
    let models = demo
        .find("\nmodels:\n")
        .expect("the demo has a models block")
        + 1;
    let steps = demo.find("\nsteps:\n").expect("the demo has steps") + 1;
    let pipeline = format!(
        "{}models:\n  judge: {{provider: openai, model: test-model, base_url: \"{}\", api_key_env: {DEMO_KEY_VARIABLE}}}\n{}",
        &demo[..models],
        server.url("/v1"),
        &demo[steps..]
    );
    project.file("pipeline.yaml", &pipeline);
    project
}

/// `claimflow ARGS` in a demo project, with the model's key.
fn demo_command(project: &Project, args: &[&str]) -> std::process::Command {
    let mut command = project.command(args);
    command.env(DEMO_KEY_VARIABLE, DEMO_KEY);
    command
}

/// The demo's result files that must not depend on how a run got there: commits, claims, labels
/// and every step's verdicts, without timings and without the run history of a claim discarded
/// as flaky (its outcomes are the nondeterminism it is discarded for).
fn demo_results(project: &Project) -> Vec<(String, String)> {
    let results = project.path("results/demo");
    let mut files = vec![
        "commits.jsonl".to_string(),
        "claims.jsonl".to_string(),
        "truth.jsonl".to_string(),
    ];
    let mut predictions: Vec<String> = std::fs::read_dir(results.join("predictions"))
        .unwrap()
        .map(|entry| {
            format!(
                "predictions/{}",
                entry.unwrap().file_name().to_string_lossy()
            )
        })
        .collect();
    predictions.sort();
    files.extend(predictions);
    files
        .into_iter()
        .map(|file| {
            let text = std::fs::read_to_string(results.join(&file)).unwrap();
            let lines: Vec<String> = text
                .lines()
                .map(|line| {
                    let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
                    strip_timings(&mut value);
                    if is_flaky(&value)
                        && let Some(record) = value.as_object_mut()
                    {
                        // Its runs' outcomes, and the reason that counts them.
                        record.remove("parent_runs");
                        record.remove("child_runs");
                        record.remove("reason");
                    }
                    value.to_string()
                })
                .collect();
            (file, lines.join("\n"))
        })
        .collect()
}

/// A truth record of a nondeterministic test: discarded for failing at the parent (mining saw it
/// pass there) or for both passing and failing at the child, or with both outcomes on one side.
/// How many runs it took to show that, and what they were, differs from run to run.
fn is_flaky(record: &serde_json::Value) -> bool {
    let cause = record["cause"].as_str().unwrap_or_default();
    if cause == "not_passing_at_parent" || cause == "flaky_at_child" {
        return true;
    }
    ["parent_runs", "child_runs"].iter().any(|side| {
        let outcomes: Vec<&str> = record[side]
            .as_array()
            .map(|runs| {
                runs.iter()
                    .filter_map(|run| run["outcome"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        outcomes.contains(&"passed") && outcomes.contains(&"failed")
    })
}

/// The first line where two renderings of a result file differ.
fn first_difference(got: &str, expected: &str) -> String {
    got.lines()
        .zip(expected.lines())
        .enumerate()
        .find(|(_, (got, expected))| got != expected)
        .map(|(line, (got, expected))| format!("line {}:\n got {got}\nwant {expected}", line + 1))
        .unwrap_or_else(|| {
            format!(
                "{} lines against {}",
                got.lines().count(),
                expected.lines().count()
            )
        })
}

/// SIGKILL at 20 seeded moments of the full demo (`pipelines/demo.yaml` as shipped: both rankings,
/// the oracle, every static arm, testmon, the splits and controls with paraphrases run at the
/// parent, and the model arms, here asking a fake server), spread over one run that is resumed
/// after each kill: the moments are drawn across the first four fifths of an uninterrupted run, and each
/// resumed run is killed when the time it ran adds up to the next moment. Twenty fresh demo runs
/// do not fit in the time a test may take on two cores; resuming covers every phase of the run
/// with the twenty kills. After every kill nothing of the run is left (claimflow, pytest, a
/// process pytest started) and the cache verifies; at the end the labels and verdicts equal an
/// uninterrupted run's.
#[test]
fn sigkill_at_twenty_seeded_moments_leaves_the_results_of_an_uninterrupted_run() {
    let server = crate::models::fake_server::FakeServer::start(demo_model);
    let reference = demo_project(&server);
    let started = Instant::now();
    let ran = demo_command(&reference, &["run", "pipeline.yaml", "-q"])
        .output()
        .unwrap();
    crate::common::assert_ran(&ran, "the run");
    let length = started.elapsed();
    let expected = demo_results(&reference);
    for arm in ["a5", "a5c", "a6_base", "a6_risk", "prose"] {
        let file = format!("predictions/{arm}.jsonl");
        assert!(
            expected
                .iter()
                .any(|(name, text)| *name == file && text.contains("\"provider\":\"openai\"")),
            "{arm} asked no model"
        );
    }

    // The moments fall in the first four fifths of the reference run: a resumed run on a machine
    // less busy than the reference's may finish sooner, and a kill after the end shows nothing.
    let span = length.as_millis() as u64 * 4 / 5;
    let mut random = fastrand::Rng::with_seed(14);
    let mut moments: Vec<Duration> = (0..20)
        .map(|_| Duration::from_millis(random.u64(0..span)))
        .collect();
    moments.sort();
    let killed = demo_project(&server);
    let mut ran_for = Duration::ZERO;
    let mut interrupted = 0;
    for (index, moment) in moments.iter().enumerate() {
        // At least a tenth of a second per run, so each kill lands in a run that has started.
        let delay = moment
            .saturating_sub(ran_for)
            .max(Duration::from_millis(100));
        let mut child = demo_command(&killed, &["run", "pipeline.yaml", "-q"])
            .spawn()
            .unwrap();
        let spawned = Instant::now();
        std::thread::sleep(delay);
        if child.try_wait().unwrap().is_none() {
            interrupted += 1;
        }
        // SAFETY: signalling a child this test started and has not reaped.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGKILL) };
        let _ = child.wait();
        ran_for += spawned.elapsed();
        let moment = format!("kill {index} at {moment:?} ({delay:?} into its run)");
        let left = left_running(killed.root());
        assert!(left.is_empty(), "{moment}: {left:#?}");
        let verified = demo_command(&killed, &["cache", "verify", "pipeline.yaml"])
            .output()
            .unwrap();
        assert!(
            verified.status.success(),
            "{moment}: {}{}",
            String::from_utf8_lossy(&verified.stdout),
            String::from_utf8_lossy(&verified.stderr)
        );
    }
    let ran = demo_command(&killed, &["run", "pipeline.yaml", "-q"])
        .output()
        .unwrap();
    crate::common::assert_ran(&ran, "the run");
    let got = demo_results(&killed);
    assert_eq!(
        got.iter().map(|(file, _)| file).collect::<Vec<_>>(),
        expected.iter().map(|(file, _)| file).collect::<Vec<_>>()
    );
    for ((file, got), (_, expected)) in got.iter().zip(&expected) {
        assert!(
            got == expected,
            "{file}: {}",
            first_difference(got, expected)
        );
    }
    let verified = demo_command(&killed, &["cache", "verify", "pipeline.yaml"])
        .output()
        .unwrap();
    assert!(
        verified.status.success(),
        "{}",
        String::from_utf8_lossy(&verified.stdout)
    );
    eprintln!(
        "20 kills over a demo run of {length:?} (killed runs ran {ran_for:?}): {interrupted} interrupted a run"
    );
    // The moments must fall inside runs, or the test shows nothing.
    assert!(
        interrupted >= 15,
        "only {interrupted} of 20 kills interrupted a run"
    );
}

#[test]
fn a_corrupted_cache_object_is_found_recomputed_and_never_served() {
    let repository = crate::invariants::repro_smoke::fixture();
    let project = project(repository.path());
    project.ok(&["run", "pipeline.yaml"]);
    let expected = results(&project);
    let objects: Vec<std::path::PathBuf> = files_under(&project.path(".claimflow/cache/objects"));
    assert!(objects.len() >= 3, "{objects:?}");
    // A flipped byte, a truncated file, a deleted object.
    let mut flipped = std::fs::read(&objects[0]).unwrap();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x20;
    std::fs::write(&objects[0], &flipped).unwrap();
    let truncated = std::fs::read(&objects[1]).unwrap();
    std::fs::write(&objects[1], &truncated[..truncated.len() / 2]).unwrap();
    std::fs::remove_file(&objects[2]).unwrap();
    // And a record whose output sits inline in the action log: a byte flipped in its middle.
    let log = project.path(".claimflow/cache/actions.log");
    let mut bytes = std::fs::read(&log).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(&log, &bytes).unwrap();

    let verified = verify(&project);
    assert_eq!(verified.code, 1, "{}", verified.stdout);
    for object in &objects[..2] {
        let name = object.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            verified.stdout.contains(&name),
            "{name}: {}",
            verified.stdout
        );
    }
    assert!(
        verified.stdout.contains("torn"),
        "the flipped log record: {}",
        verified.stdout
    );

    let ran = project.ok(&["run", "pipeline.yaml"]);
    assert!(
        !ran.stderr.contains("run finished: 0 computed"),
        "nothing was recomputed: {}",
        ran.stderr
    );
    assert_eq!(results(&project), expected);
    project.ok(&["cache", "gc", "pipeline.yaml"]);
    let verified = verify(&project);
    assert_eq!(verified.code, 0, "{}", verified.stdout);
}

/// Regression: two runs on one workdir shared the oracle's slot worktrees (`worktrees/oracle-0`),
/// so one checked a commit out under the other's pytest run, and a label from that mix ("no
/// verdict at the child ... crash") was cached. Slots are now claimed with a lock per process.
#[test]
fn two_runs_of_one_pipeline_at_once_agree_and_corrupt_nothing() {
    let repository = crate::invariants::repro_smoke::fixture();
    let reference = project(repository.path());
    reference.ok(&["run", "pipeline.yaml"]);
    let project = project(repository.path());
    let first = project
        .command(&["run", "pipeline.yaml", "-q"])
        .spawn()
        .unwrap();
    let second = project
        .command(&["run", "pipeline.yaml", "-q"])
        .spawn()
        .unwrap();
    let first = first.wait_with_output().unwrap();
    let second = second.wait_with_output().unwrap();
    crate::common::assert_ran(&first, "the first run");
    crate::common::assert_ran(&second, "the second run");
    assert_eq!(results(&project), results(&reference));
    let verified = verify(&project);
    assert_eq!(verified.code, 0, "{}", verified.stdout);
}

/// A test that hangs, one that kills its interpreter, one that leaves a daemon behind (out of the
/// process group, with `setsid`), one that writes 1 GB to stdout: each gets no verdict, nothing is
/// left running, memory stays bounded, and the run goes on to label the commit beside them.
#[test]
fn hostile_tests_get_no_verdict_leave_nothing_running_and_the_run_goes_on() {
    let marker = tempfile::tempdir().unwrap();
    let daemon = format!(
        "import os, subprocess, sys\n\n\ndef test_daemon():\n    subprocess.Popen([sys.executable, \"-c\", \"import time; time.sleep(600)\", {:?}], start_new_session=True)\n    assert True\n",
        marker.path().display().to_string()
    );
    let hostile: [(&str, String); 4] = [
        (
            "tests/test_hang.py",
            "import time\n\n\ndef test_hang():\n    time.sleep(600)\n    assert True\n".into(),
        ),
        (
            "tests/test_suicide.py",
            "import os\n\n\ndef test_suicide():\n    os.kill(os.getpid(), 9)\n    assert True\n".into(),
        ),
        ("tests/test_daemon.py", daemon),
        (
            "tests/test_flood.py",
            "import sys\n\n\ndef test_flood():\n    block = \"x\" * (1024 * 1024)\n    for _ in range(1024):\n        sys.stdout.write(block)\n    assert True\n".into(),
        ),
    ];
    let mut repository = FixtureRepo::new();
    let mut base: Vec<(&str, Option<&str>)> = vec![
        ("pkg/__init__.py", Some("")),
        ("pkg/core.py", Some("def one():\n    return 1\n")),
        (
            "tests/test_core.py",
            Some("from pkg.core import one\n\n\ndef test_one():\n    assert one() == 1\n"),
        ),
    ];
    base.extend(
        hostile
            .iter()
            .map(|(path, text)| (*path, Some(text.as_str()))),
    );
    repository.commit("A library with hostile tests", &base);
    // One commit touches the hostile test files (each deletes its assertion), another the plain one.
    let touched: Vec<(String, String)> = hostile
        .iter()
        .map(|(path, text)| (path.to_string(), text.replace("    assert True\n", "")))
        .collect();
    let mut changes: Vec<(&str, Option<&str>)> = touched
        .iter()
        .map(|(path, text)| (path.as_str(), Some(text.as_str())))
        .collect();
    changes.push((
        "pkg/core.py",
        Some("def one():\n    return 1\n\n\ndef two():\n    return 2\n"),
    ));
    repository.commit("hostile tests lose their assertions", &changes);
    repository.commit(
        "one is two",
        &[
            (
                "pkg/core.py",
                Some("def one():\n    return 2\n\n\ndef two():\n    return 2\n"),
            ),
            (
                "tests/test_core.py",
                Some("from pkg.core import one\n\n\ndef test_one():\n    assert one() == 2\n"),
            ),
        ],
    );
    let project = Project::new();
    project.file("pipeline.yaml", &pipeline(repository.path(), 2, 10));
    let started = Instant::now();
    let ran = project.ok(&["run", "pipeline.yaml"]);
    let elapsed = started.elapsed();
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let truth: Vec<serde_json::Value> = project
        .read("results/faults/truth.jsonl")
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let label = |node: &str| {
        truth
            .iter()
            .find(|record| record["claim"].as_str().unwrap().ends_with(node))
            .unwrap_or_else(|| panic!("{node} has a truth record: {truth:#?}"))
    };
    for node in [
        "tests/test_hang.py::test_hang",
        "tests/test_suicide.py::test_suicide",
        "tests/test_daemon.py::test_daemon",
        "tests/test_flood.py::test_flood",
    ] {
        let record = label(node);
        assert_eq!(record["label"], "discarded", "{record}");
        let runs = record["parent_runs"].as_array().unwrap();
        assert!(
            runs.iter().any(|run| run["outcome"] == "unknown"),
            "{node}: no run without a verdict: {record}"
        );
    }
    // The plain claim beside them got its label.
    assert_eq!(label("tests/test_core.py::test_one")["label"], "flipped");
    assert!(
        left_running(project.root()).is_empty() && left_running(marker.path()).is_empty(),
        "{:?}",
        processes_in(marker.path())
    );
    // The largest process claimflow waited for (pytest included) stayed far below the gigabyte
    // written (ru_maxrss is in KiB).
    assert!(
        usage.ru_maxrss < 512 * 1024,
        "a process grew to {} KiB",
        usage.ru_maxrss
    );
    eprintln!(
        "{elapsed:?}, peak resident {} KiB\n{}",
        usage.ru_maxrss, ran.stderr
    );
}

fn files_under(root: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(directory) = pending.pop() {
        for entry in std::fs::read_dir(&directory).unwrap().flatten() {
            if entry.file_type().unwrap().is_dir() {
                pending.push(entry.path());
            } else {
                files.push(entry.path());
            }
        }
    }
    files.sort();
    files
}

/// Whether this kernel lets the test make a user + mount namespace and mount in it (`unshare
/// -rm`); the reason when it does not.
fn mount_namespaces() -> Result<(), String> {
    let probe = std::process::Command::new("unshare")
        .args(["-rm", "sh", "-c", "mount -t tmpfs -o size=16k tmpfs /mnt"])
        .output()
        .map_err(|error| format!("unshare could not start: {error}"))?;
    if probe.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&probe.stderr).trim().to_string())
    }
}

/// The fixture repository, or `None` (the reason printed) where the kernel forbids the
/// namespaces these tests mount in.
fn namespaces_and_fixture() -> Option<FixtureRepo> {
    if let Err(reason) = mount_namespaces() {
        eprintln!("skipped: this kernel forbids a user + mount namespace ({reason})");
        return None;
    }
    Some(crate::invariants::repro_smoke::fixture())
}

/// A project over `repository` with its (empty) workdir and the `phases/` directory made.
fn namespaced_project(repository: &FixtureRepo) -> Project {
    let project = project(repository.path());
    std::fs::create_dir_all(project.path("phases")).unwrap();
    std::fs::create_dir_all(project.path(".claimflow")).unwrap();
    project
}

/// Runs `script` with `sh` in a fresh user + mount namespace, in the project root, with
/// `$CLAIMFLOW` the binary and `$WORKDIR` the project's workdir; each `claimflow` step of the
/// script writes its exit code and output under `phases/` (outside the workdir, which the script
/// mounts over and which is gone with the namespace).
fn in_mount_namespace(project: &Project, script: &str) {
    let status = std::process::Command::new("unshare")
        .args(["-rm", "sh", "-c", script])
        .current_dir(project.root())
        .env("CLAIMFLOW", env!("CARGO_BIN_EXE_claimflow"))
        .env("WORKDIR", project.path(".claimflow"))
        .env("NO_COLOR", "1")
        .status()
        .unwrap();
    assert!(status.success(), "the namespace script failed: {status}");
}

/// What one phase of [`in_mount_namespace`] did.
fn phase(project: &Project, name: &str) -> crate::common::project::Ran {
    crate::common::project::Ran {
        code: project
            .read(&format!("phases/{name}.code"))
            .trim()
            .parse()
            .unwrap(),
        stdout: project.read(&format!("phases/{name}.out")),
        stderr: project.read(&format!("phases/{name}.err")),
    }
}

/// A `claimflow` invocation as a phase of a namespace script.
fn phase_line(name: &str, args: &str) -> String {
    format!(
        "\"$CLAIMFLOW\" {args} > phases/{name}.out 2> phases/{name}.err; echo $? > phases/{name}.code\n"
    )
}

/// Every result file written is whole: each line of each JSON-lines file parses, each JSON file
/// parses, and no temporary file is left beside them.
fn results_are_whole(project: &Project) {
    let results = project.path("results");
    if !results.exists() {
        return;
    }
    for file in files_under(&results) {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        if name.ends_with(".jsonl") {
            for line in text.lines() {
                serde_json::from_str::<serde_json::Value>(line)
                    .unwrap_or_else(|error| panic!("{}: a torn line: {error}", file.display()));
            }
        } else if name.ends_with(".json") {
            serde_json::from_str::<serde_json::Value>(&text)
                .unwrap_or_else(|error| panic!("{}: torn: {error}", file.display()));
        } else {
            panic!(
                "{}: not a result file (a temporary left behind?)",
                file.display()
            );
        }
    }
}

/// A read-only workdir: the run stops before any step computes, exit 1 or 2, with an error that
/// names the path it could not write; no result file is written; the next run on a writable
/// workdir completes.
#[test]
fn a_read_only_workdir_is_named_in_the_error_and_nothing_is_half_written() {
    let Some(repository) = namespaces_and_fixture() else {
        return;
    };
    let project = namespaced_project(&repository);
    let script = format!(
        "set -e\nmount --bind \"$WORKDIR\" \"$WORKDIR\"\nmount -o remount,bind,ro \"$WORKDIR\"\nset +e\n{}",
        phase_line("run", "run pipeline.yaml -q")
    );
    in_mount_namespace(&project, &script);
    let ran = phase(&project, "run");
    assert!(
        ran.code == 1 || ran.code == 2,
        "exit {}: {}",
        ran.code,
        ran.stderr
    );
    let workdir = project.path(".claimflow").display().to_string();
    assert!(
        ran.stderr.contains(&workdir),
        "the error names no path under {workdir}: {}",
        ran.stderr
    );
    assert!(
        ran.stderr.to_lowercase().contains("read-only"),
        "the error does not say why: {}",
        ran.stderr
    );
    assert!(
        !ran.stderr.contains("panicked"),
        "a panic is no error message: {}",
        ran.stderr
    );
    results_are_whole(&project);
    assert!(files_under(&project.path(".claimflow")).is_empty());

    project.ok(&["run", "pipeline.yaml", "-q"]);
    let verified = verify(&project);
    assert_eq!(verified.code, 0, "{}", verified.stdout);
}

/// Regressions: with the workdir on a filesystem of its own, publishing a result failed
/// ("rename into …: Invalid cross-device link", the temp file was made in the workdir); and a
/// pytest run that could not write its output on a full disk exited 120 and was cached as the
/// claims' label (`unknown_at_parent`), served again once there was room.
///
/// A full workdir (a tmpfs half the size the run needs, over it): the run fails with an error
/// naming the path it could not write and the lack of space; the cache then verifies (nothing
/// half-stored is served) and no result file is torn; with room again the same workdir completes
/// the run and its results equal a run that never lacked room.
#[test]
fn a_full_workdir_is_named_in_the_error_and_nothing_is_half_written() {
    let Some(repository) = namespaces_and_fixture() else {
        return;
    };
    let reference = project(repository.path());
    reference.ok(&["run", "pipeline.yaml", "-q"]);
    let expected = results(&reference);

    let project = namespaced_project(&repository);
    // Half of what the uninterrupted run's workdir holds: the run fills it midway.
    let full_at = kilobytes_in(&reference.path(".claimflow")) / 2;
    let script = format!(
        "set -e\nmount -t tmpfs -o size={full_at}k tmpfs \"$WORKDIR\"\nset +e\n{}{}\
         mount -o remount,size=512m \"$WORKDIR\"\n{}{}",
        phase_line("full", "run pipeline.yaml -q"),
        phase_line("verify_full", "cache verify pipeline.yaml"),
        phase_line("room", "run pipeline.yaml -q"),
        phase_line("verify_room", "cache verify pipeline.yaml"),
    );
    in_mount_namespace(&project, &script);
    let full = phase(&project, "full");
    assert_eq!(full.code, 1, "{}", full.stderr);
    let workdir = project.path(".claimflow").display().to_string();
    assert!(
        full.stderr.contains(&workdir),
        "the error names no path under {workdir}: {}",
        full.stderr
    );
    assert!(
        full.stderr.contains("No space left on device") || full.stderr.contains("is full"),
        "the error does not say why: {}",
        full.stderr
    );
    assert!(!full.stderr.contains("panicked"), "{}", full.stderr);
    let verified = phase(&project, "verify_full");
    assert_eq!(verified.code, 0, "{}{}", verified.stdout, verified.stderr);
    let room = phase(&project, "room");
    assert_eq!(room.code, 0, "{}", room.stderr);
    let verified = phase(&project, "verify_room");
    assert_eq!(verified.code, 0, "{}{}", verified.stdout, verified.stderr);
    results_are_whole(&project);
    assert_eq!(results(&project), expected);
}

/// The disk space the files under `root` take, in kilobytes (`du -sk`).
fn kilobytes_in(root: &Path) -> u64 {
    let du = std::process::Command::new("du")
        .arg("-sk")
        .arg(root)
        .output()
        .unwrap();
    String::from_utf8_lossy(&du.stdout)
        .split_whitespace()
        .next()
        .and_then(|size| size.parse().ok())
        .unwrap_or_else(|| panic!("du -sk {}: {du:?}", root.display()))
}
