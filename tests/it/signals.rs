//! Stopping a run: SIGINT or SIGTERM kills every child claimflow started (and their children),
//! removes the half-built environment, and exits with 128 + the signal.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::project::Project;
use crate::environments::{TEST, dated_repository};

/// Whether `pid` runs (a zombie nobody has reaped yet does not).
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat.rsplit_once(") ").map(|(_, rest)| rest.chars().next());
        state != Some(Some('Z'))
    })
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A "python" that answers the version question, and otherwise (creating a venv) starts a
/// grandchild, writes both pids down and hangs, as a slow pip install would.
fn hanging_python(directory: &Path) -> std::path::PathBuf {
    let python = directory.join("python-that-hangs");
    std::fs::write(
        &python,
        format!(
            "#!/bin/sh\ncase \"$*\" in *version_info*) echo 3.99.0; exit 0;; esac\n\
             sleep 300 &\necho $! > {dir}/grandchild\necho $$ > {dir}/child\nwait\n",
            dir = directory.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    python
}

fn stop_while_building(signal: libc::c_int) -> (i32, String) {
    let scratch = tempfile::tempdir().unwrap();
    let repository = tempfile::tempdir().unwrap();
    dated_repository(repository.path(), 1_700_000_000, TEST);
    let python = hanging_python(scratch.path());
    let cache = scratch.path().join("cache");
    let project = Project::new();
    project.file(
        "pipeline.yaml",
        &format!(
            "version: 1\nname: stop\nrepos:\n  - name: demo\n    path: {}\n    branch: main\n    \
             python: [\"{}\"]\nsteps:\n  rank: {{uses: rank-commits}}\n  \
             claims: {{uses: mine-claims, needs: [rank]}}\n",
            repository.path().display(),
            python.display()
        ),
    );
    let mut claimflow = project
        .command(&["run", "pipeline.yaml"])
        .env("CLAIMFLOW_CACHE_DIR", &cache)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let read = |name: &str| std::fs::read_to_string(scratch.path().join(name)).ok();
    wait_for("the environment build to start", || {
        read("child").is_some() && read("grandchild").is_some()
    });
    let child = read("child").unwrap().trim().to_string();
    let grandchild = read("grandchild").unwrap().trim().to_string();
    let building = cache.join("envs/.building");
    assert_eq!(std::fs::read_dir(&building).unwrap().count(), 1);
    // SAFETY: signals the claimflow process this test started.
    unsafe {
        libc::kill(claimflow.id() as libc::pid_t, signal);
    }
    let status = claimflow.wait().unwrap();
    let stderr = std::io::read_to_string(claimflow.stderr.take().unwrap()).unwrap();
    wait_for("the children to die", || {
        !alive(&child) && !alive(&grandchild)
    });
    assert_eq!(
        std::fs::read_dir(&building).unwrap().count(),
        0,
        "the half-built environment is removed"
    );
    assert_eq!(std::fs::read_dir(cache.join("envs")).unwrap().count(), 1);
    (status.code().unwrap_or(-1), stderr)
}

/// Regression: stopping a run left two `pip install` processes running, reparented to init.
#[test]
fn ctrl_c_while_an_environment_builds_leaves_no_process_behind() {
    let (code, stderr) = stop_while_building(libc::SIGINT);
    assert_eq!(code, 130, "{stderr}");
}

#[test]
fn sigterm_while_an_environment_builds_leaves_no_process_behind() {
    let (code, stderr) = stop_while_building(libc::SIGTERM);
    assert_eq!(code, 143, "{stderr}");
}

/// A user's `command` step is stopped with the run, its own children included.
#[test]
fn ctrl_c_stops_a_command_step_and_what_it_started() {
    let project = Project::new();
    project.file(
        "pipeline.yaml",
        "version: 1\nname: stop\nsteps:\n  slow:\n    uses: command\n    with:\n      \
         run: sleep 300 & echo $! > grandchild; echo $$ > child; wait\n",
    );
    let mut claimflow = project
        .command(&["run", "pipeline.yaml"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let read = |name: &str| {
        std::fs::read_to_string(project.path(name))
            .ok()
            .filter(|text| text.ends_with('\n'))
    };
    wait_for("the command to start", || {
        read("child").is_some() && read("grandchild").is_some()
    });
    let child = read("child").unwrap().trim().to_string();
    let grandchild = read("grandchild").unwrap().trim().to_string();
    // SAFETY: signals the claimflow process this test started.
    unsafe {
        libc::kill(claimflow.id() as libc::pid_t, libc::SIGINT);
    }
    let status = claimflow.wait().unwrap();
    let stderr = std::io::read_to_string(claimflow.stderr.take().unwrap()).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    wait_for("the command and its child to die", || {
        !alive(&child) && !alive(&grandchild)
    });
}

/// Ctrl-C while a step's workers start commands one after another: every command that started
/// is stopped with the run, whichever moment of a start the signal falls on.
#[test]
fn ctrl_c_while_workers_start_commands_leaves_none_of_them_behind() {
    let project = Project::new();
    let quick: Vec<String> = (0..400).map(|n| format!("q{n:03}")).collect();
    let slow: Vec<String> = (0..4).map(|n| format!("s{n}")).collect();
    project.file(
        "pipeline.yaml",
        &format!(
            "version: 1\nname: stop\nsteps:\n  many:\n    uses: command\n    with:\n      \
             foreach: [{}]\n      \
             run: \"mkdir -p pids && echo $$ > pids/{{item}}.tmp && mv pids/{{item}}.tmp pids/{{item}}; \
             case {{item}} in s*) sleep 300;; esac\"\n",
            quick.iter().chain(&slow).cloned().collect::<Vec<_>>().join(", ")
        ),
    );
    let mut claimflow = project
        .command(&["run", "pipeline.yaml", "-j", "8"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = || {
        std::fs::read_dir(project.path("pids"))
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|entry| entry.path().extension().is_none())
                    .count()
            })
            .unwrap_or(0)
    };
    // In the middle of the quick items: starts are happening all the time.
    wait_for("a hundred commands to start", || started() >= 100);
    // SAFETY: signals the claimflow process this test started.
    unsafe {
        libc::kill(claimflow.id() as libc::pid_t, libc::SIGINT);
    }
    let status = claimflow.wait().unwrap();
    let stderr = std::io::read_to_string(claimflow.stderr.take().unwrap()).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    let pids: Vec<String> = std::fs::read_dir(project.path("pids"))
        .unwrap()
        .flatten()
        .filter_map(|entry| std::fs::read_to_string(entry.path()).ok())
        .map(|pid| pid.trim().to_string())
        .filter(|pid| !pid.is_empty())
        .collect();
    assert!(pids.len() >= 100, "{} pids", pids.len());
    assert!(
        pids.len() < quick.len() + slow.len(),
        "the run was stopped before every item started"
    );
    wait_for("every started command to die", || {
        pids.iter().all(|pid| !alive(pid))
    });
}
