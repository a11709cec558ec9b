//! Building an environment in a scratch directory: `python -m venv` (or `uv venv`), then one
//! install of pytest and the requirements, then one of the optional requirements (what the tests
//! import only if they can). A requirement the commit merely declares that will not install is
//! dropped and recorded (old pins vanish from indexes); pytest and the repository's own pins may
//! not be dropped, and an optional requirement never fails the environment. pip and uv get an
//! allow-listed environment: index and proxy settings, never the caller's secrets. An environment
//! bounded by a commit's date installs from the dated index ([`super::dated_index`]) alone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::build_error::{BuildFailure, PythonError, io_error};
use super::dated_install::Dated;
use super::environment_request::{
    DroppedRequirement, Environment, EnvironmentRequest, Installer, uv_program,
};
use super::requirements::{Requirement, requirement_name};
use crate::process::cpu_use::{STARVED_ATTEMPTS, Stall, retry_starved};
use crate::process::{Capture, ChildEnvironment, Outcome, Run, log_tail, run_logged};

/// pip resolves and downloads; a slow index must not hang a pipeline forever.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(900);
/// How many failing discovered requirements may be dropped before giving up.
const MAX_DROPPED: usize = 8;

/// The error of an install that outlasted [`INSTALL_TIMEOUT`], naming the busy machine when every
/// try was starved of CPU. A timeout is never cached: the build is tried again on the next run.
fn timed_out(what: String, starved: Option<Stall>) -> PythonError {
    PythonError::Timeout {
        what: match starved {
            Some(stall) => format!(
                "{what} on a machine too busy to finish it ({STARVED_ATTEMPTS} attempts starved of \
                 CPU, the last: {stall})"
            ),
            None => what,
        },
        seconds: INSTALL_TIMEOUT.as_secs(),
    }
}

/// Builds the environment in `scratch` and describes it with paths under `scratch`.
pub(super) fn build(
    request: &EnvironmentRequest,
    scratch: &Path,
    pip_cache: &Path,
    digest: &str,
) -> Result<Environment, PythonError> {
    let logs = scratch.join("logs");
    std::fs::create_dir_all(&logs).map_err(io_error(format!("create {}", logs.display())))?;
    let dated = match &request.released_before {
        Some(bound) => Some(Dated::prepare(request, bound)?),
        None => None,
    };
    let layout = Layout::create(request, scratch, pip_cache, &logs)?;
    let build = Build {
        request,
        layout: &layout,
        pip_cache,
        logs: &logs,
        dated: dated.as_ref(),
    };
    let mut dropped = build.install_required()?;
    let mut distributions = list_distributions(&layout.python, layout.target(), &logs)?;
    if !request.optional.is_empty() {
        dropped.extend(build.install_optional(&distributions)?);
        distributions = list_distributions(&layout.python, layout.target(), &logs)?;
    }
    let pytest = distributions
        .get("pytest")
        .cloned()
        .ok_or_else(|| PythonError::Broken {
            path: scratch.to_path_buf(),
            reason: "pytest is not installed after a successful install".into(),
        })?;
    let released_before = dated.map(|dated| dated.described(&distributions));
    let build_tmp = build_tmp(scratch);
    if build_tmp.exists() {
        std::fs::remove_dir_all(&build_tmp)
            .map_err(io_error(format!("remove {}", build_tmp.display())))?;
    }
    Ok(Environment {
        root: scratch.to_path_buf(),
        python: layout.python,
        interpreter: request.interpreter.version.to_string(),
        pytest,
        installer: match request.installer {
            Installer::Pip => "pip".into(),
            Installer::Uv => "uv".into(),
        },
        digest: digest.to_string(),
        site_packages: layout.site_packages,
        python_path: layout.python_path,
        distributions,
        dropped,
        released_before,
    })
}

/// Where an environment's interpreter and packages are.
struct Layout {
    python: PathBuf,
    site_packages: PathBuf,
    /// Entries for `PYTHONPATH` (the `--target` directory on Python 2).
    python_path: Vec<PathBuf>,
    python_2: bool,
}

impl Layout {
    /// A venv in `scratch` (Python 3), or a `--target` directory beside the base interpreter.
    fn create(
        request: &EnvironmentRequest,
        scratch: &Path,
        pip_cache: &Path,
        logs: &Path,
    ) -> Result<Layout, PythonError> {
        if request.interpreter.version.major < 3 {
            let site = scratch.join("site");
            return Ok(Layout {
                python: request.interpreter.path.clone(),
                site_packages: site.clone(),
                python_path: vec![site],
                python_2: true,
            });
        }
        create_venv(request, scratch, pip_cache, &logs.join("venv.log"))?;
        let site_packages = scratch
            .join("lib")
            .join(format!(
                "python{}",
                request.interpreter.version.minor_string()
            ))
            .join("site-packages");
        Ok(Layout {
            python: scratch.join("bin").join("python"),
            site_packages,
            python_path: vec![],
            python_2: false,
        })
    }

    /// The `--target` directory pip installs into, on Python 2.
    fn target(&self) -> Option<&Path> {
        self.python_2.then_some(self.site_packages.as_path())
    }
}

/// One environment's installs.
struct Build<'a> {
    request: &'a EnvironmentRequest,
    layout: &'a Layout,
    pip_cache: &'a Path,
    logs: &'a Path,
    /// The dated index and bound, when the environment is bounded by a commit's date.
    dated: Option<&'a Dated>,
}

/// How one run of the installer ended.
enum Attempt {
    Installed,
    /// It outlasted [`INSTALL_TIMEOUT`]: with the measurement when every try was starved of CPU
    /// (the machine's fault, never the environment's), without one when it hung.
    TimedOut(Option<Stall>),
    /// The installer failed: its whole output and the tail for messages.
    Failed {
        output: String,
        tail: String,
    },
}

impl Build<'_> {
    /// Runs the installer once for `specs` with `options`, logged to `logs/<log>.log`.
    fn attempt(
        &self,
        log: &str,
        options: &[String],
        specs: &[String],
    ) -> Result<Attempt, PythonError> {
        let interpreter = self.request.interpreter.version;
        let log = self.logs.join(format!("{log}.log"));
        let mut command = install_command(
            self.request,
            &self.layout.python,
            self.layout.target(),
            options,
            specs,
            self.pip_cache,
            self.dated.map(Dated::url),
        );
        confine_build(&mut command, scratch_of(self.logs), Some(self.pip_cache))?;
        // An install starved of CPU by a busy machine is tried again.
        let finished = retry_starved(
            |_| {
                Run::new(&mut command, Capture::Log(&log))
                    .timeout(INSTALL_TIMEOUT)
                    .run()
            },
            |finished| finished.stall.is_some_and(|stall| stall.starved()),
        )
        .map_err(io_error(format!("run pip for python {interpreter}")))?;
        let attempt = match finished.outcome {
            Outcome::Exited(0) => Attempt::Installed,
            Outcome::TimedOut => Attempt::TimedOut(finished.stall.filter(|stall| stall.starved())),
            _ => Attempt::Failed {
                output: std::fs::read_to_string(&log).unwrap_or_default(),
                tail: log_tail(&log, 15),
            },
        };
        if let Some(dated) = self.dated {
            let output = std::fs::read_to_string(&log).unwrap_or_default();
            // What pip blamed, when it failed: a project the index could not offer, maybe.
            let blamed = matches!(attempt, Attempt::Failed { .. }).then(|| {
                let mut names = failing_requirements(&output);
                names.extend(output.lines().filter_map(|line| {
                    let rest = line.trim().strip_prefix("Collecting ")?;
                    requirement_name(rest.split_whitespace().next()?)
                }));
                names
            });
            if let Some(error) = dated.unbounded(&output, blamed.as_deref()) {
                return Err(error);
            }
        }
        Ok(attempt)
    }

    /// pytest and the requirements in one install. A requirement the commit merely declares that
    /// will not install is dropped and the rest tried again; pytest and the repository's pins
    /// fail the environment. Returns what was dropped.
    fn install_required(&self) -> Result<Vec<DroppedRequirement>, PythonError> {
        let request = self.request;
        let interpreter = request.interpreter.version.to_string();
        let mut wanted: Vec<Requirement> = request.requirements.clone();
        let mut dropped = Vec::new();
        loop {
            let mut specs: Vec<String> = wanted.iter().map(|r| r.spec.clone()).collect();
            specs.push(request.pytest.clone());
            specs.sort();
            let (text, tail) =
                match self.attempt(&format!("install-{}", dropped.len()), &[], &specs)? {
                    Attempt::Installed => return Ok(dropped),
                    Attempt::TimedOut(starved) => {
                        let what =
                            format!("installing {} for python {interpreter}", specs.join(" "));
                        return Err(timed_out(what, starved));
                    }
                    Attempt::Failed { output, tail } => (output, tail),
                };
            let culprits = failing_requirements(&text);
            // Requirements the commit merely declares may be dropped; pytest and pins may not.
            let position = culprits.iter().find_map(|name| {
                wanted.iter().position(|requirement| {
                    requirement.source != "repository"
                        && requirement_name(&requirement.spec).as_ref() == Some(name)
                })
            });
            match position {
                Some(index) if dropped.len() < MAX_DROPPED => {
                    let requirement = wanted.remove(index);
                    dropped.push(DroppedRequirement {
                        spec: requirement.spec,
                        source: requirement.source,
                        reason: tail,
                    });
                }
                _ => {
                    let modern_pip = !self.layout.python_2
                        && pip_version(&self.layout.site_packages) >= Some((21, 2));
                    let tail = match self.dated {
                        Some(dated) => format!(
                            "{tail}\n(only files uploaded before {} were offered: the \
                             repository's `releases: at-commit`)",
                            dated.cutoff()
                        ),
                        None => tail,
                    };
                    return Err(PythonError::Install {
                        failure: classify_failure(&text, culprits.first(), modern_pip),
                        requirement: culprits.first().cloned().unwrap_or_else(|| specs.join(" ")),
                        interpreter,
                        tail,
                    });
                }
            }
        }
    }

    /// The optional requirements, in one install after the required ones: built distributions
    /// only (`--only-binary :all:`: an old numpy compiled from source costs many minutes), and the
    /// distributions already `installed` held at their versions (a constraints file), so an
    /// optional one never changes what the tests otherwise run with. One that will not install
    /// is left out and the rest tried again; when the installer does not say which one failed,
    /// each is tried alone. Only a failure of the network, or a machine too busy to finish an
    /// install, fails the environment (it may pass later). Returns what was left out.
    fn install_optional(
        &self,
        installed: &BTreeMap<String, String>,
    ) -> Result<Vec<DroppedRequirement>, PythonError> {
        let constraints = self.logs.join("installed-constraints.txt");
        let pins: String = installed
            .iter()
            .map(|(name, version)| format!("{name}=={version}\n"))
            .collect();
        std::fs::write(&constraints, pins)
            .map_err(io_error(format!("write {}", constraints.display())))?;
        let options = [
            "--only-binary".to_string(),
            ":all:".to_string(),
            "--constraint".to_string(),
            constraints.to_string_lossy().into_owned(),
        ];
        let mut wanted: Vec<Requirement> = self.request.optional.clone();
        let mut dropped = Vec::new();
        let mut attempts = 0;
        while !wanted.is_empty() {
            let mut specs: Vec<String> = wanted.iter().map(|r| r.spec.clone()).collect();
            specs.sort();
            attempts += 1;
            let (output, tail) =
                match self.attempt(&format!("optional-{attempts}"), &options, &specs)? {
                    Attempt::Installed => break,
                    // Starved of CPU: the machine's fault, so nothing is left out for it.
                    Attempt::TimedOut(Some(stall)) => {
                        let what = format!("installing {}", specs.join(" "));
                        return Err(timed_out(what, Some(stall)));
                    }
                    Attempt::TimedOut(None) => {
                        let reason = format!(
                            "the install timed out after {} s",
                            INSTALL_TIMEOUT.as_secs()
                        );
                        dropped.extend(
                            wanted
                                .drain(..)
                                .map(|requirement| left_out(requirement, &reason)),
                        );
                        break;
                    }
                    Attempt::Failed { output, tail } => (output, tail),
                };
            if classify_failure(&output, None, false) == BuildFailure::Infrastructure {
                return Err(PythonError::Install {
                    failure: BuildFailure::Infrastructure,
                    requirement: specs.join(" "),
                    interpreter: self.request.interpreter.version.to_string(),
                    tail,
                });
            }
            let culprit = failing_requirements(&output).iter().find_map(|name| {
                wanted.iter().position(|requirement| {
                    requirement_name(&requirement.spec).as_ref() == Some(name)
                })
            });
            match culprit {
                Some(index) => dropped.push(left_out(wanted.remove(index), &tail)),
                None if wanted.len() > 1 => {
                    // Which one failed is not said: each alone, the next attempt with those that installed.
                    let mut installable = Vec::new();
                    for requirement in wanted.drain(..) {
                        attempts += 1;
                        let alone = [requirement.spec.clone()];
                        match self.attempt(&format!("optional-{attempts}"), &options, &alone)? {
                            Attempt::Installed => installable.push(requirement),
                            Attempt::TimedOut(Some(stall)) => {
                                let what = format!("installing {}", requirement.spec);
                                return Err(timed_out(what, Some(stall)));
                            }
                            Attempt::TimedOut(None) => {
                                dropped.push(left_out(requirement, "the install timed out"))
                            }
                            Attempt::Failed { tail, .. } => {
                                dropped.push(left_out(requirement, &tail))
                            }
                        }
                    }
                    wanted = installable;
                }
                None => dropped.extend(
                    wanted
                        .drain(..)
                        .map(|requirement| left_out(requirement, &tail)),
                ),
            }
        }
        Ok(dropped)
    }
}

/// An optional requirement left out of the environment, with why.
fn left_out(requirement: Requirement, reason: &str) -> DroppedRequirement {
    DroppedRequirement {
        spec: requirement.spec,
        source: format!("optional: {}", requirement.source),
        reason: reason.to_string(),
    }
}

fn create_venv(
    request: &EnvironmentRequest,
    scratch: &Path,
    pip_cache: &Path,
    log: &Path,
) -> Result<(), PythonError> {
    let mut command = match request.installer {
        Installer::Pip => {
            let mut command = Command::new(&request.interpreter.path);
            command.args(["-m", "venv"]).arg(scratch);
            command
        }
        Installer::Uv => {
            // Seeded with pip and setuptools like a venv of `python -m venv`, so a suite that
            // imports `pkg_resources` behaves alike; the scratch directory already holds the logs.
            let mut command = Command::new(uv_program());
            command
                .args([
                    "venv",
                    "--seed",
                    "--allow-existing",
                    "--no-config",
                    "--python",
                ])
                .arg(&request.interpreter.path)
                .arg(scratch);
            command
        }
    };
    // uv seeds the venv from its cache: the one beside pip's, writable to it.
    installer_environment(&mut command, Some(pip_cache));
    confine_build(&mut command, scratch, Some(pip_cache))?;
    let outcome = run_logged(&mut command, log, Duration::from_secs(300)).map_err(io_error(
        format!("run {}", request.interpreter.path.display()),
    ))?;
    if outcome.success() {
        Ok(())
    } else {
        Err(PythonError::Create {
            interpreter: request.interpreter.version.to_string(),
            path: scratch.to_path_buf(),
            tail: log_tail(log, 15),
        })
    }
}

fn install_command(
    request: &EnvironmentRequest,
    python: &Path,
    target: Option<&Path>,
    options: &[String],
    specs: &[String],
    pip_cache: &Path,
    index_url: Option<&str>,
) -> Command {
    let mut command = match request.installer {
        Installer::Uv if target.is_none() => {
            let mut command = Command::new(uv_program());
            command
                .args(["pip", "install", "--no-config", "--python"])
                .arg(python);
            command
        }
        _ => {
            let mut command = Command::new(python);
            command.args([
                "-m",
                "pip",
                "install",
                "--no-input",
                "--disable-pip-version-check",
            ]);
            command
        }
    };
    if let Some(target) = target {
        command.arg("--target").arg(target);
    }
    if let Some(url) = index_url {
        command.arg("--index-url").arg(url);
    }
    command.args(options);
    command.args(specs);
    let environment = ChildEnvironment::scrubbed().installer(Some(pip_cache));
    match index_url {
        Some(url) => environment.only_index(url),
        None => environment,
    }
    .apply(&mut command);
    command
}

/// The installer's environment: the package index, proxy and build settings of claimflow's own
/// environment, never secrets ([`ChildEnvironment::installer`]).
/// Where a build's temporary files go: inside its scratch directory (writable to it), removed once
/// the environment is built.
fn build_tmp(scratch: &Path) -> PathBuf {
    scratch.join(".build-tmp")
}

/// The scratch directory of a build, from its logs directory (`<scratch>/logs`).
fn scratch_of(logs: &Path) -> &Path {
    logs.parent().unwrap_or(logs)
}

/// Confines one process of an environment build: the build scripts of the packages it installs
/// are code from the package index, so it runs as mined tests do ([`crate::sandbox`]) but with
/// the network, writing only its scratch directory (the environment, its logs, its temporary
/// files) and the installer caches.
fn confine_build(
    command: &mut Command,
    scratch: &Path,
    pip_cache: Option<&Path>,
) -> Result<(), PythonError> {
    let tmp = build_tmp(scratch);
    let mut writable = vec![scratch.to_path_buf(), tmp.clone()];
    if let Some(cache) = pip_cache {
        writable.extend([cache.to_path_buf(), cache.with_file_name("uv")]);
    }
    for directory in &writable {
        std::fs::create_dir_all(directory)
            .map_err(io_error(format!("create {}", directory.display())))?;
    }
    command.env("TMPDIR", &tmp);
    writable
        .into_iter()
        .fold(
            crate::sandbox::Confinement::online(),
            |confinement, path| confinement.writable(path),
        )
        .apply(command);
    Ok(())
}

fn installer_environment(command: &mut Command, pip_cache: Option<&Path>) {
    ChildEnvironment::scrubbed()
        .installer(pip_cache)
        .apply(command);
}

/// The normalized names of the requirements pip blames, most specific first: those it could not
/// find or build, then those in a resolution conflict (`The user requested ...`), then the last
/// one it was collecting when a build step failed.
fn failing_requirements(output: &str) -> Vec<String> {
    const MARKERS: [&str; 8] = [
        "No matching distribution found for ",
        "Could not find a version that satisfies the requirement ",
        "Failed building wheel for ",
        "Failed to build ",
        "Could not build wheels for ",
        "The user requested ",
        // uv: "Because there are no versions of X and you require X…", "Because X was not found
        // in the package registry and…".
        "there are no versions of ",
        "Because ",
    ];
    let mut names: Vec<String> = Vec::new();
    for marker in MARKERS {
        for line in output.lines() {
            if let Some(index) = line.find(marker) {
                let rest = &line[index + marker.len()..];
                if marker == "Because " && !rest.contains(" was not found in the package registry")
                {
                    continue;
                }
                let spec = rest
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
                    .trim_matches('`')
                    .trim_end_matches([',', '.', '`']);
                if let Some(name) = requirement_name(spec)
                    && !names.contains(&name)
                {
                    names.push(name);
                }
            }
        }
    }
    // pip >= 22 reports build failures as "× ... did not run successfully" after "Collecting X".
    let mut last_collected = None;
    for line in output.lines() {
        if let Some(rest) = line.trim().strip_prefix("Collecting ") {
            last_collected = rest.split_whitespace().next().and_then(requirement_name);
        }
        if line.contains("did not run successfully") {
            if let Some(name) = last_collected.take()
                && !names.contains(&name)
            {
                names.push(name);
            }
            break;
        }
    }
    // pip 19-21 (the last on Python 2.7 and 3.6) name a failed `setup.py` only by its build
    // directory: "Command errored out ... /tmp/pip-install-XXXX/<name>/setup.py".
    for line in output.lines() {
        if let Some(name) = pip_build_directory_name(line)
            && !names.contains(&name)
        {
            names.push(name);
        }
    }
    // A failing dependency of a declared requirement (pdbpp needs fancycompleter) blames the
    // declared one too, so it can be dropped: "Collecting fancycompleter>=0.2 (from pdbpp==0.7.2)".
    let mut index = 0;
    while index < names.len() {
        if let Some(requester) = requested_by(output, &names[index])
            && !names.contains(&requester)
        {
            names.push(requester);
        }
        index += 1;
    }
    names
}

/// What an installer's output says about a failure: the network (pip retries and then reports
/// the package as not found, so this is checked first), a requirement with no release at all, or
/// something another interpreter may fix. pip says "(from versions: none)" also when every release
/// needs another Python; from pip 21.2 on it then lists them as "Ignored the following versions
/// that require a different python version", so only a `modern_pip` saying neither is believed.
fn classify_failure(output: &str, culprit: Option<&String>, modern_pip: bool) -> BuildFailure {
    const NETWORK: [&str; 14] = [
        "NewConnectionError",
        "Failed to establish a new connection",
        "Temporary failure in name resolution",
        "Name or service not known",
        "ConnectTimeoutError",
        "ReadTimeoutError",
        "ProxyError",
        "Could not fetch URL",
        "SSLError",
        "Connection refused",
        "Network is unreachable",
        "No route to host",
        "error sending request",
        "dns error",
    ];
    if NETWORK.iter().any(|marker| output.contains(marker)) {
        return BuildFailure::Infrastructure;
    }
    let Some(culprit) = culprit else {
        return BuildFailure::Interpreter;
    };
    // uv: "Because there are no versions of claimflow-no-such-thing and you require ...".
    let uv_none = output.lines().any(|line| {
        let named = |marker: &str| {
            line.split_once(marker)
                .and_then(|(_, rest)| requirement_name(rest.split_whitespace().next()?))
        };
        named("there are no versions of ").as_ref() == Some(culprit)
            || (line.contains(" was not found in the package registry")
                && named("Because ").as_ref() == Some(culprit))
    });
    let pip_none = modern_pip
        && !output.contains("require a different python version")
        && output.lines().any(|line| {
            line.contains("(from versions: none)")
                && line
                    .split_once("satisfies the requirement ")
                    .and_then(|(_, rest)| requirement_name(rest.split_whitespace().next()?))
                    .as_ref()
                    == Some(culprit)
        });
    if uv_none || pip_none {
        BuildFailure::NoSuchRequirement
    } else {
        BuildFailure::Interpreter
    }
}

/// The version of pip installed in a venv's `site_packages` (`pip-24.0.dist-info`), if any.
fn pip_version(site_packages: &Path) -> Option<(u32, u32)> {
    std::fs::read_dir(site_packages)
        .ok()?
        .flatten()
        .find_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let version = name.strip_prefix("pip-")?.strip_suffix(".dist-info")?;
            let mut parts = version.split('.').map(|part| part.parse::<u32>().ok());
            Some((parts.next()??, parts.next()??))
        })
}

/// The project a legacy pip build directory in `line` belongs to (`pip-install-XXXX/<name>/`).
fn pip_build_directory_name(line: &str) -> Option<String> {
    // pip 18 (Python 3.6's): `Command "python setup.py egg_info" failed with error code 1 in
    // /tmp/pip-install-XXXX/<name>/`; pip 19-21: "Command errored out", then "command:", "cwd:".
    let reports_a_build = [
        "Command errored out",
        "command:",
        "cwd:",
        "failed with error code",
    ]
    .iter()
    .any(|marker| line.contains(marker));
    if !reports_a_build {
        return None;
    }
    let start = line.find("pip-install-")?;
    let mut parts = line[start..].split('/');
    parts.next()?;
    let directory = parts.next()?;
    requirement_name(directory.trim_end_matches(['\'', '"']))
}

/// The requirement that pulled `name` in, from pip's "Collecting name… (from requester…)" line.
fn requested_by(output: &str, name: &str) -> Option<String> {
    output.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("Collecting ")?;
        let collected = requirement_name(rest.split_whitespace().next()?)?;
        if collected != name {
            return None;
        }
        let from = &rest[rest.find("(from ")? + "(from ".len()..];
        let spec = from.split([',', ')', ' ']).next()?;
        requirement_name(spec)
    })
}

/// Installed distributions, by normalized name (works on Python 2.7 and 3.x).
fn list_distributions(
    python: &Path,
    target: Option<&Path>,
    logs: &Path,
) -> Result<BTreeMap<String, String>, PythonError> {
    const SCRIPT: &str = "import sys\n\
try:\n    from importlib.metadata import distributions\n    found = [(d.metadata['Name'], d.version) for d in distributions()]\n\
except ImportError:\n    import pkg_resources\n    found = [(d.project_name, d.version) for d in pkg_resources.working_set]\n\
for name, version in sorted(set(found), key=str):\n    if name:\n        sys.stdout.write('%s==%s\\n' % (name, version))\n";
    let mut command = Command::new(python);
    command.args(["-c", SCRIPT]);
    installer_environment(&mut command, None);
    if let Some(target) = target {
        command.env("PYTHONPATH", target);
    }
    // Importing what was installed runs its code: confined as the installs were.
    confine_build(&mut command, scratch_of(logs), None)?;
    let log = logs.join("distributions.log");
    let outcome = run_logged(&mut command, &log, Duration::from_secs(120))
        .map_err(io_error(format!("run {}", python.display())))?;
    if !outcome.success() {
        return Err(PythonError::Broken {
            path: python.to_path_buf(),
            reason: format!("listing distributions failed: {}", log_tail(&log, 10)),
        });
    }
    let text =
        std::fs::read_to_string(&log).map_err(io_error(format!("read {}", log.display())))?;
    Ok(text
        .lines()
        .filter_map(|line| line.split_once("=="))
        .filter_map(|(name, version)| Some((requirement_name(name)?, version.trim().to_string())))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installers_see_only_index_and_proxy_settings() {
        let mut command = Command::new("pip");
        installer_environment(&mut command, Some(Path::new("/cache/pip")));
        // The index, proxy and build settings passed on, and what the installer environment sets.
        let passed = [
            crate::process::environment::PACKAGE_INDEX,
            crate::process::environment::BUILD,
        ]
        .concat();
        let set = [
            "PATH",
            "HOME",
            "LANG",
            "LC_ALL",
            "PYTHONDONTWRITEBYTECODE",
            "PYTHONNOUSERSITE",
            "PIP_DISABLE_PIP_VERSION_CHECK",
            "PIP_NO_WARN_SCRIPT_LOCATION",
            "PIP_NO_INPUT",
            "UV_PYTHON_DOWNLOADS",
            "PIP_CACHE_DIR",
            "UV_CACHE_DIR",
        ];
        let allowed: Vec<&str> = passed.iter().chain(&set).copied().collect();
        for (name, _) in command.get_envs() {
            let name = name.to_string_lossy().to_ascii_uppercase();
            assert!(
                allowed.contains(&name.as_str()),
                "{name} reaches the installer"
            );
        }
        let cache = command
            .get_envs()
            .find(|(name, _)| *name == "PIP_CACHE_DIR")
            .and_then(|(_, value)| value);
        assert_eq!(cache, Some(std::ffi::OsStr::new("/cache/pip")));
    }

    #[test]
    fn names_the_requirements_pip_blames() {
        let old = "Collecting nosuchthing==9.9\n  ERROR: Could not find a version that satisfies the requirement nosuchthing==9.9 (from versions: none)\nERROR: No matching distribution found for nosuchthing==9.9\n";
        assert_eq!(failing_requirements(old), ["nosuchthing"]);
        let build = "Collecting Cython_Thing<1\n  Downloading x.tar.gz\n  error: subprocess-exited-with-error\n  × python setup.py egg_info did not run successfully.\n";
        assert_eq!(failing_requirements(build), ["cython-thing"]);
        let conflict = "ERROR: Cannot install pytest<9,>=8 and six==1.10 because these package versions have conflicting dependencies.\n\nThe conflict is caused by:\n    The user requested pytest<9,>=8\n    The user requested six==1.10\n    thing 2.0 depends on six>=1.16\n";
        assert_eq!(failing_requirements(conflict), ["pytest", "six"]);
        // Found on structlog's 2013 dev-requirements under Python 2.7 (pip 19): a dependency of a
        // declared dev tool fails its `setup.py egg_info`; the declared tool is what can be dropped.
        let legacy = "Collecting pdbpp==0.7.2\n  Downloading pdbpp-0.7.2.tar.gz\nCollecting fancycompleter>=0.2 (from pdbpp==0.7.2)\n  Downloading fancycompleter-0.9.1.tar.gz\n    ERROR: Command errored out with exit status 1:\n     command: /usr/bin/python -c 'import sys; sys.argv[0] = '\"'\"'/tmp/pip-install-82BSVH/fancycompleter/setup.py'\"'\"'' egg_info\n         cwd: /tmp/pip-install-82BSVH/fancycompleter/\nERROR: Command errored out with exit status 1: python setup.py egg_info Check the logs for full command output.\n";
        assert_eq!(failing_requirements(legacy), ["fancycompleter", "pdbpp"]);
        let install = "ERROR: Command errored out with exit status 1: /usr/bin/python -u -c 'import sys; sys.argv[0] = '\"'\"'/tmp/pip-install-kVH8pG/pdbpp/setup.py'\"'\"'' install --record /tmp/r.txt Check the logs for full command output.\n";
        assert_eq!(failing_requirements(install), ["pdbpp"]);
        // Found on structlog 21b3d16's parent under Python 3.6 (pip 18).
        let pip_18 = "Collecting python-rapidjson\n  Downloading python-rapidjson-1.0.tar.gz\nCommand \"python setup.py egg_info\" failed with error code 1 in /tmp/pip-install-6f2b_oxn/python-rapidjson/\n";
        assert_eq!(failing_requirements(pip_18), ["python-rapidjson"]);
        assert_eq!(
            failing_requirements("ERROR: ResolutionImpossible"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn tells_the_network_from_a_missing_release() {
        let name = "claimflow-no-such-distribution".to_string();
        let missing = "ERROR: Could not find a version that satisfies the requirement claimflow-no-such-distribution==9.9 (from versions: none)\nERROR: No matching distribution found for claimflow-no-such-distribution==9.9\n";
        assert_eq!(
            classify_failure(missing, Some(&name), true),
            BuildFailure::NoSuchRequirement
        );
        // An old pip hides releases for another Python behind the same words.
        assert_eq!(
            classify_failure(missing, Some(&name), false),
            BuildFailure::Interpreter
        );
        let other_python = format!(
            "ERROR: Ignored the following versions that require a different python version: 9.9 Requires-Python >=3.12\n{missing}"
        );
        assert_eq!(
            classify_failure(&other_python, Some(&name), true),
            BuildFailure::Interpreter
        );
        let offline = format!(
            "WARNING: Retrying (Retry(total=4)) after connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object>: Failed to establish a new connection: [Errno -3] Temporary failure in name resolution')': /simple/claimflow-no-such-distribution/\n{missing}"
        );
        assert_eq!(
            classify_failure(&offline, Some(&name), true),
            BuildFailure::Infrastructure
        );
        let uv = "  × No solution found when resolving dependencies:\n  ╰─▶ Because there are no versions of claimflow-no-such-distribution and you require claimflow-no-such-distribution==9.9, we can conclude that your requirements are unsatisfiable.\n";
        assert_eq!(failing_requirements(uv), [name.as_str()]);
        assert_eq!(
            classify_failure(uv, Some(&name), false),
            BuildFailure::NoSuchRequirement
        );
        let uv_newer = "  × No solution found when resolving dependencies:\n  ╰─▶ Because claimflow-no-such-distribution was not found in the package registry and you require claimflow-no-such-distribution==9.9, we can conclude that your requirements are unsatisfiable.\n";
        assert_eq!(failing_requirements(uv_newer), [name.as_str()]);
        assert_eq!(
            classify_failure(uv_newer, Some(&name), false),
            BuildFailure::NoSuchRequirement
        );
        let uv_build =
            "  × Failed to build `thing==1.0`\n  ├─▶ The build backend returned an error\n";
        assert_eq!(failing_requirements(uv_build), ["thing"]);
        let build = "Collecting thing\n  × python setup.py egg_info did not run successfully.\n";
        assert_eq!(
            classify_failure(build, Some(&"thing".to_string()), true),
            BuildFailure::Interpreter
        );
    }

    #[test]
    fn reads_the_pip_version_of_a_venv() {
        let directory = tempfile::tempdir().unwrap();
        assert_eq!(pip_version(directory.path()), None);
        std::fs::create_dir(directory.path().join("pip-21.2.4.dist-info")).unwrap();
        std::fs::create_dir(directory.path().join("pytest-8.3.4.dist-info")).unwrap();
        assert_eq!(pip_version(directory.path()), Some((21, 2)));
    }
}
