//! The command line: clap definitions (doc comments are the help text) and the verbs they run.
//! Errors go back to `main`, the one place that turns them into exit codes.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};

use crate::cache::Store;
use crate::engine::{Dag, Engine, EngineError, RunOptions, Silent, live_set};
use crate::pipeline::ExecutorKind;
use crate::pipeline::{self, Pipeline};
use crate::progress::{Progress, Verbosity};
use crate::slurm::executor::SlurmExecutor;
use crate::steps::Registry;

/// Decide which stored claims about a repository a commit has made false, and measure how well each
/// strategy decides it. Runs pipelines declared in YAML; every item of work is cached by content.
#[derive(Debug, Parser)]
#[command(name = "claimflow", version, about, long_about = None)]
pub struct Cli {
    /// Run as if started in DIR: the project root that relative paths in a pipeline resolve against.
    #[arg(short = 'C', global = true, value_name = "DIR")]
    pub directory: Option<PathBuf>,

    /// Print nothing but errors.
    #[arg(short, long, global = true)]
    pub quiet: bool,

    #[command(subcommand)]
    pub command: Verb,
}

#[derive(Debug, Subcommand)]
pub enum Verb {
    /// Run a pipeline: compute what the cache lacks, then write the result files.
    Run {
        /// The pipeline file.
        pipeline: PathBuf,
        /// How many CPU-bound items may run at once (default: the number of cores).
        #[arg(short, long, value_name = "N")]
        jobs: Option<usize>,
        /// How many pytest processes may run at once (default: the number of cores).
        #[arg(long, value_name = "N")]
        pytest_slots: Option<usize>,
        /// Recompute this step's items even when cached (repeatable).
        #[arg(long, value_name = "STEP")]
        force: Vec<String>,
        /// Run only this step and the steps it needs.
        #[arg(long, value_name = "STEP")]
        until: Option<String>,
        /// Make no network requests: repositories are not fetched and model calls must be cached.
        #[arg(long)]
        offline: bool,
        /// Where the items that run pytest (mine-claims, oracle, testmon) are computed: here, or
        /// one Slurm job each (default: the pipeline's `executor:`, else local).
        #[arg(long, value_enum, value_name = "WHERE")]
        executor: Option<ExecutorKind>,
    },
    /// Show what a run would compute, and why, without computing anything.
    Plan {
        /// The pipeline file.
        pipeline: PathBuf,
        /// Print JSON: {"steps":[{"name","uses","items_total","items_to_run","reasons"}]}.
        #[arg(long)]
        json: bool,
        /// Plan only this step and the steps it needs.
        #[arg(long, value_name = "STEP")]
        until: Option<String>,
        /// Plan as if this step were forced (repeatable).
        #[arg(long, value_name = "STEP")]
        force: Vec<String>,
    },
    /// Show the key record of a step's items and which part changed since the last run.
    Explain {
        /// The pipeline file.
        pipeline: PathBuf,
        /// The step.
        step: String,
        /// One item of the step (default: all of them).
        item: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the step graph.
    Graph {
        /// The pipeline file.
        pipeline: PathBuf,
        /// The language to print it in.
        #[arg(long, value_enum, default_value = "dot")]
        format: GraphFormat,
    },
    /// Print the path of a run's results page (`index.html`, written by its `report` step); with
    /// two runs, write a page of the claims whose verdict changed between them and print its path.
    View {
        /// A pipeline file or a results directory; a second one to compare the first with.
        #[arg(num_args = 1..=2, required = true, value_name = "PIPELINE|RESULTS")]
        runs: Vec<PathBuf>,
        /// Serve the (first) results directory on 127.0.0.1 until Ctrl-C, for browsers that
        /// restrict pages opened from files.
        #[arg(long)]
        serve: bool,
        /// The port to serve on (default: any free port).
        #[arg(long, value_name = "N", default_value_t = 0, requires = "serve")]
        port: u16,
    },
    /// Print the JSON Schema of a pipeline file (its sections, and each step kind's `with:`), for
    /// editors' YAML servers.
    Schema,
    /// Inspect or clean the cache.
    Cache {
        #[command(subcommand)]
        action: CacheAction,
    },
    /// Compute one item from the task stored under its key, as a Slurm job does.
    #[command(hide = true)]
    Worker {
        /// The workdir holding the cache.
        #[arg(long, value_name = "DIR")]
        workdir: PathBuf,
        /// The item's content key (`blake3:<hex>`).
        key: String,
    },
    /// Which claims a commit made false: a coding agent's memories checked against a range.
    Check(Box<crate::check::verb::CheckArgs>),
    /// Say which protections confine the test processes of mined repositories on this machine.
    Doctor,
    /// Manage the local model that model arms run on when no API key is set.
    Models {
        #[command(subcommand)]
        action: ModelsAction,
    },
}

#[derive(Debug, Subcommand)]
pub enum ModelsAction {
    /// Build llama-server and fetch the SmolLM2-135M model into the cache ($CLAIMFLOW_CACHE_DIR/models,
    /// else ~/.cache/claimflow/models), once per machine: minutes the first time, instant after.
    /// Prints where they are and their fingerprints.
    Provision,
    /// Start the local model's server (provisioning it first if needed), print its OpenAI-compatible
    /// base URL, and serve until Ctrl-C.
    Serve {
        /// Requests decoded at once (llama-server's slots).
        #[arg(long, value_name = "N", default_value_t = crate::local_model::ServerOptions::default().parallel)]
        parallel: usize,
        /// Tokens each slot holds, prompt and answer together.
        #[arg(long, value_name = "TOKENS", default_value_t = crate::local_model::TRAINED_CONTEXT)]
        context_per_slot: usize,
    },
}

#[derive(Debug, Subcommand)]
pub enum CacheAction {
    /// Count objects, bytes and action records.
    Stats(CacheTarget),
    /// Re-hash every object and check every action record; exits 1 if anything is corrupt.
    Verify(CacheTarget),
    /// Remove everything the last run of no pipeline in the workdir used.
    Gc(CacheTarget),
    /// Copy what the last run of every pipeline in the workdir used into DIR (a cache of the same
    /// layout), to share it with another machine.
    Export {
        /// The directory to write.
        dir: PathBuf,
        #[command(flatten)]
        target: CacheTarget,
    },
    /// Take every sound object and action record of an exported cache in DIR.
    Import {
        /// The exported directory.
        dir: PathBuf,
        #[command(flatten)]
        target: CacheTarget,
    },
}

/// Which workdir a cache command works on.
#[derive(Debug, clap::Args)]
pub struct CacheTarget {
    /// A pipeline whose workdir to use.
    pub pipeline: Option<PathBuf>,
    /// The workdir itself (default `.claimflow`).
    #[arg(long, value_name = "DIR", conflicts_with = "pipeline")]
    pub workdir: Option<PathBuf>,
}

/// Output formats for `graph`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum GraphFormat {
    Dot,
    Mermaid,
}

/// The command line names something that is not there: exit code 2, like a malformed pipeline.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// `-C DIR` names no directory claimflow can enter.
    #[error("cannot enter -C {}", path.display())]
    Directory {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `cache import DIR` names no directory to take a cache from.
    #[error("no exported cache at {}: the directory does not exist", path.display())]
    NoExport { path: PathBuf },
    /// `--executor slurm` (or the pipeline's `executor:`) on a machine that cannot submit jobs.
    #[error("cannot run on Slurm")]
    Slurm {
        #[source]
        source: crate::slurm::executor::SlurmError,
    },
    /// The steps' `needs` do not form a graph (`graph` draws before any run would refuse it).
    #[error("cannot draw the step graph")]
    Graph {
        #[source]
        source: crate::engine::DagError,
    },
    /// `worker` was given something that is no content key.
    #[error("worker: `{key}` is not a content key")]
    WorkerKey {
        key: String,
        #[source]
        source: crate::cache::DigestParseError,
    },
}

/// A step failed or the cache is corrupt: exit code 1, the message already printed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Failed(pub String);

/// Runs the parsed command line.
pub fn run(cli: Cli) -> Result<()> {
    let root = project_root(cli.directory.as_deref())?;
    let verbosity = if cli.quiet {
        Verbosity::Quiet
    } else {
        Verbosity::Normal
    };
    let registry = Registry::builtin();
    match cli.command {
        Verb::Run {
            pipeline,
            jobs,
            pytest_slots,
            force,
            until,
            offline,
            executor,
        } => {
            let request = RunRequest {
                jobs,
                pytest_slots,
                force,
                until,
                offline,
                executor,
            };
            run_pipeline(&pipeline, request, &root, &registry, verbosity)
        }
        Verb::Plan {
            pipeline,
            json,
            until,
            force,
        } => {
            let target = Target {
                pipeline: &pipeline,
                root: &root,
                registry: &registry,
            };
            plan(target, json, until, &force)
        }
        Verb::Explain {
            pipeline,
            step,
            item,
            json,
        } => {
            let target = Target {
                pipeline: &pipeline,
                root: &root,
                registry: &registry,
            };
            explain(target, &step, item, json)
        }
        Verb::Graph { pipeline, format } => graph(&pipeline, format, &root, &registry),
        Verb::Schema => print_json(&crate::pipeline::sections::file_schema(registry.schema())),
        Verb::Cache { action } => cache(action, &root, &registry),
        Verb::View { runs, serve, port } => view(&runs, serve, port, &root, &registry),
        Verb::Doctor => {
            let mut out = std::io::stdout().lock();
            write!(out, "{}", render_doctor(crate::sandbox::protections()))?;
            Ok(())
        }
        Verb::Models {
            action: ModelsAction::Provision,
        } => provision(verbosity),
        Verb::Models {
            action:
                ModelsAction::Serve {
                    parallel,
                    context_per_slot,
                },
        } => serve(parallel, context_per_slot, verbosity),
        Verb::Check(args) => crate::check::verb::run(*args, &root, cli.quiet),
        Verb::Worker { workdir, key } => worker(&root.join(workdir), &key, &registry),
    }
}

/// `graph`: the pipeline's steps and their needs, as Graphviz dot or Mermaid.
fn graph(pipeline: &Path, format: GraphFormat, root: &Path, registry: &Registry) -> Result<()> {
    let pipeline = load(pipeline, root, registry)?;
    let dag = Dag::new(&pipeline).map_err(|source| InputError::Graph { source })?;
    let text = match format {
        GraphFormat::Dot => dag.dot(),
        GraphFormat::Mermaid => dag.mermaid(),
    };
    write!(std::io::stdout().lock(), "{text}")?;
    Ok(())
}

/// `models provision`: the local model server and model, provisioned if missing; prints where they
/// are and their fingerprint.
fn provision(verbosity: Verbosity) -> Result<()> {
    let provisioned = provision_local_model(verbosity)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "server: {}", provisioned.server.display())?;
    writeln!(out, "model:  {}", provisioned.model.display())?;
    for (name, value) in provisioned.fingerprint() {
        writeln!(out, "{name}: {value}")?;
    }
    Ok(())
}

/// The project root: `-C DIR` (which must be a directory), else the current directory.
fn project_root(directory: Option<&Path>) -> Result<PathBuf> {
    Ok(match directory {
        Some(dir) => dir
            .canonicalize()
            .and_then(|path| {
                if path.is_dir() {
                    Ok(path)
                } else {
                    Err(std::io::Error::new(
                        std::io::ErrorKind::NotADirectory,
                        "not a directory",
                    ))
                }
            })
            .map_err(|source| InputError::Directory {
                path: dir.to_path_buf(),
                source,
            })?,
        None => std::env::current_dir().context("cannot read the current directory")?,
    })
}

/// The options of `claimflow run` beyond the pipeline.
struct RunRequest {
    jobs: Option<usize>,
    pytest_slots: Option<usize>,
    force: Vec<String>,
    until: Option<String>,
    offline: bool,
    executor: Option<ExecutorKind>,
}

/// `claimflow run`: computes what the cache lacks, then says what it did.
fn run_pipeline(
    pipeline: &Path,
    request: RunRequest,
    root: &Path,
    registry: &Registry,
    verbosity: Verbosity,
) -> Result<()> {
    let pipeline = load(pipeline, root, registry)?;
    if verbosity == Verbosity::Normal {
        for notice in pipeline.notices() {
            eprintln!("{notice}");
        }
    }
    let progress = std::sync::Arc::new(Progress::new(verbosity));
    let mut engine = Engine::new(&pipeline, registry, progress.as_ref())?;
    if request.executor.unwrap_or(pipeline.executor.kind) == ExecutorKind::Slurm {
        let slurm = SlurmExecutor::new(&pipeline, &engine.store)
            .map_err(|source| InputError::Slurm { source })?;
        engine.slurm = Some(std::sync::Arc::new(slurm));
    }
    let defaults = RunOptions::default();
    let options = RunOptions {
        jobs: request.jobs.unwrap_or(defaults.jobs),
        pytest_slots: request.pytest_slots.unwrap_or(defaults.pytest_slots),
        force: request.force.into_iter().collect(),
        until: request.until,
        offline: request.offline,
        ..defaults
    };
    crate::process_groups::cancel_on_stop(options.cancel.clone());
    let summary = engine.run(&options)?;
    if verbosity == Verbosity::Normal {
        // Said once the run is through, not before it: a pipeline refused at planning
        // prints its errors alone. Said only when the run started test processes, which
        // probed the machine: a run that started none (a no-op, a pipeline without pytest
        // steps) does not start a confined process just to say what others would get.
        if let Some(protections) = crate::sandbox::probed() {
            eprintln!("{protections}");
        }
        eprintln!(
            "run finished: {} computed, {} cached; results in {}",
            summary.computed(),
            summary.cached(),
            display_relative(&pipeline.results, root)
        );
        if summary.spent.calls > 0 {
            eprintln!("model calls this run: {}", summary.spent);
        }
    }
    Ok(())
}

/// `claimflow plan`: what a run would compute, as a table or JSON.
fn plan(target: Target, json: bool, until: Option<String>, force: &[String]) -> Result<()> {
    let plan = target.silent(|engine| engine.plan(force, until.as_deref()))?;
    if json {
        return print_json(&plan);
    }
    write!(std::io::stdout().lock(), "{}", render_plan(&plan))?;
    Ok(())
}

/// The pipeline a verb reads, where it resolves, and the step kinds it may use.
struct Target<'a> {
    pipeline: &'a Path,
    root: &'a Path,
    registry: &'a Registry,
}

impl Target<'_> {
    /// What `ask` answers of an engine over the loaded pipeline that reports nothing.
    fn silent<T>(&self, ask: impl FnOnce(&Engine) -> Result<T, EngineError>) -> Result<T> {
        let pipeline = load(self.pipeline, self.root, self.registry)?;
        Ok(ask(&Engine::new(&pipeline, self.registry, &Silent)?)?)
    }
}

/// `value` as pretty JSON on stdout, a line of its own.
fn print_json(value: &impl serde::Serialize) -> Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}

/// `claimflow explain`: each item's key record and what changed since the last run.
fn explain(target: Target, step: &str, item: Option<String>, json: bool) -> Result<()> {
    let explanations = target.silent(|engine| engine.explain(step, item.as_deref()))?;
    if json {
        return print_json(&explanations);
    }
    let mut out = std::io::stdout().lock();
    for explanation in explanations {
        writeln!(out, "item `{}`", explanation.item)?;
        writeln!(out, "  key:    {}", explanation.key)?;
        writeln!(
            out,
            "  cached: {}",
            if explanation.cached { "yes" } else { "no" }
        )?;
        if !explanation.ran_before {
            writeln!(out, "  since the last run: new item")?;
        } else if explanation.changed.is_empty() {
            writeln!(out, "  since the last run: unchanged")?;
        } else {
            writeln!(
                out,
                "  since the last run: {}",
                explanation.changed.join("; ")
            )?;
        }
        let record = serde_json::to_string_pretty(&explanation.record)?;
        writeln!(out, "  key record:")?;
        for line in record.lines() {
            writeln!(out, "    {line}")?;
        }
    }
    Ok(())
}

/// `claimflow models serve`: the local model's server until Ctrl-C.
fn serve(parallel: usize, context_per_slot: usize, verbosity: Verbosity) -> Result<()> {
    let provisioned = provision_local_model(verbosity)?;
    let options = crate::local_model::ServerOptions {
        parallel,
        context_per_slot,
        ..Default::default()
    };
    let mut server = crate::local_model::LocalServer::start(&provisioned, &options)?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", server.base_url())?;
        out.flush()?;
    }
    if verbosity == Verbosity::Normal {
        eprintln!(
            "serving {} with {parallel} slots of {context_per_slot} tokens; Ctrl-C stops it (log: {})",
            server.model_id(),
            server.log().display()
        );
    }
    // Ctrl-C and SIGTERM end the process and the server's group (see `process_groups`).
    while server.is_running() {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    Err(Failed(format!(
        "llama-server stopped on its own; its log is {}",
        server.log().display()
    ))
    .into())
}

/// The local model, provisioned if missing, the stages printed on stderr.
fn provision_local_model(verbosity: Verbosity) -> Result<crate::local_model::Provisioned> {
    let models = crate::local_model::models_dir();
    Ok(crate::local_model::provision(&models, &|line| {
        if verbosity == Verbosity::Normal {
            eprintln!("{line}");
        }
    })?)
}

/// `claimflow worker`: its messages go to the job's log.
fn worker(workdir: &Path, key: &str, registry: &Registry) -> Result<()> {
    let key: crate::cache::Digest = key.parse().map_err(|source| InputError::WorkerKey {
        key: key.to_string(),
        source,
    })?;
    let job =
        std::env::var("SLURM_JOB_ID").unwrap_or_else(|_| format!("pid-{}", std::process::id()));
    match crate::slurm::worker::work(workdir, &key, &job, registry)? {
        crate::slurm::worker::Worked::Computed {
            item,
            output,
            phases,
        } => {
            eprintln!("claimflow worker: item `{item}` computed and stored as {output} ({phases})");
        }
        crate::slurm::worker::Worked::Cached => {
            eprintln!("claimflow worker: key {key} was already in the cache");
        }
    }
    Ok(())
}

fn cache(action: CacheAction, root: &Path, registry: &Registry) -> Result<()> {
    let target = match &action {
        CacheAction::Stats(target) | CacheAction::Verify(target) | CacheAction::Gc(target) => {
            target
        }
        CacheAction::Export { target, .. } | CacheAction::Import { target, .. } => target,
    };
    let workdir = match (&target.pipeline, &target.workdir) {
        (Some(pipeline), _) => load(pipeline, root, registry)?.workdir,
        (None, Some(dir)) => root.join(dir),
        (None, None) => root.join(".claimflow"),
    };
    let store = Store::open(workdir.join("cache"))?;
    let mut out = std::io::stdout().lock();
    match action {
        CacheAction::Stats(_) => {
            let stats = store.stats()?;
            writeln!(
                out,
                "objects:      {} ({} bytes)",
                stats.objects, stats.object_bytes
            )?;
            writeln!(out, "actions:      {}", stats.actions)?;
            writeln!(
                out,
                "small blobs:  {} ({} bytes, inside action records)",
                stats.logged_blobs, stats.logged_blob_bytes
            )?;
            writeln!(out, "temp files:   {}", stats.temp_files)?;
            if stats.torn_log_bytes > 0 {
                writeln!(
                    out,
                    "torn records: {} bytes of actions.log (left by a stopped run; `cache gc` drops them)",
                    stats.torn_log_bytes
                )?;
            }
        }
        CacheAction::Verify(_) => verify(&mut out, &store, &workdir)?,
        CacheAction::Gc(_) => {
            let _lock = store.lock_exclusive()?;
            let live = live_set(&workdir, &store)?;
            let (actions, removed) = store.gc(&live.keys, &live.objects)?;
            writeln!(
                out,
                "removed {actions} action records and {removed} objects"
            )?;
        }
        CacheAction::Export { dir, .. } => {
            let _lock = store.lock_shared()?;
            let live = live_set(&workdir, &store)?;
            let dest = Store::open(root.join(&dir))?;
            let (actions, copied) = store.export_to(&dest, &live.keys, &live.objects)?;
            writeln!(
                out,
                "exported {actions} action records and {copied} objects to {}",
                dir.display()
            )?;
        }
        CacheAction::Import { dir, .. } => {
            let _lock = store.lock_shared()?;
            let exported = root.join(&dir);
            if !exported.is_dir() {
                return Err(InputError::NoExport { path: dir }.into());
            }
            let source = Store::open(exported)?;
            let (actions, objects, refused) = store.import_from(&source)?;
            writeln!(
                out,
                "imported {actions} action records and {objects} objects; refused {refused}"
            )?;
            if refused > 0 {
                return Err(Failed(format!(
                    "{refused} entries of {} did not verify",
                    dir.display()
                ))
                .into());
            }
        }
    }
    Ok(())
}

/// `claimflow cache verify`: every object re-hashed, every action record checked, every object the
/// last runs used found; any problem fails the command.
fn verify(out: &mut impl Write, store: &Store, workdir: &Path) -> Result<()> {
    let report = store.verify()?;
    writeln!(
        out,
        "checked {} objects and {} action records",
        report.objects_checked, report.actions_checked
    )?;
    if report.torn_log_bytes > 0 {
        writeln!(
            out,
            "skipped {} bytes of torn action records (left by a stopped run; they read as misses)",
            report.torn_log_bytes
        )?;
    }
    for path in &report.corrupt_objects {
        writeln!(out, "corrupt object: {path}")?;
    }
    for path in &report.broken_actions {
        writeln!(out, "broken action record: {path}")?;
    }
    let missing = live_set(workdir, store)?.missing;
    for blob in &missing {
        writeln!(
            out,
            "missing object: {} (`{}` of item `{}` of step `{}`)",
            blob.digest, blob.name, blob.item, blob.step
        )?;
    }
    let problems = report.corrupt_objects.len() + report.broken_actions.len() + missing.len();
    if problems > 0 {
        return Err(Failed(format!(
            "the cache has {problems} problems; `claimflow cache gc` removes them, and the next \
             run computes again what they held"
        ))
        .into());
    }
    writeln!(
        out,
        "no corrupt object, no broken action record, no missing object"
    )?;
    Ok(())
}

/// `claimflow view`: the page's path, or the comparison's, or the results served.
fn view(runs: &[PathBuf], serve: bool, port: u16, root: &Path, registry: &Registry) -> Result<()> {
    use crate::view::compare::{self, Run};
    let results = |run: &PathBuf| -> Result<PathBuf> {
        let path = root.join(run);
        Ok(if path.is_dir() {
            path
        } else {
            load(&path, root, registry)?.results
        })
    };
    let input = |error: crate::view::ViewError| EngineError::Input(error.to_string());
    let first = results(&runs[0])?;
    let page = match runs.get(1) {
        None => {
            Run::read(&first).map_err(input)?;
            first.join(crate::view::FILE)
        }
        Some(second) => {
            let (before, after) = (Run::read(&first), Run::read(&results(second)?));
            let (before, after) = (before.map_err(input)?, after.map_err(input)?);
            let path = compare::output_path(&first, &after);
            write_whole(&path, compare::render(&before, &after).as_bytes())?;
            path
        }
    };
    writeln!(
        std::io::stdout().lock(),
        "{}",
        display_relative(&page, root)
    )?;
    if serve {
        let server = crate::view::serve::Server::bind(&first, port).map_err(input)?;
        eprintln!(
            "serving {} on http://127.0.0.1:{}/ ; Ctrl-C stops it",
            display_relative(&first, root),
            server.port()
        );
        server.run();
    }
    Ok(())
}

/// Writes `path` through a temporary file beside it, so no half-written file is left behind.
fn write_whole(path: &Path, bytes: &[u8]) -> Result<()> {
    let directory = path.parent().unwrap_or(Path::new("."));
    let mut file = tempfile::NamedTempFile::new_in(directory)
        .with_context(|| format!("cannot write in {}", directory.display()))?;
    file.write_all(bytes)
        .with_context(|| format!("cannot write {}", path.display()))?;
    file.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

fn load(file: &Path, root: &Path, registry: &Registry) -> Result<Pipeline> {
    Ok(pipeline::load(file, root, registry)?)
}

/// The plan as a table.
pub fn render_plan(plan: &crate::engine::Plan) -> String {
    let width = plan
        .steps
        .iter()
        .map(|step| step.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let uses_width = plan
        .steps
        .iter()
        .map(|step| step.uses.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut text = format!(
        "{:<width$}  {:<uses_width$}  {:>6}  {:>6}  WHY\n",
        "STEP", "USES", "ITEMS", "TO RUN"
    );
    for step in &plan.steps {
        let number = |n: Option<usize>| n.map_or_else(|| "?".to_string(), |n| n.to_string());
        let why = if step.reasons.is_empty() {
            "cached".to_string()
        } else {
            step.reasons.join("; ")
        };
        text.push_str(&format!(
            "{:<width$}  {:<uses_width$}  {:>6}  {:>6}  {why}\n",
            step.name,
            step.uses,
            number(step.items_total),
            number(step.items_to_run)
        ));
    }
    text
}

fn display_relative(path: &Path, root: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// `claimflow doctor`: each protection of test processes on its own line, active or not, and why.
fn render_doctor(protections: &crate::sandbox::Protections) -> String {
    use crate::sandbox::{Layer, Network};
    let network = match &protections.network {
        Network::Isolated => format!(
            "active    no network: a fresh user + network namespace (loopback only)\n\
             active    credentials of the real home hidden ({}): a mount namespace",
            crate::sandbox::HIDDEN.join(" ")
        ),
        Network::Open(reason) => format!(
            "MISSING   no network: the kernel refused a user + network namespace ({reason}); test processes can reach the network\n\
             MISSING   credentials of the real home hidden: needs the same namespaces"
        ),
        Network::Disabled => format!(
            "MISSING   no network: turned off by {0}=off; test processes can reach the network\n\
             MISSING   credentials of the real home hidden: turned off by {0}=off",
            crate::sandbox::SWITCH
        ),
    };
    let proc = match &protections.private_proc {
        Layer::Active => {
            "active    a /proc of their own: a PID namespace; no other process's environment \
                          (claimflow's API keys among them) can be read through it"
                .to_string()
        }
        Layer::Missing(reason) => format!(
            "MISSING   a /proc of their own ({reason}); the environments of other processes, \
             claimflow's API keys among them, are readable through /proc"
        ),
    };
    let read_only = match &protections.read_only {
        Layer::Active => "active    writes only to their checkout, private HOME and TMPDIR and the caches \
                          they are given; the rest of the filesystem, the user's working tree included, is \
                          read-only and they cannot remount it"
            .to_string(),
        Layer::Missing(reason) => format!(
            "MISSING   a read-only filesystem ({reason}); they can write anywhere this user can, \
             the user's working tree included"
        ),
    };
    format!(
        "Protections for the test processes of mined repositories (pytest: collection, oracle runs, testmon), \
         the check commands of memory files, and the build scripts of their environments:\n\
         active    allow-listed environment: no API keys, tokens or other variables of this shell\n\
         active    private HOME and TMPDIR inside the workdir\n\
         {network}\n\
         {proc}\n\
         {read_only}\n\
         Environment builds (venv, pip) get the same protections but keep the network: they need the package index.\n"
    )
}

#[cfg(test)]
mod tests {
    use super::render_doctor;
    use crate::sandbox::{Layer, Network, Protections};

    #[test]
    fn doctor_names_the_proc_and_read_only_layers_and_says_when_either_is_missing() {
        let all = render_doctor(&Protections {
            network: Network::Isolated,
            private_proc: Layer::Active,
            read_only: Layer::Active,
        });
        assert!(all.contains("active    a /proc of their own"), "{all}");
        assert!(
            all.contains("active    writes only to their checkout"),
            "{all}"
        );
        assert!(!all.contains("MISSING"), "{all}");

        let refused = render_doctor(&Protections {
            network: Network::Open("Operation not permitted".into()),
            private_proc: Layer::Missing("mounting proc: Operation not permitted".into()),
            read_only: Layer::Missing("mount_setattr: Function not implemented".into()),
        });
        assert!(
            refused.contains(
                "MISSING   a /proc of their own (mounting proc: Operation not permitted)"
            ),
            "{refused}"
        );
        assert!(
            refused.contains(
                "MISSING   a read-only filesystem (mount_setattr: Function not implemented)"
            ),
            "{refused}"
        );
    }
}
