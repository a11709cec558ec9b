//! A suite that only timed out because the machine was too busy is no result: the oracle tries it
//! again, and when it still cannot finish the commit's item fails without caching anything. The
//! bug this pins: a suite starved of CPU on a loaded machine (load 20 and more) got `unknown`
//! labels, cached, and so stayed unknown on every later run.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use claimflow::engine::{Engine, Event, Recording, RunOptions, RunSummary, StepStatus};
use claimflow::steps::FixedEnvironment;

use super::python::environment;
use super::step::{assertion_flip_on_main, pipeline_text};

/// Busy loops that keep every core of the machine wanted several times over while they live.
struct CpuHogs(Vec<Child>);

impl CpuHogs {
    fn start() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, usize::from);
        let hogs = (0..6 * cores)
            .map(|_| {
                Command::new("sh")
                    .args(["-c", "while :; do :; done"])
                    .stdin(Stdio::null())
                    .spawn()
                    .expect("start a busy loop")
            })
            .collect();
        CpuHogs(hogs)
    }
}

impl Drop for CpuHogs {
    fn drop(&mut self) {
        for hog in &mut self.0 {
            let _ = hog.kill();
            let _ = hog.wait();
        }
    }
}

fn truth_step(summary: &RunSummary) -> &StepStatus {
    &summary
        .steps
        .iter()
        .find(|(name, _)| name == "truth")
        .expect("the truth step ran")
        .1
}

#[test]
fn a_starved_suite_fails_uncached_and_a_quiet_rerun_labels_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (flip, registry) = assertion_flip_on_main(root, Arc::new(FixedEnvironment(environment())));
    let run = |timeout: u32| {
        let file = root.join("pipeline.yaml");
        std::fs::write(
            &file,
            pipeline_text(&format!("{{runs: 2, timeout: {timeout}}}")),
        )
        .unwrap();
        let pipeline = claimflow::pipeline::load(&file, root, &registry)
            .unwrap_or_else(|errors| panic!("{errors:?}"));
        let reporter = Recording::default();
        let engine = Engine::new(&pipeline, &registry, &reporter).unwrap();
        let summary = engine.run(&RunOptions::default());
        (summary, reporter.events())
    };
    let truth = || std::fs::read_to_string(root.join("results/oracle/truth.jsonl")).ok();

    // A second of limit, with the cores wanted six times over: pytest cannot even start.
    let (starved, events) = {
        let _hogs = CpuHogs::start();
        run(1)
    };
    let starved_truth = truth();
    match starved {
        Err(error) => {
            let failure = events
                .iter()
                .find_map(|event| match event {
                    Event::ItemFailed { step, error, .. } if step == "truth" => Some(error),
                    _ => None,
                })
                .unwrap_or_else(|| panic!("{error}, but no item failed: {events:?}"));
            assert!(failure.contains("the machine was too busy"), "{failure}");
            assert!(failure.contains(&flip.commit.to_string()), "{failure}");
            assert!(failure.contains("load "), "{failure}");
            assert_eq!(starved_truth, None);
        }
        // Some attempt finished after all: then it gave real labels, not unknowns.
        Ok(summary) => {
            assert!(
                matches!(truth_step(&summary), StepStatus::Done { .. }),
                "{events:?}"
            );
            let labels = starved_truth.clone().unwrap_or_default();
            assert!(!labels.contains("unknown"), "{labels}");
        }
    }

    // The machine quiet again (and a limit to spare): the item is computed, not served a
    // cached unknown, and labels the claims.
    let (quiet, events) = run(120);
    let quiet = quiet.unwrap_or_else(|error| panic!("{error}: {events:?}"));
    match truth_step(&quiet) {
        StepStatus::Done { computed, cached } => match &starved_truth {
            None => assert_eq!((*computed, *cached), (1, 0), "{events:?}"),
            Some(_) => assert_eq!((*computed, *cached), (0, 1), "{events:?}"),
        },
        other => panic!("{other:?}: {events:?}"),
    }
    let labels: Vec<(String, String)> = truth()
        .expect("the quiet run writes truth.jsonl")
        .lines()
        .map(|line| {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            let node = record["claim"]
                .as_str()
                .unwrap()
                .rsplit("::")
                .next()
                .unwrap();
            (
                node.to_string(),
                record["label"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        labels,
        [
            ("test_add".to_string(), "flipped".to_string()),
            ("test_mul".to_string(), "held".to_string())
        ]
    );
    if let Some(starved_truth) = starved_truth {
        assert_eq!(truth().unwrap(), starved_truth);
    }
}
