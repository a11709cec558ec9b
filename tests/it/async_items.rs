//! Items computed as futures on the engine's runtime: transient failures retried with backoff and
//! cached once, `Pool::Model` permits bounding requests in flight, and a cancelled run that caches
//! nothing half-done.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use claimflow::engine::{
    Engine, EngineError, Event, Execution, ItemFuture, ItemOutput, ItemPlan, ItemResult, NoParams,
    ParamsDecl, Pool, Recording, RetryPolicy, RunOptions, StepContext, StepError, StepKind,
    Upstream,
};
use claimflow::pipeline::load_str;
use claimflow::steps::Registry;

/// How an item of [`Remote`] behaves.
#[derive(Default)]
struct Behaviour {
    /// Transient failures before an item succeeds.
    failures: usize,
    /// Items that wait until cancelled (a request that never answers).
    hang: Vec<&'static str>,
    /// Sleep per request, to observe how many are in flight.
    latency: Duration,
    /// Items `i0`, `i1`, … instead of the six `a` … `f`.
    count: usize,
}

/// A step kind whose items are requests to a remote model: async, in the model's pool.
struct Remote {
    behaviour: Mutex<Behaviour>,
    attempts: Mutex<BTreeMap<String, usize>>,
    in_flight: AtomicUsize,
    peak: AtomicUsize,
    started: AtomicBool,
    /// The most key-lock files this process held open at once, seen from inside a request.
    peak_locks: AtomicUsize,
}

impl Remote {
    fn new(behaviour: Behaviour) -> Arc<Self> {
        Arc::new(Remote {
            behaviour: Mutex::new(behaviour),
            attempts: Mutex::new(BTreeMap::new()),
            in_flight: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            started: AtomicBool::new(false),
            peak_locks: AtomicUsize::new(0),
        })
    }

    fn attempts(&self, item: &str) -> usize {
        self.attempts
            .lock()
            .unwrap()
            .get(item)
            .copied()
            .unwrap_or(0)
    }
}

impl StepKind for Remote {
    fn name(&self) -> &'static str {
        "remote"
    }
    fn version(&self) -> u32 {
        1
    }
    fn about(&self) -> &'static str {
        "requests to a model, for engine tests"
    }
    fn params(&self) -> ParamsDecl {
        ParamsDecl::of::<NoParams>()
    }
    fn execution(&self) -> Execution {
        Execution::Async
    }
    fn items(&self, _: &StepContext, _: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        let count = self.behaviour.lock().unwrap().count;
        let ids: Vec<String> = if count == 0 {
            ["a", "b", "c", "d", "e", "f"].map(String::from).to_vec()
        } else {
            (0..count).map(|index| format!("i{index}")).collect()
        };
        Ok(ids
            .into_iter()
            .map(|id| ItemPlan::new(id).pool(Pool::Model("m".into())))
            .collect())
    }
    fn run_async<'a>(
        &'a self,
        ctx: &'a StepContext<'a>,
        item: &'a ItemPlan,
        _upstream: &'a Upstream,
    ) -> ItemFuture<'a> {
        Box::pin(async move {
            let attempt = {
                let mut attempts = self.attempts.lock().unwrap();
                let count = attempts.entry(item.id.clone()).or_insert(0);
                *count += 1;
                *count
            };
            let (failures, hang, latency) = {
                let behaviour = self.behaviour.lock().unwrap();
                (
                    behaviour.failures,
                    behaviour.hang.contains(&item.id.as_str()),
                    behaviour.latency,
                )
            };
            let locks = open_files(&ctx.store.root().join("locks").join("keys"));
            self.peak_locks.fetch_max(locks, Ordering::SeqCst);
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.peak.fetch_max(now, Ordering::SeqCst);
            self.started.store(true, Ordering::SeqCst);
            tokio::time::sleep(latency).await;
            if hang {
                tokio::time::sleep(Duration::from_secs(600)).await;
            }
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            if attempt <= failures {
                return Err(StepError::transient(
                    format!("HTTP 429 on attempt {attempt}"),
                    None,
                ));
            }
            Ok(ItemOutput::records([serde_json::json!({"item": item.id})]))
        })
    }
    fn publish(&self, _: &StepContext, _: &[ItemResult]) -> Result<(), StepError> {
        Ok(())
    }
}

/// How many of this process's file descriptors are open on `path`.
fn open_files(path: &Path) -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|entries| {
            entries
                .flatten()
                .filter(|entry| std::fs::read_link(entry.path()).is_ok_and(|target| target == path))
                .count()
        })
        .unwrap_or(0)
}

const PIPELINE: &str = "version: 1\nname: remote\nmodels:\n  m: {provider: openai, model: x, \
                        concurrency: 2}\nsteps:\n  ask: {uses: remote}\n";

fn options() -> RunOptions {
    RunOptions {
        retry: RetryPolicy {
            retries: 3,
            base: Duration::from_millis(1),
            cap: Duration::from_millis(20),
        },
        ..RunOptions::default()
    }
}

fn run(
    root: &Path,
    kind: &Arc<Remote>,
    options: &RunOptions,
) -> (
    Result<claimflow::engine::RunSummary, EngineError>,
    Vec<Event>,
) {
    let registry = Registry::with(vec![kind.clone() as Arc<dyn StepKind>]);
    let pipeline = load_str(PIPELINE, Path::new("pipeline.yaml"), root, &registry)
        .unwrap_or_else(|problems| panic!("{problems}"));
    let events = Recording::default();
    let engine = Engine::new(&pipeline, &registry, &events).unwrap();
    let result = engine.run(options);
    (result, events.events())
}

#[test]
fn transient_failures_are_retried_with_a_line_each_and_cached_once() {
    let root = tempfile::tempdir().unwrap();
    let kind = Remote::new(Behaviour {
        failures: 2,
        ..Behaviour::default()
    });
    let (result, events) = run(root.path(), &kind, &options());
    let summary = result.unwrap_or_else(|error| panic!("{error}: {events:?}"));
    assert_eq!(summary.computed(), 6);
    assert_eq!(kind.attempts("a"), 3);
    let retries: Vec<(String, u32)> = events
        .iter()
        .filter_map(|event| match event {
            Event::ItemRetry { item, attempt, .. } if item == "a" => Some((item.clone(), *attempt)),
            _ => None,
        })
        .collect();
    assert_eq!(retries, [("a".to_string(), 1), ("a".to_string(), 2)]);

    let (again, _) = run(root.path(), &kind, &options());
    let again = again.unwrap();
    assert_eq!((again.computed(), again.cached()), (0, 6));
    assert_eq!(kind.attempts("a"), 3, "a cached item is not asked again");
}

#[test]
fn retries_run_out_and_the_failure_is_never_cached() {
    let root = tempfile::tempdir().unwrap();
    let kind = Remote::new(Behaviour {
        failures: 10,
        ..Behaviour::default()
    });
    let (result, _) = run(root.path(), &kind, &options());
    assert!(matches!(result, Err(EngineError::StepsFailed(_))));
    assert_eq!(kind.attempts("a"), 4, "one attempt and three retries");
    kind.behaviour.lock().unwrap().failures = 0;
    let (again, _) = run(root.path(), &kind, &options());
    assert_eq!(again.unwrap().computed(), 6);
}

#[test]
fn a_models_concurrency_bounds_the_requests_in_flight() {
    let root = tempfile::tempdir().unwrap();
    let kind = Remote::new(Behaviour {
        latency: Duration::from_millis(30),
        ..Behaviour::default()
    });
    let (result, _) = run(root.path(), &kind, &options());
    result.unwrap();
    assert_eq!(kind.peak.load(Ordering::SeqCst), 2);
}

/// The models bench's 20,000 calls failed with "Too many open files": every item was started at
/// once, and each held its key's lock file while it waited for one of the model's slots.
#[test]
fn items_waiting_for_a_slot_are_bounded_and_hold_few_lock_files() {
    let root = tempfile::tempdir().unwrap();
    let kind = Remote::new(Behaviour {
        latency: Duration::from_millis(2),
        count: 300,
        ..Behaviour::default()
    });
    let (result, events) = run(root.path(), &kind, &options());
    let summary = result.unwrap_or_else(|error| panic!("{error}: {events:?}"));
    assert_eq!(summary.computed(), 300);
    assert_eq!(kind.peak.load(Ordering::SeqCst), 2);
    // The model's two slots, twice over: items started ahead of a free slot, not all 300.
    let locks = kind.peak_locks.load(Ordering::SeqCst);
    assert!(
        (1..=4).contains(&locks),
        "{locks} key-lock files open at once"
    );
}

#[test]
fn a_cancelled_run_caches_nothing_half_done_and_the_next_run_completes_it() {
    let root = tempfile::tempdir().unwrap();
    let kind = Remote::new(Behaviour {
        hang: vec!["a"],
        ..Behaviour::default()
    });
    let options = options();
    let cancel = options.cancel.clone();
    let watcher = {
        let kind = kind.clone();
        std::thread::spawn(move || {
            while !kind.started.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(5));
            }
            // Let the items that do answer finish, then stop the one that hangs.
            std::thread::sleep(Duration::from_millis(200));
            cancel.cancel();
        })
    };
    let (result, events) = run(root.path(), &kind, &options);
    watcher.join().unwrap();
    assert!(result.is_err(), "{events:?}");
    let failed: Vec<&str> = events
        .iter()
        .filter_map(|event| match event {
            Event::ItemFailed { item, .. } => Some(item.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(failed, ["a"]);

    kind.behaviour.lock().unwrap().hang.clear();
    let (again, _) = run(root.path(), &kind, &self::options());
    let again = again.unwrap();
    assert_eq!((again.computed(), again.cached()), (1, 5));
    assert_eq!(kind.attempts("a"), 2);
}
