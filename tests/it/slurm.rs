//! Items on a real Slurm cluster (`run --executor slurm`): a job that fails, is cancelled or
//! times out is an item error and nothing of it is cached; Ctrl-C on the coordinator cancels
//! every job it submitted; a coordinator killed mid-run leaves jobs whose results the next run
//! takes instead of submitting them again.
//!
//! These tests need a cluster (`.ci/slurm/start.sh` starts a one-node one). Without `sinfo` they
//! print why and pass, except under CI (`CI=true`), where a missing cluster fails them. Their
//! projects and caches live under Cargo's target directory: `/tmp` is node-local, and the
//! executor refuses it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::project::{Project, Ran};
use crate::environments::dated_repository;

const TEST: &str = "from demo import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n    \
                    assert add(0, 0) == 0\n";

/// Held by each test while it uses the cluster: the CI cluster is one node with a CPU per core,
/// and tests that wait for their jobs to run must not queue behind each other's.
static CLUSTER: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The cluster, held, when one answers; otherwise says why the test is skipped (or fails under
/// CI).
fn cluster() -> Option<std::sync::MutexGuard<'static, ()>> {
    let answers = Command::new("sinfo")
        .args(["--noheader", "--format=%T"])
        .output()
        .is_ok_and(|output| output.status.success() && !output.stdout.is_empty());
    if answers {
        return Some(
            CLUSTER
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        );
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI=true but no Slurm cluster answers (`sinfo` fails): .ci/run starts one with \
         .ci/slurm/start.sh"
    );
    eprintln!(
        "skipped: no Slurm cluster here (`sinfo` is absent or fails); .ci/slurm/start.sh \
         starts a one-node one"
    );
    None
}

/// A directory the cluster's jobs see: Cargo's target directory, not `/tmp`.
fn shared() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("slurm")
}

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A "python" that answers the version question and hangs when asked to build an environment,
/// as a slow install would: the job it runs in stays running until it is stopped. Each hanging
/// process leaves its pid in `hung/`, so the test can end what a killed job leaves behind.
fn hanging_python(directory: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let python = directory.join("python-that-hangs");
    let hung = directory.join("hung");
    std::fs::create_dir_all(&hung).unwrap();
    std::fs::write(
        &python,
        format!(
            "#!/bin/sh\ncase \"$*\" in *version_info*) echo 3.99.0; exit 0;; esac\n\
             touch {}/$$\nexec sleep 600\n",
            hung.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    python
}

/// A project whose `mine-claims` items (one per repository) hang in their jobs.
struct Hanging {
    project: Project,
    cache: PathBuf,
}

impl Drop for Hanging {
    fn drop(&mut self) {
        self.end_hung();
    }
}

impl Hanging {
    fn new(repositories: usize, executor: &str) -> Self {
        let project = Project::new_in(&shared());
        let python = hanging_python(project.root());
        let mut repos = String::new();
        for index in 0..repositories {
            let path = project.path(&format!("repository-{index}"));
            std::fs::create_dir_all(&path).unwrap();
            dated_repository(&path, 1_700_000_000 + index as i64, TEST);
            repos.push_str(&format!(
                "  - {{name: r{index}, path: {}, branch: main, python: [\"{}\"]}}\n",
                path.display(),
                python.display()
            ));
        }
        project.file(
            "pipeline.yaml",
            &format!(
                "version: 1\nname: hang\nrepos:\n{repos}executor:\n{executor}steps:\n  \
                 rank: {{uses: rank-commits}}\n  claims: {{uses: mine-claims, needs: [rank]}}\n"
            ),
        );
        let cache = project.path("python-cache");
        Hanging { project, cache }
    }

    fn command(&self) -> Command {
        let mut command = self
            .project
            .command(&["run", "pipeline.yaml", "--executor", "slurm"]);
        command.env("CLAIMFLOW_CACHE_DIR", &self.cache);
        command
    }

    fn start(&self) -> Child {
        self.command()
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn finish(child: Child) -> Ran {
        let output = child.wait_with_output().unwrap();
        Ran {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Starts a run and waits until `count` of its jobs run: the coordinator, the job ids, and
    /// how many action records the cache held then.
    fn started(&self, count: usize) -> (Child, Vec<String>, usize) {
        let child = self.start();
        let jobs = self.running(count);
        (child, jobs, self.actions())
    }

    /// The jobs the coordinator has submitted so far.
    fn submitted(&self) -> Vec<serde_json::Value> {
        submissions(&self.project)
    }

    /// Waits until `count` jobs run, and returns their ids.
    fn running(&self, count: usize) -> Vec<String> {
        let mut jobs = Vec::new();
        wait_for(
            &format!("{count} running jobs"),
            Duration::from_secs(120),
            || {
                jobs = self
                    .submitted()
                    .iter()
                    .map(|submission| submission["job"].to_string())
                    .collect();
                jobs.len() == count && jobs.iter().all(|job| state(job) == "RUNNING")
            },
        );
        jobs
    }

    /// Ends whatever hanging process a killed job left behind.
    fn end_hung(&self) {
        for entry in std::fs::read_dir(self.project.path("hung"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            // Still the sleeping fake python, not a process that took its pid since.
            let command = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if command == b"sleep\x00600\x00" {
                // SAFETY: signals a process this test's fake python recorded as itself.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }

    /// Action records in the project's cache.
    /// Action records in the cache's log (a job that stored its item appended one).
    fn actions(&self) -> usize {
        let store = claimflow::cache::Store::open(self.project.path(".claimflow/cache"))
            .expect("open the cache");
        store.stats().expect("cache stats").actions as usize
    }
}

fn submissions(project: &Project) -> Vec<serde_json::Value> {
    std::fs::read_to_string(project.path(".claimflow/slurm/submitted.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The job's state as squeue (or the completion log) reports it.
fn state(job: &str) -> String {
    let squeue = Command::new("squeue")
        .args([
            "--noheader",
            "--states=all",
            "--format=%T",
            &format!("--jobs={job}"),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&squeue.stdout).trim().to_string();
    if !text.is_empty() {
        return text;
    }
    let sacct = Command::new("sacct")
        .args([
            "-c",
            "--noheader",
            "--parsable2",
            "--format=State",
            &format!("--jobs={job}"),
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&sacct.stdout).trim().to_string()
}

/// The pids of this project's workers (their command line names its workdir).
fn workers(project: &Project) -> Vec<i32> {
    let workdir = project.path(".claimflow").display().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let command = std::fs::read(entry.path().join("cmdline")).ok()?;
            let command = String::from_utf8_lossy(&command).replace('\0', " ");
            (command.contains(" worker ") && command.contains(&workdir)).then_some(pid)
        })
        .collect()
}

fn assert_item_error(ran: &Ran, job: &str, state: &str) {
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert!(
        ran.stderr
            .contains(&format!("slurm job {job} ended {state}")),
        "{}",
        ran.stderr
    );
    assert!(ran.stderr.contains("log "), "{}", ran.stderr);
}

#[test]
fn a_job_that_fails_is_an_item_error_and_nothing_is_cached() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let hanging = Hanging::new(1, "  kind: slurm\n");
    let (child, jobs, actions_before) = hanging.started(1);
    let mut killed = Vec::new();
    wait_for("the worker process", Duration::from_secs(30), || {
        killed = workers(&hanging.project);
        !killed.is_empty()
    });
    for pid in killed {
        // SAFETY: kills a worker process of this test's own job.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
    let ran = Hanging::finish(child);
    assert_item_error(&ran, &jobs[0], "FAILED");
    assert_eq!(
        hanging.actions(),
        actions_before,
        "nothing of the job is cached"
    );
    assert!(
        !hanging
            .project
            .path(".claimflow/slurm/jobs")
            .read_dir()
            .unwrap()
            .any(|_| true),
        "the ended job is no longer in the journal"
    );
}

#[test]
fn a_cancelled_job_is_an_item_error_and_the_next_run_submits_it_again() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let hanging = Hanging::new(1, "  kind: slurm\n");
    let (child, jobs, actions_before) = hanging.started(1);
    assert!(
        Command::new("scancel")
            .arg(&jobs[0])
            .status()
            .unwrap()
            .success()
    );
    let ran = Hanging::finish(child);
    assert_item_error(&ran, &jobs[0], "CANCELLED");
    assert_eq!(hanging.actions(), actions_before);

    // Resubmitted on the next run, not taken from anywhere.
    let child = hanging.start();
    wait_for("a second submission", Duration::from_secs(60), || {
        hanging.submitted().len() == 2
    });
    let second = hanging.submitted()[1]["job"].to_string();
    assert_ne!(second, jobs[0]);
    assert!(
        Command::new("scancel")
            .arg(&second)
            .status()
            .unwrap()
            .success()
    );
    assert_item_error(&Hanging::finish(child), &second, "CANCELLED");
}

#[test]
fn a_job_past_its_time_limit_is_an_item_error() {
    let Some(_cluster) = cluster() else {
        return;
    };
    // Slurm counts limits in minutes and checks them every 30 s: this takes one to two minutes.
    let hanging = Hanging::new(1, "  kind: slurm\n  time: {mine-claims: 1}\n");
    let (child, jobs, actions_before) = hanging.started(1);
    let ran = Hanging::finish(child);
    assert_item_error(&ran, &jobs[0], "TIMEOUT");
    assert!(ran.stderr.contains("raise `time:`"), "{}", ran.stderr);
    assert_eq!(hanging.actions(), actions_before);
}

#[test]
fn ctrl_c_on_the_coordinator_cancels_every_job_it_submitted() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let hanging = Hanging::new(2, "  kind: slurm\n");
    let (child, jobs, _) = hanging.started(2);
    // SAFETY: signals the claimflow process this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let ran = Hanging::finish(child);
    assert_eq!(ran.code, 130, "{}", ran.stderr);
    wait_for("every job to be cancelled", Duration::from_secs(60), || {
        jobs.iter().all(|job| state(job).starts_with("CANCELLED"))
    });
    wait_for("the workers to stop", Duration::from_secs(60), || {
        workers(&hanging.project).is_empty()
    });
}

#[test]
fn a_coordinator_killed_mid_run_leaves_results_the_next_run_takes() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let project = Project::new_in(&shared());
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/demo");
    project.file(
        "pipeline.yaml",
        &format!(
            "version: 1\nname: killed\nrepos:\n  - {{name: demo, corpus: {}, branch: main, \
             python: [\"3.11\"]}}\nexecutor: {{kind: slurm}}\nsteps:\n  \
             rank: {{uses: rank-commits, with: {{top: 2}}}}\n  \
             claims: {{uses: mine-claims, needs: [rank]}}\n",
            corpus.display()
        ),
    );
    let mut coordinator = project
        .command(&["run", "pipeline.yaml"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("two submissions", Duration::from_secs(120), || {
        submissions(&project).len() == 2
    });
    // SIGKILL: the coordinator gets no chance to cancel anything.
    coordinator.kill().unwrap();
    coordinator.wait().unwrap();
    let jobs: Vec<String> = submissions(&project)
        .iter()
        .map(|submission| submission["job"].to_string())
        .collect();
    wait_for(
        "the orphaned jobs to complete",
        Duration::from_secs(300),
        || jobs.iter().all(|job| state(job) == "COMPLETED"),
    );

    let ran = project.ok(&["run", "pipeline.yaml"]);
    assert_eq!(submissions(&project).len(), 2, "nothing submitted again");
    assert!(
        ran.stderr.contains("claims: done, 0 computed, 2 cached"),
        "{}",
        ran.stderr
    );
}

#[test]
fn a_node_local_workdir_is_refused_before_anything_is_submitted() {
    let Some(_cluster) = cluster() else {
        return;
    };
    let project = Project::new();
    project.file(
        "pipeline.yaml",
        "version: 1\nname: local\nrepos:\n  - {name: demo, path: ., branch: main}\n\
         steps:\n  rank: {uses: rank-commits}\n",
    );
    let ran = project.run(&["run", "pipeline.yaml", "--executor", "slurm"]);
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    assert!(ran.stderr.contains("workdir"), "{}", ran.stderr);
    assert!(ran.stderr.contains("local to each node"), "{}", ran.stderr);
    assert!(!project.path(".claimflow/slurm/submitted.jsonl").exists());
}
