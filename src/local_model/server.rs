//! A running `llama-server` for one claimflow run: started on a loopback port the kernel picks,
//! ready once `/health` answers 200, and stopped when the [`LocalServer`] is dropped, when the run
//! ends, or when Ctrl-C or SIGTERM stops claimflow (its process group is recorded with
//! [`crate::process_groups`]).
//!
//! Context: SmolLM2 was trained on 8,192 tokens, which is what each slot holds by default: a
//! 12,000-character diff, a test and a system prompt come to about 5,000 tokens. `-c` is passed as
//! the total over the slots, without a unified KV cache, so every slot holds exactly its share. A
//! request longer than a slot is not truncated: the server answers HTTP 400 with an error of type
//! `exceed_context_size_error`.
//!
//! The readiness probe speaks plain HTTP/1.1 over a `TcpStream`, so starting a server works the same
//! from a thread or from inside an async runtime's blocking task.

use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use super::commands::{self, ServerArguments};
use super::provision::Provisioned;
use crate::process::log_tail;
use crate::process_groups::Group;

/// How a server is started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerOptions {
    /// Slots (`--parallel`): requests decoded at once, with continuous batching, and prompts kept
    /// cached, one per slot.
    pub parallel: usize,
    /// Tokens one slot holds, prompt and answer together.
    pub context_per_slot: usize,
    /// CPU threads for decoding.
    pub threads: usize,
    /// The longest answer the server writes, whatever a request asks (a guard against a model that
    /// never stops).
    pub max_answer_tokens: usize,
    /// How long the server may take to load the model and answer `/health`.
    pub startup_timeout: Duration,
    /// Where the server's output goes; `None`: a temporary file removed with the server.
    pub log: Option<PathBuf>,
}

/// SmolLM2-135M's trained context.
pub const TRAINED_CONTEXT: usize = 8192;

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            // Four slots, one request at a time (an embedded entry's `concurrency` is 1: on 2
            // cores requests decoded together each wait longer, benches/README.md). The slots
            // are for the prompt cache: the server gives a request the slot whose cached prompt
            // shares the longest prefix, so each arm's system prompt stays cached in a slot of
            // its own instead of being evicted by the next arm's call.
            parallel: 4,
            context_per_slot: TRAINED_CONTEXT,
            threads: std::thread::available_parallelism().map_or(1, |threads| threads.get()),
            max_answer_tokens: 1024,
            startup_timeout: Duration::from_secs(120),
            log: None,
        }
    }
}

/// Why a server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The options make no server (no slot, a slot smaller than an answer).
    #[error("start llama-server: {0}")]
    Options(String),
    /// The log file could not be made, or the process not started.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
    /// The server exited before it was ready.
    #[error(
        "start llama-server: it exited ({status}) before it was ready; the last lines of {log}:\n{tail}"
    )]
    Exited {
        status: String,
        log: PathBuf,
        tail: String,
    },
    /// The server was not ready in time.
    #[error("start llama-server: not ready after {seconds}s; the last lines of {log}:\n{tail}")]
    NotReady {
        seconds: u64,
        log: PathBuf,
        tail: String,
    },
}

/// A running `llama-server`; dropping it stops the server.
#[derive(Debug)]
pub struct LocalServer {
    child: Child,
    group: Group,
    port: u16,
    model_id: String,
    parallel: usize,
    log: PathBuf,
    /// Holds a temporary log's directory until the server is gone.
    _temporary: Option<tempfile::TempDir>,
}

impl LocalServer {
    /// Starts a server for `provisioned` and waits until it is ready (at most
    /// `options.startup_timeout`). Blocking: call it from `spawn_blocking` in async code.
    pub fn start(
        provisioned: &Provisioned,
        options: &ServerOptions,
    ) -> Result<LocalServer, ServerError> {
        if options.parallel == 0 {
            return Err(ServerError::Options("`parallel` must be at least 1".into()));
        }
        if options.context_per_slot <= options.max_answer_tokens {
            return Err(ServerError::Options(format!(
                "a slot of {} tokens leaves no room for a prompt beside an answer of up to {} tokens",
                options.context_per_slot, options.max_answer_tokens
            )));
        }
        let (log, temporary) = match &options.log {
            Some(log) => (log.clone(), None),
            None => {
                let directory = tempfile::Builder::new()
                    .prefix("claimflow-llama-server-")
                    .tempdir()
                    .map_err(|source| ServerError::Io {
                        context: "create a directory for the server's log".into(),
                        source,
                    })?;
                (directory.path().join("llama-server.log"), Some(directory))
            }
        };
        let file = File::create(&log).map_err(|source| ServerError::Io {
            context: format!("create {}", log.display()),
            source,
        })?;
        let error_file = file.try_clone().map_err(|source| ServerError::Io {
            context: format!("open {}", log.display()),
            source,
        })?;
        let mut command = commands::server(
            &provisioned.server,
            &ServerArguments {
                model: &provisioned.model,
                alias: provisioned.model_id(),
                parallel: options.parallel,
                context_per_slot: options.context_per_slot,
                threads: options.threads.max(1),
                max_answer_tokens: options.max_answer_tokens,
            },
        );
        command.stdin(Stdio::null()).stdout(file).stderr(error_file);
        let (child, group) =
            crate::process_groups::spawn(&mut command).map_err(|source| ServerError::Io {
                context: format!("start {}", provisioned.server.display()),
                source,
            })?;
        let mut server = LocalServer {
            child,
            group,
            port: 0,
            model_id: provisioned.model_id().to_string(),
            parallel: options.parallel,
            log,
            _temporary: temporary,
        };
        server.wait_until_ready(options.startup_timeout)?;
        Ok(server)
    }

    /// Polls until the server has printed its port and `/health` answers 200.
    fn wait_until_ready(&mut self, timeout: Duration) -> Result<(), ServerError> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().map_err(|source| ServerError::Io {
                context: "wait for llama-server".into(),
                source,
            })? {
                return Err(ServerError::Exited {
                    status: status.to_string(),
                    tail: log_tail(&self.log, 30),
                    log: self.log.clone(),
                });
            }
            if self.port == 0
                && let Some(port) = listening_port(&self.log)
            {
                self.port = port;
            }
            if self.port != 0 && health(self.port) == Some(200) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                self.group.kill();
                let _ = self.child.wait();
                return Err(ServerError::NotReady {
                    seconds: timeout.as_secs(),
                    tail: log_tail(&self.log, 30),
                    log: self.log.clone(),
                });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The OpenAI-compatible API's root: `http://127.0.0.1:<port>/v1`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The loopback port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The model id the server answers to.
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    /// How many requests the server decodes at once: more in flight only queue.
    pub fn parallel(&self) -> usize {
        self.parallel
    }

    /// The server's log file.
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// Whether the server process still runs (it may die on its own, killed for memory).
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Stops the server (dropping it does the same).
    pub fn stop(self) {}
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        self.group.kill();
        let _ = self.child.wait();
    }
}

/// The port in the server's `listening on http://127.0.0.1:<port>` line, once it is logged.
fn listening_port(log: &Path) -> Option<u16> {
    let text = std::fs::read_to_string(log).ok()?;
    text.lines().find_map(|line| {
        let (_, rest) = line.split_once("listening on http://127.0.0.1:")?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok().filter(|port| *port != 0)
    })
}

/// The status code `GET /health` answers with, `None` when nothing answers (yet).
fn health(port: u16) -> Option<u16> {
    health_within(port, Duration::from_millis(500), Duration::from_secs(2))
}

/// [`health`] with its connect and read timeouts given.
fn health_within(port: u16, connect: Duration, answer: Duration) -> Option<u16> {
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&address, connect).ok()?;
    stream.set_read_timeout(Some(answer)).ok()?;
    stream
        .write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut head = [0u8; 64];
    let mut read = 0;
    while read < 12 {
        match stream.read(&mut head[read..]) {
            Ok(0) | Err(_) => break,
            Ok(count) => read += count,
        }
    }
    // "HTTP/1.1 200 OK"
    let line = std::str::from_utf8(&head[..read]).ok()?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn the_port_is_read_from_the_servers_own_line() {
        let directory = tempfile::tempdir().unwrap();
        let log = directory.path().join("log");
        std::fs::write(&log, "main: loading model\n").unwrap();
        assert_eq!(listening_port(&log), None);
        std::fs::write(
            &log,
            "main: loading model\nmain: server is listening on http://127.0.0.1:43121 - starting the main loop\n",
        )
        .unwrap();
        assert_eq!(listening_port(&log), Some(43121));
    }

    #[test]
    fn health_reads_the_status_code_and_nothing_listening_is_none() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let answering = std::thread::spawn(move || {
            for status in ["503 Service Unavailable", "200 OK"] {
                let (mut stream, _) = listener.accept().unwrap();
                let mut request = [0u8; 256];
                let _ = stream.read(&mut request).unwrap();
                assert!(request.starts_with(b"GET /health HTTP/1.1\r\n"));
                let body = r#"{"status":"ok"}"#;
                // One write: `write!` writes piece by piece, and the client closes as soon as it
                // has the status line, so a later piece could meet a closed socket (EPIPE).
                let response = format!(
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                stream.write_all(response.as_bytes()).unwrap();
            }
        });
        // Timeouts a loaded machine cannot hit: the answering thread may wait seconds for a core.
        let patient = |port| health_within(port, Duration::from_secs(60), Duration::from_secs(60));
        assert_eq!(patient(port), Some(503));
        assert_eq!(patient(port), Some(200));
        answering.join().unwrap();
        // The listener is gone with its thread: nothing answers.
        assert_eq!(health(port), None);
    }

    /// A stand-in `llama-server`: a shell script, provisioned beside a model file it never reads.
    fn stand_in(directory: &Path, script: &str) -> Provisioned {
        let program = directory.join("llama-server");
        std::fs::write(&program, format!("#!/bin/sh\n{script}\n")).unwrap();
        let mut permissions = std::fs::metadata(&program).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&program, permissions).unwrap();
        Provisioned {
            server: program,
            model: directory.join("model.gguf"),
            llama_cpp: "b1".into(),
            llama_cpp_source: crate::cache::Digest::of(b"source"),
            model_digest: crate::cache::Digest::of(b"model"),
        }
    }

    #[test]
    fn a_server_that_exits_at_once_reports_its_log() {
        let directory = tempfile::tempdir().unwrap();
        let provisioned = stand_in(
            directory.path(),
            "echo 'error: failed to load model' >&2\nexit 1",
        );
        let error = LocalServer::start(&provisioned, &ServerOptions::default()).unwrap_err();
        let message = error.to_string();
        assert!(matches!(error, ServerError::Exited { .. }), "{message}");
        assert!(message.contains("failed to load model"), "{message}");
    }

    #[test]
    fn a_server_that_never_gets_ready_is_killed_at_the_deadline() {
        let directory = tempfile::tempdir().unwrap();
        let provisioned = stand_in(directory.path(), "echo loading\nexec sleep 300");
        let options = ServerOptions {
            startup_timeout: Duration::from_millis(300),
            ..ServerOptions::default()
        };
        let error = LocalServer::start(&provisioned, &options).unwrap_err();
        let message = error.to_string();
        assert!(matches!(error, ServerError::NotReady { .. }), "{message}");
        assert!(message.contains("loading"), "{message}");
    }
}
