//! `uses: command`: a user's own program as a step.
//!
//! ```yaml
//! shout:
//!   uses: command
//!   needs: [gen]
//!   with:
//!     run: tr a-z A-Z < gen.txt > shout.txt   # run by `sh -c` in the project root
//!     inputs: [gen.txt]                        # files or globs whose content enters the key
//!     outputs: [shout.txt]                     # must exist afterwards; cached, restored on a hit
//! ```
//!
//! With `foreach:` (a list, or a glob string matched in the project root) the step fans out: one item
//! per element, and `{item}` in `run`, `inputs` and `outputs` is replaced by the element. For a glob,
//! `{name}` is the matched file's name and `{stem}` its name without the extension. Nothing else in
//! braces is touched, so shell syntax such as `${HOME}` or awk's `{print}` passes through.
//!
//! Before running, the item's declared outputs are removed, so a stale file never passes for a fresh
//! one; a non-zero exit or a missing output fails the item, and a failed item is never cached. Its
//! stdout and stderr go to `<workdir>/logs/<step>/<item>.log` (written only when it prints
//! something), not into the output: a command that prints a timestamp still produces the same
//! output, so downstream items stay cached.
//! `timeout:` stops a command that runs longer (its whole process group, the item failing);
//! The command sees the scrubbed environment of [`crate::process::environment`] (`PATH`, `HOME`,
//! the `C.UTF-8` locale) and the variables `env:` names; nothing else of the user's shell.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Component, Path};
use std::process::Command;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cache::{Digest, JsonText};
use crate::engine::{
    ItemOutput, ItemPlan, ItemResult, ListOrGlob, ParamsDecl, PipelineProblem, StepContext,
    StepError, StepKind, Upstream,
};
use crate::pipeline::{Pipeline, StepSpec};
use crate::process::{self, Capture, ChildEnvironment, Outcome};

/// The `command` step kind.
pub struct CommandStep;

/// Why a command step's item could not be planned or computed (the step and item name lead the
/// message, as the context of a [`StepError`]).
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// Two items of a fan-out declare one output: they would race for the file.
    #[error(
        "items `{first}` and `{second}` both declare the output {output}; give each item its own \
         (put `{{item}}` in `outputs`)"
    )]
    SharedOutput {
        first: String,
        second: String,
        output: String,
    },
    /// A declared input was listed but is gone by the time it is hashed.
    #[error("input {path} disappeared while it was read")]
    InputGone { path: String },
    /// The command outlasted its `timeout:` and was stopped.
    #[error("`{run}` ran longer than its timeout of {seconds}s and was stopped")]
    TimedOut { run: String, seconds: f64 },
    /// The command exited non-zero or was killed by a signal; `tail` is the end of its log.
    #[error("`{run}` {outcome}{}", tail_text(.tail))]
    Failed {
        run: String,
        outcome: Outcome,
        tail: String,
    },
    /// The command succeeded but a declared output cannot be read.
    #[error("`{run}` did not produce the declared output {path}")]
    MissingOutput {
        run: String,
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// The end of a failed command's log, as its error message shows it.
fn tail_text(tail: &str) -> String {
    if tail.is_empty() {
        return String::new();
    }
    format!(
        "; its output ends:\n    {}",
        tail.lines().collect::<Vec<_>>().join("\n    ")
    )
}

/// The parameters of `uses: command`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandParams {
    /// The command, run by `sh -c` in the project root.
    pub run: String,
    /// Files or globs whose content enters the key.
    #[serde(default)]
    pub inputs: Vec<String>,
    /// Files the command must produce; cached and restored.
    #[serde(default)]
    pub outputs: Vec<String>,
    /// A list, or a glob: one item per element, `{item}` substituted. Left out of the key: an
    /// item's element is already in its key (its id and its substituted `run` and `outputs`), so
    /// the list adds nothing to it; left in, adding one element would change the key of every
    /// other item.
    #[serde(default, skip_serializing)]
    pub foreach: Option<ListOrGlob>,
    /// Seconds the command may run before it and everything it started are stopped and the item
    /// fails (default: no limit); not part of the key.
    #[serde(default, skip_serializing)]
    #[schemars(range(min = 0.001))]
    pub timeout: Option<f64>,
    /// The environment variables passed to the command, by name, beyond `PATH` and `HOME` (which
    /// always pass) and `LANG`/`LC_ALL` (`C.UTF-8` unless named here); nothing else reaches it.
    /// The names enter the key, the values never do.
    #[serde(default)]
    pub env: Option<Vec<String>>,
}

/// What an item runs, as its key holds it: `{"outputs": [...], "run": "..."}`, fields in sorted
/// order, so that its text is canonical.
#[derive(Serialize)]
struct ItemParams<'a> {
    outputs: &'a [String],
    run: &'a str,
}

/// One fan-out element and the placeholders it fills (`{item}`, `{name}`, `{stem}`, braces
/// included).
struct Element {
    id: String,
    values: Vec<(&'static str, String)>,
}

impl Element {
    fn substitute(&self, text: &str) -> String {
        // A text without a placeholder is copied once, not once per placeholder.
        let mut text = std::borrow::Cow::Borrowed(text);
        for (placeholder, value) in &self.values {
            if text.contains(placeholder) {
                text = std::borrow::Cow::Owned(text.replace(placeholder, value));
            }
        }
        text.into_owned()
    }
}

impl CommandStep {
    fn elements(
        params: &CommandParams,
        root: &Path,
        step: &str,
    ) -> Result<Vec<Element>, StepError> {
        let Some(foreach) = &params.foreach else {
            return Ok(vec![Element {
                id: "main".into(),
                values: Vec::new(),
            }]);
        };
        match foreach {
            ListOrGlob::List(list) => Ok(list
                .iter()
                .map(|element| Element {
                    id: element.clone(),
                    values: vec![("{item}", element.clone())],
                })
                .collect()),
            ListOrGlob::Glob(pattern) => {
                let matches = expand(root, pattern, step)?;
                Ok(matches
                    .into_iter()
                    .map(|path| {
                        let as_path = Path::new(&path);
                        let name = as_path
                            .file_name()
                            .map(|n| n.to_string_lossy().into_owned())
                            .unwrap_or_default();
                        let stem = as_path
                            .file_stem()
                            .map(|n| n.to_string_lossy().into_owned())
                            .unwrap_or_default();
                        Element {
                            id: path.clone(),
                            values: vec![("{item}", path), ("{name}", name), ("{stem}", stem)],
                        }
                    })
                    .collect())
            }
        }
    }
}

impl StepKind for CommandStep {
    fn name(&self) -> &'static str {
        "command"
    }

    /// 2: a command without `env:` runs in the scrubbed environment, no longer the user's whole
    /// one, so its outputs may differ; items computed under 1 are computed again.
    fn version(&self) -> u32 {
        2
    }

    fn about(&self) -> &'static str {
        "run a program of your own: declared inputs enter the key, declared outputs are cached"
    }

    fn params(&self) -> ParamsDecl {
        ParamsDecl::of::<CommandParams>()
    }

    fn check_pipeline(&self, step: &StepSpec, _pipeline: &Pipeline) -> Vec<PipelineProblem> {
        match step
            .params
            .get::<CommandParams>()
            .and_then(|params| params.foreach.as_ref())
        {
            Some(ListOrGlob::List(list)) if list.is_empty() => vec![PipelineProblem {
                param: Some("foreach".to_string()),
                index: None,
                message: format!(
                    "`foreach` of step `{}` is an empty list, so the step has nothing to run",
                    step.name
                ),
                hint: "list at least one element, or remove `foreach` to run the command once"
                    .to_string(),
            }],
            _ => Vec::new(),
        }
    }

    fn items(&self, ctx: &StepContext, upstream: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        let params: &CommandParams = ctx.params()?;
        let step = &ctx.step.name;
        let mut reads = BTreeMap::new();
        for output in upstream.all() {
            for item in &output.items {
                reads.insert(format!("{}/{}", output.step, item.plan.id), item.digest);
            }
        }
        let elements = Self::elements(params, ctx.root, step)?;
        // Sized once: a fan-out's plans are megabytes, and each doubling was fresh memory.
        let mut plans = Vec::with_capacity(elements.len());
        // Which item declared each output: two items writing one file would race, and the file
        // would hold whichever finished last.
        let mut declared: HashMap<String, String> = HashMap::with_capacity(elements.len());
        for element in elements {
            let outputs: Vec<String> = params
                .outputs
                .iter()
                .map(|output| element.substitute(output))
                .collect();
            for output in &outputs {
                check_relative(output, step)?;
                if let Some(first) = declared.insert(output.clone(), element.id.clone())
                    && first != element.id
                {
                    return Err(StepError::input(
                        format!("step `{step}`"),
                        CommandError::SharedOutput {
                            first,
                            second: element.id.clone(),
                            output: output.clone(),
                        },
                    ));
                }
            }
            let mut plan = ItemPlan::new(element.id.clone()).params(JsonText::of(&ItemParams {
                outputs: &outputs,
                run: &element.substitute(&params.run),
            }));
            plan.reads = reads.clone();
            for pattern in &params.inputs {
                let pattern = element.substitute(pattern);
                for path in expand(ctx.root, &pattern, step)? {
                    // Through the store's file digests: an input whose stat is unchanged is not read.
                    let digest = ctx
                        .store
                        .file_digest_under(ctx.root, Path::new(&path))?
                        .ok_or_else(|| {
                            StepError::failed(
                                format!("step `{step}`"),
                                CommandError::InputGone { path: path.clone() },
                            )
                        })?;
                    plan = plan.file(path, digest);
                }
            }
            plans.push(plan);
        }
        Ok(plans)
    }

    fn run(
        &self,
        ctx: &StepContext,
        item: &ItemPlan,
        _upstream: &Upstream,
    ) -> Result<ItemOutput, StepError> {
        let step = &ctx.step.name;
        let run = item.params["run"].as_str().unwrap_or_default();
        let outputs: Vec<String> =
            serde_json::from_value(item.params["outputs"].clone()).unwrap_or_default();
        for output in &outputs {
            let path = ctx.root.join(output);
            if path.is_file() {
                fs::remove_file(&path).map_err(|source| StepError::Io {
                    context: format!("step `{step}`: remove stale output {output}"),
                    source,
                })?;
            }
        }
        let log_path = ctx
            .workdir
            .join("logs")
            .join(step)
            .join(format!("{}.log", sanitize(&item.id)));
        let params: &CommandParams = ctx.params()?;
        let mut command = Command::new(shell());
        command.arg0("sh").arg("-c").arg(run).current_dir(ctx.root);
        command_environment(params, ctx.pipeline).apply(&mut command);
        // The command leads a process group of its own: a stopped run (Ctrl-C), the timeout or its
        // end takes it down with everything it started.
        let mut running =
            process::Run::new(&mut command, Capture::LogIfAny(&log_path)).cancel(&ctx.cancel);
        if let Some(seconds) = params.timeout {
            running = running.timeout(std::time::Duration::from_secs_f64(seconds));
        }
        let finished = running.run().map_err(|source| StepError::Io {
            context: format!("step `{step}`: run `sh -c {run}`"),
            source,
        })?;
        let context = format!("step `{step}` item `{}`", item.id);
        match finished.outcome {
            Outcome::Exited(0) => {}
            Outcome::Cancelled => return Err(StepError::Cancelled),
            Outcome::TimedOut => {
                return Err(StepError::failed(
                    context,
                    CommandError::TimedOut {
                        run: run.to_string(),
                        seconds: params.timeout.unwrap_or_default(),
                    },
                ));
            }
            failed @ (Outcome::Exited(_) | Outcome::Signalled(_)) => {
                return Err(StepError::failed(
                    context,
                    CommandError::Failed {
                        run: run.to_string(),
                        outcome: failed,
                        tail: process::log_tail(&log_path, 12),
                    },
                ));
            }
        }
        let mut output = ItemOutput::default();
        for path in outputs {
            let bytes = fs::read(ctx.root.join(&path)).map_err(|source| {
                StepError::failed(
                    format!("step `{step}` item `{}`", item.id),
                    CommandError::MissingOutput {
                        run: run.to_string(),
                        path: path.clone(),
                        source,
                    },
                )
            })?;
            // Small outputs travel inside the item's action record, not as files of their own.
            let digest = ctx.store.hold(bytes)?;
            output.blobs.insert(path, digest);
        }
        Ok(output)
    }

    fn publish(&self, ctx: &StepContext, items: &[ItemResult]) -> Result<(), StepError> {
        // An item found in place at its lookup was checked then: a stat each is all a re-run
        // that computes nothing spends on its outputs.
        for item in items.iter().filter(|item| !item.in_place) {
            for (path, digest) in &item.output.blobs {
                // A file that already holds the cached bytes stays; its stat usually says so.
                if self.blob_in_workspace(ctx, path) != Some(*digest) {
                    let target = ctx.root.join(path);
                    let bytes = ctx.store.get(digest)?;
                    crate::cache::write_atomic_in(&ctx.workdir.join("tmp"), &target, &bytes)?;
                }
            }
        }
        Ok(())
    }

    fn computes_in_place(&self) -> bool {
        // `run` read each blob from the file publish would write, right after the command made it.
        true
    }

    fn blob_in_workspace(&self, ctx: &StepContext, name: &str) -> Option<Digest> {
        // A blob's name is the output's project-relative path.
        ctx.store
            .file_digest_under(ctx.root, Path::new(name))
            .ok()
            .flatten()
    }
}

/// A command's environment: the scrubbed default (`PATH`, `HOME`, the `C.UTF-8` locale) and the
/// variables `env:` names. A model's key stays with claimflow: the variables `api_key_env` names
/// are not passed on, even when `env:` names them.
fn command_environment(params: &CommandParams, pipeline: &Pipeline) -> ChildEnvironment {
    let mut environment =
        ChildEnvironment::scrubbed().pass_exact(params.env.iter().flatten().map(String::as_str));
    for variable in pipeline
        .models
        .values()
        .filter_map(|model| model.api_key_env.as_deref())
    {
        environment = environment.remove(variable);
    }
    environment
}

/// The `sh` that `PATH` names (its first absolute directory holding one), found once: spawning by
/// the bare name makes every item's spawn try each directory of `PATH` in turn (nine `execve` calls
/// per item on a typical `PATH`). Without a `sh` on `PATH` the bare name is left to the spawn, which
/// then fails as before.
fn shell() -> &'static Path {
    static SHELL: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    SHELL.get_or_init(|| {
        use std::os::unix::fs::PermissionsExt;
        std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join("sh"))
            .find(|candidate| {
                fs::metadata(candidate)
                    .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
            })
            .unwrap_or_else(|| "sh".into())
    })
}

/// The project-relative files matching `pattern`, sorted; a pattern matching nothing is an error.
fn expand(root: &Path, pattern: &str, step: &str) -> Result<Vec<String>, StepError> {
    check_relative(pattern, step)?;
    let full = root.join(pattern);
    let matches = glob::glob(&full.to_string_lossy()).map_err(|error| {
        StepError::Input(format!(
            "step `{step}`: `{pattern}` is not a valid glob: {error}"
        ))
    })?;
    let mut found: Vec<String> = matches
        .filter_map(Result::ok)
        .filter(|path| path.is_file())
        .filter_map(|path| {
            path.strip_prefix(root)
                .ok()
                .map(|rel| rel.to_string_lossy().into_owned())
        })
        .collect();
    found.sort();
    if found.is_empty() {
        return Err(StepError::Input(format!(
            "step `{step}`: `{pattern}` matches no file under {}",
            root.display()
        )));
    }
    Ok(found)
}

fn check_relative(path: &str, step: &str) -> Result<(), StepError> {
    let as_path = Path::new(path);
    if as_path.is_absolute()
        || as_path
            .components()
            .any(|component| matches!(component, Component::ParentDir))
    {
        return Err(StepError::Input(format!(
            "step `{step}`: `{path}` must be a path inside the project root (no leading `/`, no `..`)"
        )));
    }
    Ok(())
}

fn sanitize(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}
