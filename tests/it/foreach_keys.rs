//! A `command` step's `foreach:` list stays out of its items' keys: each item's element is already
//! in its key, so growing the list computes only the new element (and the benchmark's 5,000-item
//! fan-out does not carry 5,000 elements in every key).

use crate::common::project::Project;

fn pipeline(items: &[&str]) -> String {
    format!(
        r#"version: 1
name: fan
steps:
  gen:
    uses: command
    with:
      foreach: [{}]
      run: mkdir -p out && echo {{item}} > out/{{item}}.txt
      outputs: ["out/{{item}}.txt"]
"#,
        items.join(", ")
    )
}

#[test]
fn adding_a_foreach_element_computes_only_that_element() {
    let project = Project::new();
    project.file("pipeline.yaml", &pipeline(&["a", "b", "c"]));
    project.ok(&["run", "pipeline.yaml"]);
    let before = project.keys("pipeline.yaml", "gen");

    project.file("pipeline.yaml", &pipeline(&["a", "b", "c", "d"]));
    let after = project.keys("pipeline.yaml", "gen");
    assert_eq!(after[..3], before[..]);
    let ran = project.ok(&["run", "pipeline.yaml"]);
    assert!(
        ran.stderr.contains("run finished: 1 computed, 3 cached"),
        "{}",
        ran.stderr
    );
    assert_eq!(project.read("out/d.txt"), "d\n");
}
