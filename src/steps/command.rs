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
//! stdout and stderr go to `<workdir>/logs/<step>/<item>.log`, not into the output: a command that
//! prints a timestamp still produces the same output, so downstream items stay cached.
//! `timeout:` stops a command that runs longer (its whole process group, the item failing);
//! `env:` passes only the named environment variables instead of the whole environment.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Component, Path};
use std::process::{Command, Stdio};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::engine::{
    ItemOutput, ItemPlan, ItemResult, ListOrGlob, ParamsDecl, PipelineProblem, StepContext,
    StepError, StepKind, Upstream,
};
use crate::pipeline::{Pipeline, StepSpec};

/// The `command` step kind.
pub struct CommandStep;

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
    /// The environment variables passed to the command, by name (`PATH`, `HOME` and `LANG` always
    /// pass); default: the whole environment. The names enter the key, the values never do.
    #[serde(default)]
    pub env: Option<Vec<String>>,
}

/// Variables every command gets even under an `env:` allow-list: without them `sh` finds nothing.
const ALWAYS_PASSED: &[&str] = &["PATH", "HOME", "LANG"];

/// The longest a running command goes unwatched: how soon a timeout or a Ctrl-C is noticed.
const CANCEL_CHECK: std::time::Duration = std::time::Duration::from_millis(50);

/// One fan-out element and the placeholders it fills.
struct Element {
    id: String,
    values: BTreeMap<&'static str, String>,
}

impl Element {
    fn substitute(&self, text: &str) -> String {
        let mut text = text.to_string();
        for (name, value) in &self.values {
            text = text.replace(&format!("{{{name}}}"), value);
        }
        text
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
                values: BTreeMap::new(),
            }]);
        };
        match foreach {
            ListOrGlob::List(list) => Ok(list
                .iter()
                .map(|element| Element {
                    id: element.clone(),
                    values: BTreeMap::from([("item", element.clone())]),
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
                            values: BTreeMap::from([
                                ("item", path),
                                ("name", name),
                                ("stem", stem),
                            ]),
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

    fn version(&self) -> u32 {
        1
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
        let mut plans = Vec::new();
        for element in Self::elements(params, ctx.root, step)? {
            let outputs: Vec<String> = params
                .outputs
                .iter()
                .map(|output| element.substitute(output))
                .collect();
            for output in &outputs {
                check_relative(output, step)?;
            }
            let mut plan = ItemPlan::new(element.id.clone())
                .params(json!({"run": element.substitute(&params.run), "outputs": outputs}));
            plan.reads = reads.clone();
            for pattern in &params.inputs {
                let pattern = element.substitute(pattern);
                for path in expand(ctx.root, &pattern, step)? {
                    // Through the store's file digests: an input whose stat is unchanged is not read.
                    let digest =
                        ctx.store
                            .file_digest(&ctx.root.join(&path))?
                            .ok_or_else(|| {
                                StepError::Message(format!(
                                    "step `{step}`: input {path} disappeared while it was read"
                                ))
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
        if let Some(parent) = log_path.parent() {
            fs::create_dir_all(parent).map_err(|source| StepError::Io {
                context: format!("create {}", parent.display()),
                source,
            })?;
        }
        let log = fs::File::create(&log_path).map_err(|source| StepError::Io {
            context: format!("create {}", log_path.display()),
            source,
        })?;
        let log_err = log.try_clone().map_err(|source| StepError::Io {
            context: format!("open {}", log_path.display()),
            source,
        })?;
        let params: &CommandParams = ctx.params()?;
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(run)
            .current_dir(ctx.root)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err);
        if let Some(allowed) = &params.env {
            command.env_clear();
            for name in ALWAYS_PASSED
                .iter()
                .copied()
                .chain(allowed.iter().map(String::as_str))
            {
                if let Some(value) = std::env::var_os(name) {
                    command.env(name, value);
                }
            }
        }
        // A model's key stays with claimflow: the variables `api_key_env` names are not passed on,
        // even when the allow-list names them.
        for variable in ctx
            .pipeline
            .models
            .values()
            .filter_map(|model| model.api_key_env.as_deref())
        {
            command.env_remove(variable);
        }
        // The command leads a process group of its own: a stopped run (Ctrl-C) takes it down with
        // everything it started, and whatever it leaves running when it ends is ended with it.
        let (mut child, group) =
            crate::process_groups::spawn(&mut command).map_err(|source| StepError::Io {
                context: format!("step `{step}`: start `sh -c {run}`"),
                source,
            })?;
        let deadline = params
            .timeout
            .map(|seconds| std::time::Instant::now() + std::time::Duration::from_secs_f64(seconds));
        let status = loop {
            let timed_out = deadline.is_some_and(|deadline| std::time::Instant::now() >= deadline);
            if timed_out || ctx.cancel.is_cancelled() {
                group.kill();
                let _ = child.wait();
                if timed_out {
                    return Err(StepError::Message(format!(
                        "step `{step}` item `{}`: `{run}` ran longer than its timeout of {}s and \
                         was stopped",
                        item.id,
                        params.timeout.unwrap_or_default()
                    )));
                }
                return Err(StepError::Cancelled);
            }
            // Wakes when the command exits; at the latest after 50 ms, to look at the deadline and
            // the cancellation token again.
            let limit = deadline.map_or(CANCEL_CHECK, |deadline| {
                deadline
                    .saturating_duration_since(std::time::Instant::now())
                    .min(CANCEL_CHECK)
            });
            let waited = group
                .wait_exit(&mut child, limit)
                .map_err(|source| StepError::Io {
                    context: format!("step `{step}`: wait for `sh -c {run}`"),
                    source,
                })?;
            if let Some(status) = waited {
                break status;
            }
        };
        if !status.success() {
            let tail = fs::read_to_string(&log_path).unwrap_or_default();
            let tail: Vec<&str> = tail
                .lines()
                .rev()
                .take(12)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            return Err(StepError::Message(format!(
                "step `{step}` item `{}`: `{run}` exited with {status}{}{}",
                item.id,
                if tail.is_empty() {
                    ""
                } else {
                    "; its output ends:\n    "
                },
                tail.join("\n    ")
            )));
        }
        let mut output = ItemOutput::default();
        for path in outputs {
            let bytes = fs::read(ctx.root.join(&path)).map_err(|_| {
                StepError::Message(format!(
                    "step `{step}` item `{}`: `{run}` did not produce the declared output {path}",
                    item.id
                ))
            })?;
            let digest = ctx.store.put(&bytes)?;
            output.blobs.insert(path, digest);
        }
        Ok(output)
    }

    fn publish(&self, ctx: &StepContext, items: &[ItemResult]) -> Result<(), StepError> {
        for item in items {
            for (path, digest) in &item.output.blobs {
                let target = ctx.root.join(path);
                // A file that already holds the cached bytes stays; its stat usually says so.
                let current = ctx.store.file_digest(&target).ok().flatten();
                if current != Some(*digest) {
                    let bytes = ctx.store.get(digest)?;
                    crate::cache::write_atomic_in(&ctx.workdir.join("tmp"), &target, &bytes)?;
                }
            }
        }
        Ok(())
    }
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
