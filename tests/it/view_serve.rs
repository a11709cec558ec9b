//! `claimflow view --serve` through the binary: the defects users found in the first server, each
//! pinned by a test named after it. Every read has a generous timeout, so a server that stalls
//! fails the test instead of hanging it; nothing is timed beyond that.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::common::project::Project;

/// How long any answer may take before the server counts as stalled.
const PATIENCE: Duration = Duration::from_secs(60);

/// A project with a results directory `results/run`: a page, a figure whose name needs
/// percent-encoding, and a file outside the directory that must never be served.
fn results() -> Project {
    let project = Project::new();
    let page = claimflow::view::render(&claimflow::view::synthetic::inputs(5, 3, 1));
    project
        .file("results/run/index.html", &page)
        .file("results/run/figures/arms by size.svg", "<svg/>")
        .file("secret.txt", "secret");
    project
}

/// A running `claimflow view results/run --serve`, stopped when dropped.
struct Serving {
    child: Child,
    port: u16,
}

impl Serving {
    fn start(project: &Project) -> Self {
        let mut child = project
            .command(&["view", "results/run", "--serve"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("claimflow runs");
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let mut said = String::new();
        for line in stderr.lines() {
            let line = line.unwrap();
            said.push_str(&line);
            if let Some((_, rest)) = line.split_once("http://127.0.0.1:") {
                let port = rest.split('/').next().unwrap().parse().unwrap();
                return Serving { child, port };
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("the server did not say where it serves: {said}");
    }

    fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        stream
    }

    /// The whole answer to `request`, sent on a connection of its own.
    fn ask(&self, request: &str) -> String {
        answer(&mut self.connect(), request)
    }

    /// The answer to `GET path` with `Host: host`.
    fn get(&self, host: &str, path: &str) -> String {
        self.ask(&format!(
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        ))
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends `request` on `stream` and reads until the server closes it.
fn answer(stream: &mut TcpStream, request: &str) -> String {
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    if let Err(error) = stream.read_to_end(&mut answer) {
        panic!(
            "no whole answer to {request:?} within {PATIENCE:?} ({error}); got {:?}",
            String::from_utf8_lossy(&answer)
        );
    }
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn an_idle_connection_stalled_every_other_request() {
    let project = results();
    let server = Serving::start(&project);
    // A connection that sends nothing, like a browser's spare one.
    let mut idle = server.connect();
    let page = server.get("127.0.0.1", "/");
    assert!(page.starts_with("HTTP/1.1 200 OK"), "{page}");
    // Answered while the idle one is still open, not after it timed out: it is served in turn.
    let late = answer(
        &mut idle,
        "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    assert!(late.starts_with("HTTP/1.1 200 OK"), "{late}");
}

#[test]
fn a_rebinding_host_was_served() {
    let project = results();
    let server = Serving::start(&project);
    let port = server.port;
    for host in [
        "evil.example".to_string(),
        format!("evil.example:{port}"),
        format!("localhost.evil.example:{port}"),
    ] {
        let refused = server.get(&host, "/");
        assert!(refused.starts_with("HTTP/1.1 421"), "{host}: {refused}");
        assert!(
            refused.contains(&format!("open http://127.0.0.1:{port}/")),
            "{refused}"
        );
        assert!(!refused.contains("<html"), "{refused}");
    }
    // An absolute target names the server too, whatever the Host says.
    let absolute = server.ask(&format!(
        "GET http://evil.example:{port}/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    ));
    assert!(absolute.starts_with("HTTP/1.1 421"), "{absolute}");
    let missing = server.ask("GET / HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert!(missing.starts_with("HTTP/1.1 400"), "{missing}");
    assert!(missing.contains("no Host header"), "{missing}");
    for host in [
        "127.0.0.1".to_string(),
        format!("127.0.0.1:{port}"),
        "localhost".to_string(),
        format!("localhost:{port}"),
    ] {
        let page = server.get(&host, "/");
        assert!(page.starts_with("HTTP/1.1 200 OK"), "{host}: {page}");
    }
}

#[test]
fn an_encoded_path_was_not_found() {
    let project = results();
    let server = Serving::start(&project);
    let figure = server.get("127.0.0.1", "/figures/arms%20by%20size.svg");
    assert!(figure.starts_with("HTTP/1.1 200 OK"), "{figure}");
    assert!(figure.contains("content-type: image/svg+xml"), "{figure}");
    assert!(figure.ends_with("<svg/>"), "{figure}");
}

#[test]
fn encoded_traversal_stays_refused_once_paths_are_decoded() {
    let project = results();
    let server = Serving::start(&project);
    for path in [
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/figures/%2E%2E/%2e%2e/secret.txt",
        "/..%2fsecret.txt",
        "/figures%2f..%2f..%2fsecret.txt",
        "/index.html%00",
        "/%00/../secret.txt",
    ] {
        let refused = server.get("127.0.0.1", path);
        assert!(refused.starts_with("HTTP/1.1 400"), "{path}: {refused}");
        assert!(!refused.ends_with("secret"), "{path}: {refused}");
    }
}

#[test]
fn a_busy_port_gave_no_cause() {
    let project = results();
    let taken = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let port = taken.local_addr().unwrap().port();
    let ran = project.run(&[
        "view",
        "results/run",
        "--serve",
        "--port",
        &port.to_string(),
    ]);
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    for expected in [
        format!("127.0.0.1:{port}"),
        "in use".to_string(),
        "--port N".to_string(),
    ] {
        assert!(ran.stderr.contains(&expected), "{expected}: {}", ran.stderr);
    }
}
