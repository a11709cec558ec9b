//! How fast model calls go when the model is not the bottleneck, and what a fully cached re-run
//! of many model items costs.
//!
//! 1. `calls`: 2,000 calls through one [`ModelClient`] at concurrency 32 to a fake
//!    OpenAI-compatible server that answers each after 200 ms. The ideal is 2000 / 32 × 0.2 s =
//!    12.5 s; the target is within 1.15× of it.
//! 2. `cached`: an `llm-arm` step over 20,000 claims (200 commits of a generated repository), run
//!    once against the fake server answering at once, then run again with everything cached; the
//!    second run's wall time (planning, 20,000 lookups, publishing the predictions) should be
//!    under 0.5 s.
//!
//! Usage: `cargo run --release --example models_bench [calls|cached|all]`. Prints JSON lines.

#[path = "../tests/it/models/fake_server.rs"]
#[expect(
    dead_code,
    reason = "shared with the integration tests, which use every helper"
)]
mod fake_server;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use claimflow::cache::Digest;
use claimflow::engine::{
    Engine, ItemOutput, ItemPlan, ItemResult, NoParams, ParamsDecl, Role, RunOptions, Silent,
    StepContext, StepError, StepKind, Upstream,
};
use claimflow::models::{ChatRequest, ModelClient, Question};
use claimflow::pipeline::Provider;
use claimflow::pipeline::{ModelSpec, load_str};
use claimflow::records::ClaimRecord;
use claimflow::steps::{LlmArm, Registry};
use fake_server::{FakeServer, Reply};
use serde_json::json;

/// The allocator the `claimflow` binary uses, so the cached re-run costs here what it costs there.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn answer() -> serde_json::Value {
    json!({
        "choices": [{"message": {"role": "assistant", "content": "{\"verdict\": \"held\"}"},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 900, "completion_tokens": 6},
    })
}

fn calls() {
    const CALLS: usize = 2_000;
    const CONCURRENCY: usize = 32;
    let server = FakeServer::always(Reply::json(answer()).after(Duration::from_millis(200)));
    let spec = ModelSpec {
        concurrency: CONCURRENCY,
        ..ModelSpec::new(Provider::Openai, "bench")
    };
    let client = Arc::new(ModelClient::new("bench", &spec, &server.url("/v1"), None).unwrap());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    runtime.block_on(async {
        let mut tasks = tokio::task::JoinSet::new();
        for index in 0..CALLS {
            let client = Arc::clone(&client);
            tasks.spawn(async move {
                let request = ChatRequest {
                    system: "Answer ONLY with JSON.".into(),
                    user: format!("CLAIM:\ntest {index}\n\nDIFF:\n"),
                    format: Question::A6Risk.format(),
                };
                client.complete(&request).await
            });
        }
        while let Some(done) = tasks.join_next().await {
            done.unwrap().unwrap();
        }
    });
    let seconds = started.elapsed().as_secs_f64();
    let ideal = CALLS as f64 / CONCURRENCY as f64 * 0.2;
    assert_eq!(server.count(), CALLS);
    println!(
        "{}",
        json!({"bench": "calls", "calls": CALLS, "concurrency": CONCURRENCY,
               "most_in_flight": server.most_in_flight(), "seconds": seconds,
               "ideal": ideal, "ratio": seconds / ideal, "target": 1.15})
    );
}

/// The claims of `claims.json`, as `mine-claims` would give them.
struct ClaimsFromFile;

impl StepKind for ClaimsFromFile {
    fn name(&self) -> &'static str {
        "mine-claims"
    }
    fn version(&self) -> u32 {
        1
    }
    fn about(&self) -> &'static str {
        "claims read from claims.json"
    }
    fn params(&self) -> ParamsDecl {
        ParamsDecl::of::<NoParams>()
    }
    fn role(&self, _: &claimflow::pipeline::StepSpec) -> Role {
        Role::Claims
    }
    fn items(&self, ctx: &StepContext, _: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        let bytes = std::fs::read(ctx.root.join("claims.json")).unwrap();
        Ok(vec![
            ItemPlan::new("all").file("claims.json", Digest::of(&bytes)),
        ])
    }
    fn run(&self, ctx: &StepContext, _: &ItemPlan, _: &Upstream) -> Result<ItemOutput, StepError> {
        let bytes = std::fs::read(ctx.root.join("claims.json")).unwrap();
        let claims: Vec<ClaimRecord> = serde_json::from_slice(&bytes).unwrap();
        Ok(ItemOutput::records(claims))
    }
    fn publish(&self, _: &StepContext, _: &[ItemResult]) -> Result<(), StepError> {
        Ok(())
    }
}

/// A repository of `commits` commits, each changing one source file; the commit ids in order.
fn repository(path: &Path, commits: usize) -> Vec<String> {
    let repository = git2::Repository::init(path).unwrap();
    let signature =
        git2::Signature::new("bench", "bench@example.com", &git2::Time::new(0, 0)).unwrap();
    let mut ids = Vec::new();
    let mut parent: Option<git2::Oid> = None;
    for index in 0..=commits {
        std::fs::create_dir_all(path.join("pkg")).unwrap();
        std::fs::write(
            path.join("pkg/a.py"),
            format!("def f():\n    return {index}\n"),
        )
        .unwrap();
        let mut index_file = repository.index().unwrap();
        index_file.add_path(Path::new("pkg/a.py")).unwrap();
        index_file.write().unwrap();
        let tree = repository
            .find_tree(index_file.write_tree().unwrap())
            .unwrap();
        let parents: Vec<git2::Commit> = parent
            .iter()
            .map(|id| repository.find_commit(*id).unwrap())
            .collect();
        let parents: Vec<&git2::Commit> = parents.iter().collect();
        let id = repository
            .commit(
                Some("refs/heads/main"),
                &signature,
                &signature,
                &format!("c{index}"),
                &tree,
                &parents,
            )
            .unwrap();
        ids.push(id.to_string());
        parent = Some(id);
    }
    ids
}

fn cached() {
    const COMMITS: usize = 200;
    const PER_COMMIT: usize = 100;
    let server = FakeServer::always(Reply::json(answer()));
    let project = tempfile::tempdir().unwrap();
    let root = project.path();
    let ids = repository(&root.join("repo"), COMMITS);
    let mut claims = Vec::new();
    for commit in 0..COMMITS {
        for test in 0..PER_COMMIT {
            let node = format!("tests/test_a.py::test_{test}");
            claims.push(json!({
                "id": format!("lib@{}::{node}", ids[commit]), "repo": "lib",
                "parent": ids[commit], "commit": ids[commit + 1], "node": node,
                "source": format!("def test_{test}():\n    assert f() == {commit}\n"),
                "assertions": [format!("assert f() == {commit}")], "fixtures": [],
            }));
        }
    }
    std::fs::write(
        root.join("claims.json"),
        serde_json::to_string(&claims).unwrap(),
    )
    .unwrap();
    std::fs::create_dir(root.join("prompts")).unwrap();
    std::fs::write(
        root.join("prompts/a6_risk.txt"),
        "Answer ONLY with {\"verdict\": ...}.\n",
    )
    .unwrap();
    let text = format!(
        "version: 1\nname: bench\nrepos:\n  - {{name: lib, path: repo, branch: main}}\nmodels:\n  judge: {{provider: openai, model: bench, base_url: \"{}\", concurrency: 64}}\nsteps:\n  claims: {{uses: mine-claims}}\n  a6_risk: {{uses: llm-arm, needs: [claims], with: {{question: a6_risk, prompt: prompts/a6_risk.txt, model: judge}}}}\n",
        server.url("/v1")
    );
    let registry = Registry::with(vec![
        Arc::new(ClaimsFromFile) as Arc<dyn StepKind>,
        Arc::new(LlmArm::default()),
    ]);
    let pipeline = load_str(&text, Path::new("bench.yaml"), root, &registry).unwrap();
    let options = RunOptions {
        jobs: 64,
        ..RunOptions::default()
    };
    let started = Instant::now();
    Engine::new(&pipeline, &registry, &Silent)
        .unwrap()
        .run(&options)
        .unwrap();
    let first = started.elapsed().as_secs_f64();
    assert_eq!(server.count(), COMMITS * PER_COMMIT);
    // More re-runs for a profiler to sample (`MODELS_BENCH_RERUNS`); three by default.
    let reruns: usize = std::env::var("MODELS_BENCH_RERUNS")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(3);
    let (mut best, mut best_cpu) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..reruns {
        let (started, cpu) = (Instant::now(), cpu_seconds());
        Engine::new(&pipeline, &registry, &Silent)
            .unwrap()
            .run(&options)
            .unwrap();
        best = best.min(started.elapsed().as_secs_f64());
        best_cpu = best_cpu.min(cpu_seconds() - cpu);
    }
    assert_eq!(
        server.count(),
        COMMITS * PER_COMMIT,
        "a cached re-run sends nothing"
    );
    println!(
        "{}",
        json!({"bench": "cached", "items": COMMITS * PER_COMMIT, "first_run_seconds": first,
               "rerun_seconds": best, "rerun_cpu_seconds": best_cpu, "target": 0.5})
    );
}

/// CPU seconds (user + system) this process has used so far, all threads.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct we pass and touches nothing else.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let seconds = |time: libc::timeval| time.tv_sec as f64 + time.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

fn main() {
    let which = std::env::args().nth(1).unwrap_or_else(|| "all".to_string());
    if matches!(which.as_str(), "calls" | "all") {
        calls();
    }
    if matches!(which.as_str(), "cached" | "all") {
        cached();
    }
}
