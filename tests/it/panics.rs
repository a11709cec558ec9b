//! A step kind whose code panics on one item: the run ends with an error naming the step and the
//! item, the steps needing it are skipped, nothing of the item is cached, and the run never hangs
//! (a panic used to unwind through the step's worker scope and leave every step waiting for it
//! blocked forever).

use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use claimflow::engine::{
    Engine, EngineError, ErrorClass, Event, Execution, ItemFuture, ItemOutput, ItemPlan,
    ItemResult, NoParams, ParamsDecl, Recording, RunOptions, StepContext, StepError, StepKind,
    Upstream,
};
use claimflow::pipeline::load_str;
use claimflow::steps::Registry;

/// Items `fine` and `boom`; `boom` panics, on a thread or as a future.
struct Panicky {
    name: &'static str,
    execution: Execution,
}

impl Panicky {
    fn compute(item: &ItemPlan) -> Result<ItemOutput, StepError> {
        if item.id == "boom" {
            panic!("item {} exploded", item.id);
        }
        Ok(ItemOutput::records([serde_json::json!({"item": item.id})]))
    }
}

impl StepKind for Panicky {
    fn name(&self) -> &'static str {
        self.name
    }
    fn version(&self) -> u32 {
        1
    }
    fn about(&self) -> &'static str {
        "two items, one of which panics"
    }
    fn params(&self) -> ParamsDecl {
        ParamsDecl::of::<NoParams>()
    }
    fn execution(&self) -> Execution {
        self.execution
    }
    fn items(&self, _: &StepContext, _: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        Ok(vec![ItemPlan::new("fine"), ItemPlan::new("boom")])
    }
    fn run(&self, _: &StepContext, item: &ItemPlan, _: &Upstream) -> Result<ItemOutput, StepError> {
        Self::compute(item)
    }
    fn run_async<'a>(
        &'a self,
        _: &'a StepContext<'a>,
        item: &'a ItemPlan,
        _: &'a Upstream,
    ) -> ItemFuture<'a> {
        Box::pin(async move { Self::compute(item) })
    }
    fn publish(&self, _: &StepContext, _: &[ItemResult]) -> Result<(), StepError> {
        Ok(())
    }
}

/// A step that plans nothing but needs the panicking one.
struct Downstream;

impl StepKind for Downstream {
    fn name(&self) -> &'static str {
        "downstream"
    }
    fn version(&self) -> u32 {
        1
    }
    fn about(&self) -> &'static str {
        "needs the panicking step"
    }
    fn params(&self) -> ParamsDecl {
        ParamsDecl::of::<NoParams>()
    }
    fn items(&self, _: &StepContext, _: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        Ok(Vec::new())
    }
    fn publish(&self, _: &StepContext, _: &[ItemResult]) -> Result<(), StepError> {
        Ok(())
    }
}

const PIPELINE: &str = "version: 1\nname: panics\nsteps:\n  blocking: {uses: on-a-thread}\n  \
                        future: {uses: as-a-future}\n  after: {uses: downstream, needs: [blocking, \
                        future]}\n";

/// Runs the pipeline on another thread; fails the test if the run does not end within a minute.
fn run(
    root: &Path,
) -> (
    Result<claimflow::engine::RunSummary, EngineError>,
    Vec<Event>,
) {
    let root = root.to_path_buf();
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let registry = Registry::with(vec![
            Arc::new(Panicky {
                name: "on-a-thread",
                execution: Execution::Blocking,
            }) as Arc<dyn StepKind>,
            Arc::new(Panicky {
                name: "as-a-future",
                execution: Execution::Async,
            }),
            Arc::new(Downstream),
        ]);
        let pipeline = load_str(PIPELINE, Path::new("pipeline.yaml"), &root, &registry)
            .unwrap_or_else(|problems| panic!("{problems}"));
        let events = Recording::default();
        let engine = Engine::new(&pipeline, &registry, &events).unwrap();
        let result = engine.run(&RunOptions::default());
        let _ = done.send((result, events.events()));
    });
    finished
        .recv_timeout(Duration::from_secs(60))
        .expect("the run ended instead of hanging")
}

#[test]
fn a_panicking_item_fails_its_step_naming_the_item_and_the_run_ends() {
    let root = tempfile::tempdir().unwrap();
    let (result, events) = run(root.path());
    match result {
        Err(EngineError::StepsFailed(steps)) => assert_eq!(steps, ["blocking", "future"]),
        other => panic!("{other:?}: {events:?}"),
    }
    for step in ["blocking", "future"] {
        let failed: Vec<&String> = events
            .iter()
            .filter_map(|event| match event {
                Event::ItemFailed {
                    step: failed,
                    item,
                    error,
                    class: ErrorClass::Failure,
                } if failed == step && item == "boom" => Some(error),
                _ => None,
            })
            .collect();
        assert_eq!(failed.len(), 1, "{step}: {events:?}");
        assert!(
            failed[0].contains("panicked: item boom exploded"),
            "{}",
            failed[0]
        );
    }
    assert!(
        events.iter().any(|event| matches!(
            event,
            Event::StepSkipped { step, .. } if step == "after"
        )),
        "{events:?}"
    );

    // Nothing of the panicked item was cached: it panics again, and the other item is cached.
    let (again, events) = run(root.path());
    assert!(
        matches!(again, Err(EngineError::StepsFailed(_))),
        "{events:?}"
    );
    assert!(events.iter().any(|event| matches!(
        event,
        Event::StepPlanned { step, total: 2, cached: 1 } if step == "blocking"
    )));
}
