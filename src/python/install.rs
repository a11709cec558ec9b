//! Building an environment in a scratch directory: `python -m venv` (or `uv venv`), then one
//! install of pytest and the requirements. A requirement the commit merely declares that will not
//! install is dropped and recorded (old pins vanish from indexes); pytest and the repository's own
//! pins may not be dropped. pip and uv get an allow-listed environment: index and proxy settings,
//! never the caller's secrets.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::build_error::{BuildFailure, PythonError, io_error};
use super::environment_request::{
    DroppedRequirement, Environment, EnvironmentRequest, Installer, uv_program,
};
use super::requirements::{Requirement, requirement_name};
use crate::process::cpu_use::{STARVED_ATTEMPTS, retry_starved};
use crate::process::{Capture, ChildEnvironment, Outcome, Run, log_tail, run_logged};

/// pip resolves and downloads; a slow index must not hang a pipeline forever.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(900);
/// How many failing discovered requirements may be dropped before giving up.
const MAX_DROPPED: usize = 8;

/// Builds the environment in `scratch` and describes it with paths under `scratch`.
pub(super) fn build(
    request: &EnvironmentRequest,
    scratch: &Path,
    pip_cache: &Path,
    digest: &str,
) -> Result<Environment, PythonError> {
    let interpreter = request.interpreter.version.to_string();
    let logs = scratch.join("logs");
    std::fs::create_dir_all(&logs).map_err(io_error(format!("create {}", logs.display())))?;
    let python_2 = request.interpreter.version.major < 3;
    let (python, site_packages, python_path) = if python_2 {
        let site = scratch.join("site");
        (request.interpreter.path.clone(), site.clone(), vec![site])
    } else {
        create_venv(request, scratch, &logs.join("venv.log"))?;
        let python = scratch.join("bin").join("python");
        let site = scratch
            .join("lib")
            .join(format!(
                "python{}",
                request.interpreter.version.minor_string()
            ))
            .join("site-packages");
        (python, site, vec![])
    };
    let mut wanted: Vec<Requirement> = request.requirements.clone();
    let mut dropped = Vec::new();
    loop {
        let mut specs: Vec<String> = wanted.iter().map(|r| r.spec.clone()).collect();
        specs.push(request.pytest.clone());
        specs.sort();
        let log = logs.join(format!("install-{}.log", dropped.len()));
        let mut command = install_command(
            request,
            &python,
            python_2.then_some(site_packages.as_path()),
            &specs,
            pip_cache,
        );
        // An install starved of CPU by a busy machine is tried again; one that still cannot
        // finish fails as the machine's fault, never as the environment's.
        let finished = retry_starved(
            |_| {
                Run::new(&mut command, Capture::Log(&log))
                    .timeout(INSTALL_TIMEOUT)
                    .run()
            },
            |finished| finished.stall.is_some_and(|stall| stall.starved()),
        )
        .map_err(io_error(format!("run pip for python {interpreter}")))?;
        match finished.outcome {
            Outcome::Exited(0) => break,
            Outcome::TimedOut => {
                let what = format!("installing {} for python {interpreter}", specs.join(" "));
                return Err(PythonError::Timeout {
                    what: match finished.stall.filter(|stall| stall.starved()) {
                        Some(stall) => format!(
                            "{what} on a machine too busy to finish it ({STARVED_ATTEMPTS} \
                             attempts starved of CPU, the last: {stall})"
                        ),
                        None => what,
                    },
                    seconds: INSTALL_TIMEOUT.as_secs(),
                });
            }
            _ => {}
        }
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let tail = log_tail(&log, 15);
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
                let modern_pip = !python_2 && pip_version(&site_packages) >= Some((21, 2));
                return Err(PythonError::Install {
                    failure: classify_failure(&text, culprits.first(), modern_pip),
                    requirement: culprits.first().cloned().unwrap_or_else(|| specs.join(" ")),
                    interpreter,
                    tail,
                });
            }
        }
    }
    let distributions =
        list_distributions(&python, python_2.then_some(site_packages.as_path()), &logs)?;
    let pytest = distributions
        .get("pytest")
        .cloned()
        .ok_or_else(|| PythonError::Broken {
            path: scratch.to_path_buf(),
            reason: "pytest is not installed after a successful install".into(),
        })?;
    Ok(Environment {
        root: scratch.to_path_buf(),
        python,
        interpreter,
        pytest,
        installer: match request.installer {
            Installer::Pip => "pip".into(),
            Installer::Uv => "uv".into(),
        },
        digest: digest.to_string(),
        site_packages,
        python_path,
        distributions,
        dropped,
    })
}

fn create_venv(
    request: &EnvironmentRequest,
    scratch: &Path,
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
    installer_environment(&mut command, None);
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
    specs: &[String],
    pip_cache: &Path,
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
    command.args(specs);
    installer_environment(&mut command, Some(pip_cache));
    command
}

/// The installer's environment: the package index, proxy and build settings of claimflow's own
/// environment, never secrets ([`ChildEnvironment::installer`]).
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
