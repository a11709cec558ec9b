//! The dated index's server: one per process, started on first use on 127.0.0.1 (a free port) in
//! a thread of its own, answering `GET /<cutoff>/simple/<project>/` with the project's PEP 503
//! page bounded by the cutoff. One upstream page serves every cutoff: each project's JSON is
//! fetched once per process (a failure is not kept, so the next request tries again).
//!
//! A problem with a project's upstream page (unreachable, or without upload times) is answered
//! with an error status, which pip reports only as "no matching distribution"; so it is also kept
//! by project, for the builder to tell the real cause ([`DatedIndex::problem`]).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use reqwest::Url;

use super::cutoff::ReleaseCutoff;
use super::page::{PageError, ProjectFiles};
use crate::python::requirements::requirement_name;
use crate::view::response::respond;

/// The index used when `PIP_INDEX_URL` is not set.
const PYPI: &str = "https://pypi.org/simple/";
/// PEP 691's JSON, the only form of a page that carries upload times (PEP 700).
const JSON_PAGE: &str = "application/vnd.pypi.simple.v1+json";
/// The longest request head read.
const MAX_HEAD: u64 = 16 * 1024;
/// How long one upstream page may take.
const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(120);

/// Why the dated index could not offer a project's files.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexProblem {
    /// The upstream index did not answer, or answered an error: a later try may do better.
    #[error("fetch {url}: {reason}")]
    Unreachable { url: String, reason: String },
    /// The upstream's page cannot be bounded by date (no upload times, or no JSON at all).
    #[error(
        "{0}; set `releases: newest` for this repository, or point `PIP_INDEX_URL` at an index \
         that serves PEP 691 JSON with upload times (pypi.org does)"
    )]
    Undated(PageError),
}

/// A running dated index over one upstream index.
pub struct DatedIndex {
    port: u16,
    state: Arc<State>,
}

struct State {
    /// The upstream's simple index, ending in `/`.
    upstream: Url,
    /// Made on first use, on a thread of the index's own (a blocking client must not be made
    /// or used where an async runtime runs).
    client: OnceLock<reqwest::blocking::Client>,
    /// Each project's files as the upstream listed them, by normalized name.
    pages: Mutex<BTreeMap<String, Arc<ProjectFiles>>>,
    /// The last problem with each project's upstream page, by normalized name.
    problems: Mutex<BTreeMap<String, IndexProblem>>,
}

impl DatedIndex {
    /// Starts an index over `upstream` (a simple index's address) on a free loopback port; it
    /// answers until the process ends.
    pub fn start(upstream: &str) -> std::io::Result<Self> {
        let invalid =
            |reason: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, reason);
        let mut upstream = Url::parse(upstream)
            .map_err(|error| invalid(format!("the package index `{upstream}`: {error}")))?;
        if !upstream.path().ends_with('/') {
            let path = format!("{}/", upstream.path());
            upstream.set_path(&path);
        }
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        let port = listener.local_addr()?.port();
        let state = Arc::new(State {
            upstream,
            client: OnceLock::new(),
            pages: Mutex::new(BTreeMap::new()),
            problems: Mutex::new(BTreeMap::new()),
        });
        let serving = Arc::clone(&state);
        std::thread::Builder::new()
            .name("dated-index".into())
            .spawn(move || {
                for stream in listener.incoming().flatten() {
                    let state = Arc::clone(&serving);
                    // pip asks for a few pages at once; each may wait on the upstream.
                    let _ = std::thread::Builder::new()
                        .name("dated-index-request".into())
                        .spawn(move || {
                            let _ = state.answer(stream);
                        });
                }
            })?;
        Ok(DatedIndex { port, state })
    }

    /// The process's index over `PIP_INDEX_URL` as claimflow's environment sets it (else
    /// pypi.org), started on first use.
    pub fn shared() -> std::io::Result<Arc<DatedIndex>> {
        static SHARED: Mutex<Option<Arc<DatedIndex>>> = Mutex::new(None);
        let mut shared = SHARED
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(index) = shared.as_ref() {
            return Ok(Arc::clone(index));
        }
        let upstream = std::env::var("PIP_INDEX_URL")
            .ok()
            .filter(|value| !value.trim().is_empty())
            .unwrap_or_else(|| PYPI.to_string());
        let index = Arc::new(DatedIndex::start(upstream.trim())?);
        *shared = Some(Arc::clone(&index));
        Ok(index)
    }

    /// The upstream index it reads.
    pub fn upstream(&self) -> &str {
        self.state.upstream.as_str()
    }

    /// The simple index of the files uploaded before `cutoff`, for pip's `--index-url`.
    pub fn index_url(&self, cutoff: ReleaseCutoff) -> String {
        format!(
            "http://127.0.0.1:{}/{}/simple/",
            self.port,
            cutoff.path_segment()
        )
    }

    /// `project`'s files as the upstream lists them; `None` when it has no such project.
    pub fn files(&self, project: &str) -> Result<Option<Arc<ProjectFiles>>, IndexProblem> {
        let state = &self.state;
        // Fetched on a thread of its own: the caller may be inside an async runtime.
        std::thread::scope(|scope| {
            scope
                .spawn(|| state.files(project))
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }

    /// `project`'s files when this process has already fetched them (a page pip asked for).
    pub fn fetched(&self, project: &str) -> Option<Arc<ProjectFiles>> {
        let name = requirement_name(project)?;
        self.state
            .pages
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(&name)
            .cloned()
    }

    /// The last problem with `project`'s upstream page, if the last try had one.
    pub fn problem(&self, project: &str) -> Option<IndexProblem> {
        let name = requirement_name(project)?;
        self.state
            .problems
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(&name)
            .cloned()
    }
}

impl State {
    /// `project`'s files, from the upstream on first use; the outcome is noted in `problems`.
    fn files(&self, project: &str) -> Result<Option<Arc<ProjectFiles>>, IndexProblem> {
        let Some(name) = requirement_name(project) else {
            return Ok(None);
        };
        let cached = self
            .pages
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(&name)
            .cloned();
        if let Some(files) = cached {
            return Ok(Some(files));
        }
        let fetched = self.fetch(&name);
        let mut problems = self
            .problems
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match &fetched {
            Err(problem) => {
                problems.insert(name, problem.clone());
            }
            Ok(found) => {
                problems.remove(&name);
                if let Some(files) = found {
                    self.pages
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner())
                        .insert(name, Arc::clone(files));
                }
            }
        }
        fetched
    }

    /// One request for `name`'s JSON page.
    fn fetch(&self, name: &str) -> Result<Option<Arc<ProjectFiles>>, IndexProblem> {
        let url =
            self.upstream
                .join(&format!("{name}/"))
                .map_err(|error| IndexProblem::Unreachable {
                    url: format!("{}{name}/", self.upstream),
                    reason: error.to_string(),
                })?;
        let unreachable = |reason: String| IndexProblem::Unreachable {
            url: url.to_string(),
            reason,
        };
        let client = match self.client.get() {
            Some(client) => client,
            None => {
                let mut builder = reqwest::blocking::Client::builder().timeout(UPSTREAM_TIMEOUT);
                for certificate in trusted_as_pip_trusts() {
                    builder = builder.add_root_certificate(certificate);
                }
                let client = builder
                    .build()
                    .map_err(|error| unreachable(error.to_string()))?;
                self.client.get_or_init(|| client)
            }
        };
        let response = client
            .get(url.clone())
            .header(reqwest::header::ACCEPT, JSON_PAGE)
            .send()
            .map_err(|error| unreachable(error_chain(&error)))?;
        if response.status() == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !response.status().is_success() {
            return Err(unreachable(format!("HTTP {}", response.status())));
        }
        let page_url = response.url().clone();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("")
            .to_string();
        if !content_type.starts_with(JSON_PAGE) {
            return Err(IndexProblem::Undated(PageError::Unreadable {
                project: name.to_string(),
                reason: format!(
                    "it answers `{content_type}`, not PEP 691 JSON, and only JSON pages carry \
                     upload times"
                ),
            }));
        }
        let body = response
            .bytes()
            .map_err(|error| unreachable(error_chain(&error)))?;
        ProjectFiles::from_json(name, &page_url, &body)
            .map(|files| Some(Arc::new(files)))
            .map_err(IndexProblem::Undated)
    }

    /// Answers one connection: a project's page, bounded by the cutoff its address names.
    fn answer(&self, mut stream: TcpStream) -> std::io::Result<()> {
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        stream.set_write_timeout(Some(Duration::from_secs(30)))?;
        let mut reader = BufReader::new((&stream).take(MAX_HEAD));
        let mut request_line = String::new();
        reader.read_line(&mut request_line)?;
        // The rest of the head is read (and ignored), so closing the connection does not reset it.
        let mut line = String::new();
        while reader.read_line(&mut line)? > 0 && !line.trim().is_empty() {
            line.clear();
        }
        let mut parts = request_line.split_whitespace();
        let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        if method != "GET" && method != "HEAD" {
            return respond(&mut stream, 405, "text/plain", b"only GET and HEAD\n", true);
        }
        let with_body = method == "GET";
        let Some((cutoff, project)) = route(target) else {
            return respond(&mut stream, 404, "text/plain", b"not found\n", with_body);
        };
        match self.files(project) {
            Ok(Some(files)) => respond(
                &mut stream,
                200,
                "text/html; charset=utf-8",
                files.render(cutoff).as_bytes(),
                with_body,
            ),
            Ok(None) => respond(&mut stream, 404, "text/plain", b"not found\n", with_body),
            Err(problem) => respond(
                &mut stream,
                502,
                "text/plain",
                format!("{problem}\n").as_bytes(),
                with_body,
            ),
        }
    }
}

/// The certificates of the bundle pip is told to trust (`PIP_CERT`, else `SSL_CERT_FILE`, as
/// claimflow's environment sets them), beside the built-in roots: an index or a proxy with a
/// certificate of its own is trusted here as pip trusts it. A bundle that cannot be read adds
/// nothing; the upstream then fails as unreachable, with the TLS error.
fn trusted_as_pip_trusts() -> Vec<reqwest::Certificate> {
    let Some(bundle) = ["PIP_CERT", "SSL_CERT_FILE"]
        .iter()
        .filter_map(std::env::var_os)
        .find(|value| !value.is_empty())
    else {
        return Vec::new();
    };
    std::fs::read(bundle)
        .ok()
        .and_then(|pem| reqwest::Certificate::from_pem_bundle(&pem).ok())
        .unwrap_or_default()
}

/// The cutoff and project a request target names: `/<cutoff>/simple/<project>/`.
fn route(target: &str) -> Option<(ReleaseCutoff, &str)> {
    let path = target.split(['?', '#']).next()?;
    let mut parts = path.strip_prefix('/')?.split('/');
    let cutoff = ReleaseCutoff::from_path_segment(parts.next()?)?;
    if parts.next()? != "simple" {
        return None;
    }
    let project = parts.next().filter(|project| !project.is_empty())?;
    match (parts.next(), parts.next()) {
        (None | Some(""), None) => Some((cutoff, project)),
        _ => None,
    }
}

/// An error with its causes, as one line (`error sending request: … : connection refused`).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn requests_name_a_cutoff_and_a_project() {
        let cutoff = ReleaseCutoff::from_seconds(1_588_334_400);
        assert_eq!(
            route("/20200501T120000Z/simple/six/"),
            Some((cutoff, "six"))
        );
        assert_eq!(
            route("/20200501T120000Z/simple/Six?x=1"),
            Some((cutoff, "Six"))
        );
        for bad in [
            "/simple/six/",
            "/20200501T120000Z/simple/",
            "/20200501T120000Z/other/six/",
            "/20200501T120000Z/simple/six/extra/",
            "/yesterday/simple/six/",
        ] {
            assert_eq!(route(bad), None, "{bad}");
        }
    }

    #[test]
    fn an_unreachable_upstream_is_kept_as_the_projects_problem() {
        // A port nothing listens on: bound, then closed.
        let closed = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = closed.local_addr().unwrap().port();
        drop(closed);
        let index = DatedIndex::start(&format!("http://127.0.0.1:{port}/simple")).unwrap();
        assert_eq!(index.upstream(), format!("http://127.0.0.1:{port}/simple/"));
        let problem = index.files("Six").unwrap_err();
        assert!(
            matches!(&problem, IndexProblem::Unreachable { url, .. } if url.ends_with("/simple/six/")),
            "{problem}"
        );
        assert_eq!(index.problem("six"), Some(problem));
        // Through the server, pip sees an error status rather than an empty page.
        let mut stream = TcpStream::connect(("127.0.0.1", index.port)).unwrap();
        stream
            .write_all(b"GET /20200501T120000Z/simple/six/ HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 502"), "{answer}");
    }
}
