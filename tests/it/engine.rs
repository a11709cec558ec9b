//! The engine end to end through the binary: caching, incremental re-runs, early cutoff, key
//! stability, failures, crash safety and concurrent runs, on pipelines of `command` steps.

use std::time::Duration;

use crate::common::project::Project;

const CHAIN: &str = r#"version: 1
name: chain
steps:
  gen:
    uses: command
    with:
      run: cat seed.txt > gen.txt
      inputs: [seed.txt]
      outputs: [gen.txt]
  shout:
    uses: command
    needs: [gen]
    with:
      run: tr a-z A-Z < gen.txt > shout.txt
      inputs: [gen.txt]
      outputs: [shout.txt]
  count:
    uses: command
    needs: [shout]
    with:
      foreach: [x, y, z]
      run: mkdir -p counts && echo "{item} $(wc -c < shout.txt)" > counts/{item}.txt
      inputs: [shout.txt]
      outputs: ["counts/{item}.txt"]
  notes:
    uses: command
    with:
      foreach: notes/*.txt
      run: mkdir -p upper && tr a-z A-Z < {item} > upper/{name}
      inputs: ["{item}"]
      outputs: ["upper/{name}"]
"#;

fn chain() -> Project {
    let project = Project::new();
    project
        .file("pipeline.yaml", CHAIN)
        .file("seed.txt", "hello claims\n")
        .file("notes/a.txt", "alpha\n")
        .file("notes/b.txt", "beta\n")
        .file("notes/c.txt", "gamma\n");
    project
}

fn to_run(project: &Project) -> Vec<(String, Option<u64>)> {
    project
        .plan("pipeline.yaml")
        .into_iter()
        .map(|(name, _, to_run)| (name, to_run))
        .collect()
}

fn some(steps: &[(&str, u64)]) -> Vec<(String, Option<u64>)> {
    steps
        .iter()
        .map(|(name, n)| (name.to_string(), Some(*n)))
        .collect()
}

/// Runs the pipeline and checks that the run computed `computed` items.
fn run_computing(project: &Project, computed: usize) {
    let ran = project.ok(&["run", "pipeline.yaml"]);
    assert!(
        ran.stderr
            .contains(&format!("run finished: {computed} computed,")),
        "{}",
        ran.stderr
    );
}

#[test]
fn a_second_run_runs_nothing() {
    let project = chain();
    project.ok(&["run", "pipeline.yaml"]);
    assert_eq!(project.read("shout.txt"), "HELLO CLAIMS\n");
    assert_eq!(project.read("upper/b.txt"), "BETA\n");
    assert_eq!(
        to_run(&project),
        some(&[("gen", 0), ("shout", 0), ("count", 0), ("notes", 0)])
    );
    let second = project.ok(&["run", "pipeline.yaml"]);
    assert!(
        second.stderr.contains("run finished: 0 computed, 8 cached"),
        "{}",
        second.stderr
    );
}

#[test]
fn touching_one_input_reruns_only_its_item_and_dependents() {
    let project = chain();
    project.ok(&["run", "pipeline.yaml"]);
    project.file("notes/b.txt", "beta two\n");
    assert_eq!(
        to_run(&project),
        some(&[("gen", 0), ("shout", 0), ("count", 0), ("notes", 1)])
    );
    let ran = project.ok(&["run", "pipeline.yaml"]);
    assert!(
        ran.stderr.contains("run finished: 1 computed, 7 cached"),
        "{}",
        ran.stderr
    );
    assert_eq!(project.read("upper/b.txt"), "BETA TWO\n");

    project.file("seed.txt", "hello again\n");
    let plan = to_run(&project);
    assert_eq!(plan[0], ("gen".to_string(), Some(1)));
    // Downstream items cannot be listed until `gen` has produced its new output.
    assert_eq!(plan[1], ("shout".to_string(), None));
    let ran = project.ok(&["run", "pipeline.yaml"]);
    assert!(
        ran.stderr.contains("run finished: 5 computed, 3 cached"),
        "{}",
        ran.stderr
    );
    assert_eq!(project.read("counts/y.txt"), "y 12\n");
}

#[test]
fn an_upstream_rewritten_to_the_same_bytes_stops_propagation() {
    let project = chain();
    project.ok(&["run", "pipeline.yaml"]);
    let shout_before = project.keys("pipeline.yaml", "shout");
    project.file(
        "pipeline.yaml",
        &CHAIN.replace("run: cat seed.txt > gen.txt", "run: cp seed.txt gen.txt"),
    );
    let ran = project.ok(&["run", "pipeline.yaml"]);
    assert!(
        ran.stderr.contains("gen: done, 1 computed, 0 cached"),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr.contains("shout: done, 0 computed, 1 cached"),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr.contains("count: done, 0 computed, 3 cached"),
        "{}",
        ran.stderr
    );
    assert_eq!(project.keys("pipeline.yaml", "shout"), shout_before);
}

#[test]
fn keys_do_not_depend_on_the_project_location_the_workdir_or_the_yaml_layout() {
    let first = chain();
    first.ok(&["run", "pipeline.yaml"]);
    let second = chain();
    // The same pipeline reformatted, with `with` keys reordered and a workdir elsewhere.
    second.file(
        "pipeline.yaml",
        r#"version: 1
name: chain
workdir: build/state
steps:
  gen: {uses: command, with: {outputs: [gen.txt], inputs: [seed.txt], run: "cat seed.txt > gen.txt"}}
  shout:
    needs: [gen]
    uses: command
    with: {outputs: [shout.txt], run: "tr a-z A-Z < gen.txt > shout.txt", inputs: [gen.txt]}
  count:
    uses: command
    needs: [shout]
    with:
      outputs: ["counts/{item}.txt"]
      inputs: [shout.txt]
      run: mkdir -p counts && echo "{item} $(wc -c < shout.txt)" > counts/{item}.txt
      foreach: [x, y, z]
  notes:
    uses: command
    with: {foreach: notes/*.txt, outputs: ["upper/{name}"], inputs: ["{item}"], run: "mkdir -p upper && tr a-z A-Z < {item} > upper/{name}"}
"#,
    );
    second.ok(&["run", "pipeline.yaml"]);
    assert!(second.path("build/state/cache").is_dir());
    for step in ["gen", "shout", "count", "notes"] {
        assert_eq!(
            first.keys("pipeline.yaml", step),
            second.keys("pipeline.yaml", step),
            "step {step}"
        );
    }
}

#[test]
fn changing_a_param_changes_exactly_the_dependent_keys() {
    let project = chain();
    project.ok(&["run", "pipeline.yaml"]);
    let before: Vec<_> = ["gen", "shout", "count", "notes"]
        .iter()
        .map(|step| project.keys("pipeline.yaml", step))
        .collect();
    project.file(
        "pipeline.yaml",
        &CHAIN.replace("echo \"{item} $(wc", "echo \"{item} has $(wc"),
    );
    let after: Vec<_> = ["gen", "shout", "count", "notes"]
        .iter()
        .map(|step| project.keys("pipeline.yaml", step))
        .collect();
    assert_eq!(before[0], after[0]);
    assert_eq!(before[1], after[1]);
    assert_eq!(before[3], after[3]);
    assert!(
        before[2]
            .iter()
            .zip(&after[2])
            .all(|(old, new)| old.0 == new.0 && old.1 != new.1)
    );
    let explained = project.ok(&["explain", "pipeline.yaml", "count", "y"]);
    assert!(
        explained
            .stdout
            .contains("since the last run: params: run; item params"),
        "{}",
        explained.stdout
    );
}

#[test]
fn plan_output_reads_well() {
    let project = chain();
    insta::assert_snapshot!("plan_fresh", project.ok(&["plan", "pipeline.yaml"]).stdout);
    project.ok(&["run", "pipeline.yaml"]);
    project.file("notes/c.txt", "gamma two\n");
    project.file("notes/d.txt", "delta\n");
    insta::assert_snapshot!(
        "plan_after_edit",
        project.ok(&["plan", "pipeline.yaml"]).stdout
    );
    insta::assert_snapshot!(
        "plan_after_edit_json",
        project.ok(&["plan", "pipeline.yaml", "--json"]).stdout
    );
}

#[test]
fn a_failed_item_is_reported_and_never_cached() {
    let project = Project::new();
    project.file(
        "pipeline.yaml",
        r#"version: 1
name: failing
steps:
  check:
    uses: command
    with:
      foreach: [good, bad]
      run: test -f flag-{item} && echo ok > out-{item}.txt
      outputs: ["out-{item}.txt"]
  after:
    uses: command
    needs: [check]
    with:
      run: cat out-good.txt out-bad.txt > both.txt
      outputs: [both.txt]
"#,
    );
    project.file("flag-good", "");
    let ran = project.run(&["run", "pipeline.yaml"]);
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert!(ran.stderr.contains("error: step `check` item `bad`: step `check` item `bad`: `test -f flag-bad && echo ok > out-bad.txt` exited"), "{}", ran.stderr);
    assert!(
        ran.stderr
            .contains("after: skipped (step `check` did not finish)"),
        "{}",
        ran.stderr
    );
    let plan = project.plan("pipeline.yaml");
    assert_eq!(plan[0], ("check".to_string(), Some(2), Some(1)));
    project.file("flag-bad", "");
    let ran = project.ok(&["run", "pipeline.yaml"]);
    assert!(
        ran.stderr.contains("check: done, 1 computed, 1 cached"),
        "{}",
        ran.stderr
    );
    assert_eq!(project.read("both.txt"), "ok\nok\n");
}

#[test]
fn a_missing_declared_output_fails_the_item() {
    let project = Project::new();
    project.file(
        "pipeline.yaml",
        "version: 1\nname: missing\nsteps:\n  make:\n    uses: command\n    with: {run: echo hi > other.txt, outputs: [wanted.txt]}\n",
    );
    let ran = project.run(&["run", "pipeline.yaml"]);
    assert_eq!(ran.code, 1);
    assert!(
        ran.stderr
            .contains("did not produce the declared output wanted.txt"),
        "{}",
        ran.stderr
    );
}

#[test]
fn cached_outputs_are_restored_when_deleted() {
    let project = chain();
    project.ok(&["run", "pipeline.yaml"]);
    // A small output travels inside its item's action record: no object file is made for it.
    let hex = claimflow::cache::Digest::of(b"HELLO CLAIMS\n").hex();
    let object = format!(".claimflow/cache/objects/{}/{}", &hex[..2], &hex[2..]);
    assert!(!project.path(&object).exists());
    std::fs::remove_file(project.path("shout.txt")).unwrap();
    run_computing(&project, 0);
    assert_eq!(project.read("shout.txt"), "HELLO CLAIMS\n");
}

/// An output the workspace still holds is served from it, without looking for its object in the
/// store; the object is needed only to restore the file, and an item whose file and object are
/// both gone is computed again, never a failed restore.
#[test]
fn an_output_in_place_needs_no_object_and_one_gone_from_both_is_computed_again() {
    let project = chain();
    // Larger than a blob carried inside its record: an object file of its own.
    let seed = "hello claims\n".repeat(100);
    let shout = seed.to_uppercase();
    project.file("seed.txt", &seed);
    project.ok(&["run", "pipeline.yaml"]);
    let digest = claimflow::cache::Digest::of(shout.as_bytes());
    let hex = digest.hex();
    let object = project.path(&format!(
        ".claimflow/cache/objects/{}/{}",
        &hex[..2],
        &hex[2..]
    ));
    std::fs::remove_file(&object).unwrap();

    run_computing(&project, 0);
    assert_eq!(project.read("shout.txt"), shout);
    let verified = project.run(&["cache", "verify", "pipeline.yaml"]);
    assert_eq!(verified.code, 1, "{}", verified.stdout);
    assert!(
        verified.stdout.contains(&format!(
            "missing object: {digest} (`shout.txt` of item `main` of step `shout`)"
        )),
        "{}",
        verified.stdout
    );

    // Gone from the workspace too: computed again, and its object stored again.
    std::fs::remove_file(project.path("shout.txt")).unwrap();
    run_computing(&project, 1);
    assert_eq!(project.read("shout.txt"), shout);
    assert!(object.is_file(), "its object is stored again");
    let verified = project.run(&["cache", "verify", "pipeline.yaml"]);
    assert_eq!(verified.code, 0, "{}", verified.stdout);

    // Or `cache gc` drops the record that names the missing object, and the next run computes
    // the item again at once, the file still in place.
    std::fs::remove_file(&object).unwrap();
    project.ok(&["cache", "gc", "pipeline.yaml"]);
    run_computing(&project, 1);
    assert!(object.is_file(), "its object is stored again");
    let verified = project.run(&["cache", "verify", "pipeline.yaml"]);
    assert_eq!(verified.code, 0, "{}", verified.stdout);
}

const SLOW: &str = r#"version: 1
name: slow
steps:
  work:
    uses: command
    with:
      foreach: [a01, a02, a03, a04, a05, a06, a07, a08, a09, a10, a11, a12, a13, a14, a15, a16]
      run: mkdir -p out && sleep 0.05 && echo "{item} done" > out/{item}.txt
      outputs: ["out/{item}.txt"]
  total:
    uses: command
    needs: [work]
    with:
      run: cat out/*.txt > total.txt
      outputs: [total.txt]
"#;

/// Kill -9 mid-run at several points; the next run completes, the cache verifies, and the results
/// equal an uninterrupted run's.
#[test]
fn a_run_killed_at_any_point_leaves_a_sound_cache() {
    let reference = Project::new();
    reference.file("pipeline.yaml", SLOW);
    reference.ok(&["run", "pipeline.yaml", "-j", "2"]);

    let project = Project::new();
    project.file("pipeline.yaml", SLOW);
    for delay_ms in [40, 120, 200, 90, 300] {
        let mut child = project
            .command(&["run", "pipeline.yaml", "-j", "2"])
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        let _ = child.kill();
        let _ = child.wait();
        let verify = project.run(&["cache", "verify", "pipeline.yaml"]);
        assert_eq!(
            verify.code, 0,
            "after a kill at {delay_ms} ms: {}{}",
            verify.stdout, verify.stderr
        );
    }
    project.ok(&["run", "pipeline.yaml"]);
    assert_eq!(project.read("total.txt"), reference.read("total.txt"));
    assert_eq!(
        project.keys("pipeline.yaml", "total"),
        reference.keys("pipeline.yaml", "total")
    );
    project.ok(&["cache", "verify", "pipeline.yaml"]);
}

/// A run killed in the middle of appending to the action log leaves a torn record at its end, and
/// another run may append after it: the cache still verifies, the torn item reads as a miss and is
/// computed again, and `gc` rewrites the log without the torn bytes.
#[test]
fn a_torn_action_log_record_reads_as_a_miss() {
    let project = chain();
    project.ok(&["run", "pipeline.yaml"]);
    let log = project.path(".claimflow/cache/actions.log");
    let mut bytes = std::fs::read(&log).unwrap();
    // Tear the last record (the `notes` or `count` item written last), then let a record of
    // another run follow it: the first 60 bytes of the log are a whole record's frame and key.
    let torn = bytes.len() - 20;
    let first_record = bytes[..200].to_vec();
    bytes.truncate(torn);
    bytes.extend_from_slice(&first_record);
    std::fs::write(&log, &bytes).unwrap();

    let verify = project.ok(&["cache", "verify", "pipeline.yaml"]);
    assert!(
        verify.stdout.contains("bytes of torn action records"),
        "{}",
        verify.stdout
    );
    let ran = project.ok(&["run", "pipeline.yaml"]);
    assert!(
        ran.stderr.contains("run finished: 1 computed, 7 cached"),
        "{}",
        ran.stderr
    );
    project.ok(&["cache", "gc", "pipeline.yaml"]);
    let verify = project.ok(&["cache", "verify", "pipeline.yaml"]);
    assert!(
        !verify.stdout.contains("torn"),
        "gc left torn records: {}",
        verify.stdout
    );
    let ran = project.ok(&["run", "pipeline.yaml"]);
    assert!(
        ran.stderr.contains("run finished: 0 computed, 8 cached"),
        "{}",
        ran.stderr
    );
}

#[test]
fn two_runs_on_one_workdir_do_not_corrupt_it() {
    let project = Project::new();
    project.file("pipeline.yaml", SLOW);
    let first = project
        .command(&["run", "pipeline.yaml", "-q"])
        .spawn()
        .unwrap();
    let second = project
        .command(&["run", "pipeline.yaml", "-q"])
        .spawn()
        .unwrap();
    assert!(first.wait_with_output().unwrap().status.success());
    assert!(second.wait_with_output().unwrap().status.success());
    project.ok(&["cache", "verify", "pipeline.yaml"]);
    let ran = project.ok(&["run", "pipeline.yaml"]);
    assert!(
        ran.stderr.contains("run finished: 0 computed, 17 cached"),
        "{}",
        ran.stderr
    );
}

#[test]
fn gc_keeps_what_the_last_run_used() {
    let project = chain();
    project.ok(&["run", "pipeline.yaml"]);
    project.file("seed.txt", "something else\n");
    project.ok(&["run", "pipeline.yaml"]);
    let gc = project.ok(&["cache", "gc", "pipeline.yaml"]);
    assert!(
        !gc.stdout.contains("removed 0 action records"),
        "{}",
        gc.stdout
    );
    let ran = project.ok(&["run", "pipeline.yaml"]);
    assert!(
        ran.stderr.contains("run finished: 0 computed"),
        "{}",
        ran.stderr
    );
    project.ok(&["cache", "verify", "pipeline.yaml"]);
}

/// Two items of a fan-out writing one file would race for it: the plan refuses them, naming both.
#[test]
fn two_items_declaring_one_output_are_refused_before_anything_runs() {
    let project = Project::new();
    project.file(
        "pipeline.yaml",
        "version: 1\nname: clash\nsteps:\n  gen:\n    uses: command\n    with:\n      \
         foreach: [x, y]\n      run: echo {item} > out.txt\n      outputs: [out.txt]\n",
    );
    for command in ["plan", "run"] {
        let ran = project.run(&[command, "pipeline.yaml"]);
        // The pipeline is wrong, not a step: exit code 2.
        assert_eq!(ran.code, 2, "{}", ran.stderr);
        assert!(
            ran.stderr.contains(
                "step `gen`: items `x` and `y` both declare the output out.txt; give each item \
                 its own (put `{item}` in `outputs`)"
            ),
            "{}",
            ran.stderr
        );
    }
    assert!(!project.path("out.txt").exists(), "nothing ran");
}

#[test]
fn unknown_names_on_the_command_line_are_the_users_error() {
    let project = chain();
    assert_eq!(
        project
            .run(&["run", "pipeline.yaml", "--until", "nope"])
            .code,
        2
    );
    assert_eq!(
        project
            .run(&["run", "pipeline.yaml", "--force", "nope"])
            .code,
        2
    );
    assert_eq!(project.run(&["explain", "pipeline.yaml", "nope"]).code, 2);
    assert_eq!(project.run(&["run", "missing.yaml"]).code, 2);
}

/// Regression: `-C` naming a missing directory exited 1, as if a step had failed.
#[test]
fn a_missing_directory_or_export_on_the_command_line_exits_2() {
    let project = chain();
    let missing = project.path("no-such-dir");
    let ran = project.run(&[
        "-C",
        &missing.display().to_string(),
        "plan",
        "pipeline.yaml",
    ]);
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("cannot enter -C") && ran.stderr.contains("No such file"),
        "the message keeps its cause: {}",
        ran.stderr
    );
    let ran = project.run(&["-C", "pipeline.yaml", "plan", "pipeline.yaml"]);
    assert_eq!(ran.code, 2, "a file is no directory: {}", ran.stderr);
    let ran = project.run(&["cache", "import", "no-such-export", "pipeline.yaml"]);
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("no exported cache at no-such-export"),
        "{}",
        ran.stderr
    );
    assert!(
        !project.path("no-such-export").exists(),
        "nothing made for it"
    );
}

#[test]
fn force_runs_the_step_again_instead_of_restoring_its_outputs() {
    let project = Project::new();
    project.file(
        "pipeline.yaml",
        "version: 1\nname: forced\nsteps:\n  gen:\n    uses: command\n    with:\n      \
         run: echo ran >> runs.log && echo out > out.txt\n      outputs: [out.txt]\n",
    );
    project.ok(&["run", "pipeline.yaml"]);
    let cached = project.ok(&["run", "pipeline.yaml"]);
    assert!(
        cached.stderr.contains("0 computed, 1 cached"),
        "{}",
        cached.stderr
    );
    assert_eq!(project.read("runs.log"), "ran\n");
    let forced = project.ok(&["run", "pipeline.yaml", "--force", "gen"]);
    assert!(
        forced.stderr.contains("gen: done, 1 computed, 0 cached"),
        "{}",
        forced.stderr
    );
    assert_eq!(
        project.read("runs.log"),
        "ran\nran\n",
        "the command ran again"
    );
}

#[test]
fn until_runs_only_the_step_and_what_it_needs() {
    let project = chain();
    let ran = project.ok(&["run", "pipeline.yaml", "--until", "shout"]);
    assert!(
        ran.stderr.contains("count: skipped (left out by --until)"),
        "{}",
        ran.stderr
    );
    assert!(project.path("shout.txt").is_file());
    assert!(!project.path("counts").exists());
    let forced = project.ok(&["run", "pipeline.yaml", "--force", "gen"]);
    assert!(
        forced.stderr.contains("gen: done, 1 computed, 0 cached"),
        "{}",
        forced.stderr
    );
    assert!(
        forced.stderr.contains("shout: done, 0 computed, 1 cached"),
        "{}",
        forced.stderr
    );
}

#[test]
fn an_exported_cache_serves_another_project() {
    let first = chain();
    first.ok(&["run", "pipeline.yaml"]);
    let exported = first.path("exported");
    first.ok(&[
        "cache",
        "export",
        exported.to_str().unwrap(),
        "pipeline.yaml",
    ]);
    let second = chain();
    second.ok(&[
        "cache",
        "import",
        exported.to_str().unwrap(),
        "pipeline.yaml",
    ]);
    let ran = second.ok(&["run", "pipeline.yaml"]);
    assert!(
        ran.stderr.contains("run finished: 0 computed, 8 cached"),
        "{}",
        ran.stderr
    );
    assert_eq!(second.read("shout.txt"), "HELLO CLAIMS\n");
}

#[test]
fn graph_prints_the_steps_and_their_edges() {
    let project = chain();
    let dot = project.ok(&["graph", "pipeline.yaml"]).stdout;
    assert!(dot.starts_with("digraph"), "{dot}");
    assert!(dot.contains("\"gen\" -> \"shout\";"), "{dot}");
    assert!(dot.contains("\"shout\" -> \"count\";"), "{dot}");
    let mermaid = project
        .ok(&["graph", "pipeline.yaml", "--format", "mermaid"])
        .stdout;
    assert!(mermaid.contains("s0[\"gen<br/>(command)\"]"), "{mermaid}");
    assert!(mermaid.contains("s1 --> s2"), "{mermaid}");
}

/// Regression: a `command` step had no timeout, so a hung command held its run forever.
#[test]
fn a_command_past_its_timeout_is_stopped_and_not_cached() {
    let project = Project::new();
    project.file(
        "pipeline.yaml",
        r#"version: 1
name: slow
steps:
  slow: {uses: command, with: {run: "sleep 30 && echo late > late.txt", outputs: [late.txt], timeout: 0.3}}
"#,
    );
    let started = std::time::Instant::now();
    let ran = project.run(&["run", "pipeline.yaml"]);
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(
        ran.stderr.contains("ran longer than its timeout of 0.3s"),
        "{}",
        ran.stderr
    );
    assert_eq!(
        project.plan("pipeline.yaml")[0].2,
        Some(1),
        "nothing cached"
    );
}

/// Regression: a `command` step passed the user's whole environment (API keys included) to the
/// command, and still does not once `env:` names what it gets: without `env:` it gets the scrubbed
/// default alone (`PATH`, `HOME`, the locale), with `env: [X]` that and X, and a model's key
/// never, named or not.
#[test]
fn a_command_gets_only_the_environment_it_names() {
    let project = Project::new();
    project.file(
        "pipeline.yaml",
        r#"version: 1
name: env
models:
  hosted: {provider: openai, model: gpt-test, api_key_env: CLAIMFLOW_TEST_MODEL_KEY}
steps:
  show:
    uses: command
    with:
      run: 'echo "[$CLAIMFLOW_TEST_SECRET][$CLAIMFLOW_TEST_KEPT][$CLAIMFLOW_TEST_MODEL_KEY][$LANG]" > env.txt'
      outputs: [env.txt]
      env: [CLAIMFLOW_TEST_KEPT, CLAIMFLOW_TEST_MODEL_KEY]
  bare:
    uses: command
    with:
      run: 'env | cut -d= -f1 | sort > bare.txt; echo "[$FAKE_API_KEY][$CLAIMFLOW_TEST_KEPT]" >> bare.txt'
      outputs: [bare.txt]
"#,
    );
    let ran = project
        .command(&["run", "pipeline.yaml"])
        .env("CLAIMFLOW_TEST_SECRET", "hidden")
        .env("CLAIMFLOW_TEST_KEPT", "kept")
        .env("CLAIMFLOW_TEST_MODEL_KEY", "sk-model")
        .env("FAKE_API_KEY", "sk-fake")
        .env("LANG", "de_DE.UTF-8")
        .output()
        .unwrap();
    crate::common::assert_ran(&ran, "the run");
    assert_eq!(project.read("env.txt"), "[][kept][][C.UTF-8]\n");
    // `sh` adds PWD, SHLVL and `_` of its own; everything else is the scrubbed default.
    let bare = project.read("bare.txt");
    let names: Vec<&str> = bare
        .lines()
        .filter(|line| !["PWD", "SHLVL", "_", "OLDPWD"].contains(line))
        .collect();
    assert_eq!(names, ["HOME", "LANG", "LC_ALL", "PATH", "[][]"], "{bare}");
}
