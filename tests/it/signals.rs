//! Stopping a run: SIGINT or SIGTERM kills every child claimflow started (and their children),
//! removes the half-built environment, and exits with 128 + the signal.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::project::Project;
use crate::environments::{TEST, dated_repository};

/// A process a test started, told apart from a later one that got the same pid: the suite starts
/// thousands of processes beside these tests, and a pid freed by a killed child can be handed to
/// one of them while the test still watches it.
struct Watched {
    pid: String,
    /// Its start time (clock ticks since boot) when it was first seen; None if it had already gone.
    started: Option<u64>,
}

impl Watched {
    fn new(pid: &str) -> Self {
        let pid = pid.trim().to_string();
        let started = stat(&pid).and_then(|fields| start_time(&fields));
        Watched { pid, started }
    }

    /// A pid read after the run ended: watched only if what runs under it now is `ours` (its command
    /// line contains that text), since the pid may have been handed to another process meanwhile.
    fn if_ours(pid: &str, ours: &str) -> Self {
        let watched = Watched::new(pid);
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", watched.pid)).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(ours) {
            watched
        } else {
            Watched {
                started: None,
                ..watched
            }
        }
    }

    /// Whether the process still runs: the same pid, the same start time, not a zombie.
    fn alive(&self) -> bool {
        let Some(started) = self.started else {
            return false;
        };
        stat(&self.pid).is_some_and(|fields| {
            fields.first().map(String::as_str) != Some("Z") && start_time(&fields) == Some(started)
        })
    }

    /// What a survivor is, for the failure message.
    fn describe(&self) -> String {
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", self.pid))
            .map(|bytes| String::from_utf8_lossy(&bytes).replace('\0', " "))
            .unwrap_or_default();
        format!("pid {} ({cmdline}) {:?}", self.pid, stat(&self.pid))
    }
}

/// The fields of /proc/<pid>/stat after the command name (state first), if the process exists.
fn stat(pid: &str) -> Option<Vec<String>> {
    if pid.is_empty() {
        return None;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(") ")?;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// The start time, field 22 of /proc/<pid>/stat (the 20th after the command name).
fn start_time(fields: &[String]) -> Option<u64> {
    fields.get(19)?.parse().ok()
}

/// Waits until none of `processes` runs, naming the survivors if some outlive the wait.
fn wait_for_death(what: &str, processes: &[Watched]) {
    let started = Instant::now();
    while processes.iter().any(Watched::alive) {
        if started.elapsed() > Duration::from_secs(120) {
            let survivors: Vec<String> = processes
                .iter()
                .filter(|process| process.alive())
                .map(Watched::describe)
                .collect();
            panic!("timed out waiting for {what}: {}", survivors.join("; "));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
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
    // Without namespaces: inside them the build's processes write pids of their own PID
    // namespace, and die with it whatever claimflow does; without them, claimflow's own signal
    // handling is all that stops them, which is what this pins.
    let mut claimflow = project
        .command(&["run", "pipeline.yaml"])
        .env("CLAIMFLOW_CACHE_DIR", &cache)
        .env("CLAIMFLOW_SANDBOX", "off")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A pid file counts once its line is whole (the shell creates it before it writes).
    let read = |name: &str| {
        std::fs::read_to_string(scratch.path().join(name))
            .ok()
            .filter(|text| text.ends_with('\n'))
    };
    wait_for("the environment build to start", || {
        read("child").is_some() && read("grandchild").is_some()
    });
    let building_processes = [
        Watched::new(&read("child").unwrap()),
        Watched::new(&read("grandchild").unwrap()),
    ];
    assert!(
        building_processes.iter().all(Watched::alive),
        "the build's processes run when the signal is sent"
    );
    let building = cache.join("envs/.building");
    assert_eq!(std::fs::read_dir(&building).unwrap().count(), 1);
    // SAFETY: signals the claimflow process this test started.
    unsafe {
        libc::kill(claimflow.id() as libc::pid_t, signal);
    }
    let status = claimflow.wait().unwrap();
    let stderr = std::io::read_to_string(claimflow.stderr.take().unwrap()).unwrap();
    wait_for_death("the children to die", &building_processes);
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
    let command_processes = [
        Watched::new(&read("child").unwrap()),
        Watched::new(&read("grandchild").unwrap()),
    ];
    assert!(
        command_processes.iter().all(Watched::alive),
        "the command's processes run when the signal is sent"
    );
    // SAFETY: signals the claimflow process this test started.
    unsafe {
        libc::kill(claimflow.id() as libc::pid_t, libc::SIGINT);
    }
    let status = claimflow.wait().unwrap();
    let stderr = std::io::read_to_string(claimflow.stderr.take().unwrap()).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    wait_for_death("the command and its child to die", &command_processes);
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
    let pids: Vec<Watched> = std::fs::read_dir(project.path("pids"))
        .unwrap()
        .flatten()
        .filter_map(|entry| std::fs::read_to_string(entry.path()).ok())
        .filter(|pid| !pid.trim().is_empty())
        .map(|pid| Watched::if_ours(&pid, "pids/"))
        .collect();
    assert!(pids.len() >= 100, "{} pids", pids.len());
    assert!(
        pids.len() < quick.len() + slow.len(),
        "the run was stopped before every item started"
    );
    wait_for_death("every started command to die", &pids);
}
