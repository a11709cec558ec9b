//! Hostile code: a mined repository whose test prints its environment, reads `~/.ssh` and the
//! user's real home, and tries to connect out. Run through the binary (ranking, mining, the oracle)
//! with a fake API key in claimflow's own environment and a home holding a fake SSH key and
//! `.netrc`, the test sees no secret, a private home inside the workdir, none of the real home's
//! credentials, and — where the kernel allows namespaces (`claimflow doctor` says) — no network.

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::common::git::FixtureRepo;
use crate::common::project::Project;

const API_KEY: &str = "sk-hostile-5c1d9e0a7b3f";
const SSH_KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY----- hostile-test-secret";
const NETRC: &str = "machine example.invalid login me password hostile-netrc-secret";

/// The parent's test: it records what it saw as one JSON line in `report`, and passes.
fn hostile_test(report: &Path, real_home: &Path, port: u16) -> String {
    format!(
        r#"import json, os, socket

REPORT = {report:?}
REAL_HOME = {real_home:?}


def read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except Exception as error:
        return "refused: " + type(error).__name__


def test_looks_around():
    seen = {{"environ": dict(os.environ), "home": os.path.expanduser("~")}}
    seen["ssh_via_home"] = read(os.path.expanduser("~/.ssh/id_rsa"))
    seen["ssh_real"] = read(os.path.join(REAL_HOME, ".ssh", "id_rsa"))
    seen["netrc_real"] = read(os.path.join(REAL_HOME, ".netrc"))
    try:
        connection = socket.create_connection(("127.0.0.1", {port}), timeout=3)
        connection.sendall(b"hostile")
        connection.close()
        seen["network"] = "connected"
    except Exception as error:
        seen["network"] = "refused: " + type(error).__name__
    with open(REPORT, "a") as handle:
        handle.write(json.dumps(seen) + "\n")
    assert seen is not None
"#
    )
}

/// Reads what writers send through a FIFO, one opening after another, until [`FifoReader::finish`].
pub(crate) struct FifoReader {
    path: PathBuf,
    thread: std::thread::JoinHandle<String>,
}

impl FifoReader {
    const END: &'static str = "claimflow-fifo-end\n";

    pub(crate) fn start(path: &Path) -> Self {
        let made = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(made.success(), "mkfifo {}", path.display());
        let reading = path.to_path_buf();
        let thread = std::thread::spawn(move || {
            let mut text = String::new();
            loop {
                let mut chunk = String::new();
                std::fs::File::open(&reading)
                    .and_then(|mut fifo| fifo.read_to_string(&mut chunk))
                    .expect("the FIFO reads");
                if let Some(before) = chunk.strip_suffix(Self::END) {
                    text.push_str(before);
                    return text;
                }
                text.push_str(&chunk);
            }
        });
        FifoReader {
            path: path.to_path_buf(),
            thread,
        }
    }

    /// Everything written, once the last writer is gone.
    pub(crate) fn finish(self) -> String {
        std::fs::write(&self.path, Self::END).unwrap();
        self.thread.join().unwrap()
    }
}

fn real_home() -> PathBuf {
    PathBuf::from(std::env::var_os("HOME").expect("HOME is set"))
}

#[test]
fn hostile_code_sees_no_secret_no_real_home_and_no_network() {
    // A listener on this machine's loopback: a test process outside a network namespace reaches it.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counting = Arc::clone(&accepted);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopping = Arc::clone(&stop);
    let watcher = std::thread::spawn(move || {
        while !stopping.load(Ordering::SeqCst) {
            if let Ok((mut stream, _)) = listener.accept() {
                counting.fetch_add(1, Ordering::SeqCst);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
                let _ = stream.read(&mut [0u8; 16]);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });

    let scratch = tempfile::tempdir().unwrap();
    let home = scratch.path().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), SSH_KEY).unwrap();
    std::fs::write(home.join(".netrc"), NETRC).unwrap();
    // The test process may write only inside its checkout and private directories: it reports
    // through a FIFO made here, which a read-only mount still lets it open and write.
    let report = scratch.path().join("seen.fifo");
    let reader = FifoReader::start(&report);

    let test_file = hostile_test(&report, &home, port);
    let mut repository = FixtureRepo::new();
    repository
        .commit(
            "A library",
            &[
                ("pkg/__init__.py", Some("")),
                ("pkg/core.py", Some("def one():\n    return 1\n")),
                ("tests/test_core.py", Some(&test_file)),
            ],
        )
        .commit(
            "one is two",
            &[
                ("pkg/core.py", Some("def one():\n    return 2\n")),
                (
                    "tests/test_core.py",
                    Some(&test_file.replace("    assert seen is not None\n", "")),
                ),
            ],
        );
    let project = Project::new();
    project.file(
        "pipeline.yaml",
        &format!(
            "version: 1\nname: hostile\nrepos:\n  - {{name: lib, path: \"{}\", branch: main, python: [\"3.11\"]}}\n\
             steps:\n  rank: {{uses: rank-commits}}\n  claims: {{uses: mine-claims, needs: [rank]}}\n  \
             truth: {{uses: oracle, needs: [claims], with: {{runs: 2}}}}\n",
            repository.path().display()
        ),
    );
    let real = real_home();
    let ran = project
        .command(&["run", "pipeline.yaml"])
        .env("HOME", &home)
        .env("CLAIMFLOW_API_KEY", API_KEY)
        .env("OPENAI_API_KEY", API_KEY)
        .env("GITHUB_TOKEN", API_KEY)
        .env("CLAIMFLOW_CACHE_DIR", crate::common::pytools::cache_dir())
        .env(
            "PYENV_ROOT",
            std::env::var_os("PYENV_ROOT").unwrap_or_else(|| real.join(".pyenv").into()),
        )
        .env(
            "UV_CACHE_DIR",
            std::env::var_os("UV_CACHE_DIR").unwrap_or_else(|| real.join(".cache/uv").into()),
        )
        .output()
        .expect("claimflow runs");
    stop.store(true, Ordering::SeqCst);
    watcher.join().unwrap();
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(ran.status.success(), "{stderr}");
    let doctor = project.ok(&["doctor"]).stdout;
    let isolated = doctor.contains("active    no network");
    // The run's summary says the same as doctor.
    assert!(
        stderr.contains("test processes: allow-listed environment"),
        "{stderr}"
    );
    assert_eq!(
        stderr.contains("no network"),
        isolated,
        "{stderr}\n{doctor}"
    );

    let text = reader.finish();
    let sights: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    // Collection does not run the test; the oracle runs it at the parent and at the child.
    assert!(sights.len() >= 2, "{text}");
    for seen in &sights {
        let line = seen.to_string();
        for secret in [API_KEY, SSH_KEY, NETRC] {
            assert!(!line.contains(secret), "a secret reached the test: {line}");
        }
        let environ = seen["environ"].as_object().unwrap();
        for name in environ.keys() {
            assert!(
                !claimflow::oracle::command::looks_secret(name)
                    && ![
                        "CLAIMFLOW_API_KEY",
                        "CLAIMFLOW_CACHE_DIR",
                        "OPENAI_API_KEY",
                        "GITHUB_TOKEN",
                        "UV_CACHE_DIR",
                    ]
                    .contains(&name.as_str()),
                "{name} of claimflow's environment reached the test"
            );
        }
        let private = PathBuf::from(seen["home"].as_str().unwrap());
        assert_ne!(private, home, "the test's home is the real one");
        assert!(
            private.starts_with(project.root()),
            "the private home {private:?} is not inside the project's workdir"
        );
        assert!(
            seen["ssh_via_home"]
                .as_str()
                .unwrap()
                .starts_with("refused"),
            "{line}"
        );
        if isolated {
            assert!(
                seen["ssh_real"].as_str().unwrap().starts_with("refused"),
                "{line}"
            );
            assert!(seen["netrc_real"].as_str().unwrap().is_empty(), "{line}");
            assert!(
                seen["network"].as_str().unwrap().starts_with("refused"),
                "{line}"
            );
        }
    }
    if isolated {
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            0,
            "a test process connected out"
        );
    }
}
