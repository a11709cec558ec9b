//! `claimflow view --serve`: the results directory over HTTP on 127.0.0.1, for browsers that
//! restrict pages opened from the file system. Loopback only, GET and HEAD of files under the
//! directory only, many connections at once (hyper on a tokio runtime of its own), so an idle
//! browser tab cannot hold up the next request; it runs until the process is stopped (Ctrl-C).
//!
//! Listening on loopback is not enough on its own: through DNS rebinding a page of another site
//! reaches 127.0.0.1 under that site's name, so a request must name this server in its `Host`.

use std::convert::Infallible;
use std::io::ErrorKind;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{ALLOW, HOST, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode, Version};
use hyper_util::rt::{TokioIo, TokioTimer};
use percent_encoding::percent_decode_str;

use super::ViewError;
use super::response::{plain, response};

/// The longest request head read (hyper answers a longer one with 431).
const MAX_HEAD: usize = 16 * 1024;
/// How long a connection may take to send a request head, or stay idle between requests.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long accepting waits after a failure (out of file descriptors) before it tries again.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);
/// The names a request may give this server by, besides which it is not reachable.
const LOOPBACK_NAMES: [&str; 2] = ["127.0.0.1", "localhost"];

/// A bound listener for a results directory.
pub struct Server {
    runtime: tokio::runtime::Runtime,
    listener: tokio::net::TcpListener,
    site: Arc<Site>,
}

/// What every connection answers from.
struct Site {
    /// The results directory, canonical, so a resolved file is checked against it directly.
    root: PathBuf,
    port: u16,
}

impl Server {
    /// Listens on 127.0.0.1:`port` (0: any free port) for the results directory `root`.
    pub fn bind(root: &Path, port: u16) -> Result<Self, ViewError> {
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let listen = |cause: std::io::Error| ViewError::Listen { address, cause };
        // Bound here, before the caller says where it serves, so a busy port is its error.
        let listener = std::net::TcpListener::bind(address).map_err(|cause| {
            if cause.kind() == ErrorKind::AddrInUse {
                ViewError::PortInUse { address }
            } else {
                listen(cause)
            }
        })?;
        listener.set_nonblocking(true).map_err(listen)?;
        let port = listener.local_addr().map_err(listen)?.port();
        let root = root.canonicalize().map_err(|source| ViewError::Io {
            context: "read the results directory",
            path: root.to_path_buf(),
            source,
        })?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|cause| ViewError::Runtime {
                root: root.clone(),
                cause,
            })?;
        let listener = {
            let _inside = runtime.enter();
            tokio::net::TcpListener::from_std(listener).map_err(listen)?
        };
        Ok(Server {
            runtime,
            listener,
            site: Arc::new(Site { root, port }),
        })
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.site.port
    }

    /// Answers requests until the process stops; a broken connection ends only itself.
    pub fn run(&self) {
        self.runtime.block_on(async {
            loop {
                match self.listener.accept().await {
                    Ok((stream, _)) => {
                        tokio::spawn(Arc::clone(&self.site).serve(stream));
                    }
                    Err(_) => tokio::time::sleep(ACCEPT_RETRY).await,
                }
            }
        });
    }
}

impl Site {
    /// Answers one connection's requests, as many as it keeps alive.
    async fn serve(self: Arc<Self>, stream: tokio::net::TcpStream) {
        let service = service_fn(move |request| {
            let site = Arc::clone(&self);
            async move { Ok::<_, Infallible>(site.answer(&request).await) }
        });
        // A client that goes away or stalls past the timeout ends its connection, nothing else.
        let _ = http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(HEAD_TIMEOUT)
            .max_buf_size(MAX_HEAD)
            .serve_connection(TokioIo::new(stream), service)
            .await;
    }

    async fn answer(&self, request: &Request<Incoming>) -> Response<Full<Bytes>> {
        if let Some(refusal) = self.misdirected(request) {
            return refusal;
        }
        if request.method() != Method::GET && request.method() != Method::HEAD {
            let mut refusal = plain(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n");
            refusal
                .headers_mut()
                .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
            return refusal;
        }
        let path = match resolve(&self.root, request.uri().path()) {
            Ok(path) => path,
            Err(Refusal::NotPlain) => {
                return plain(
                    StatusCode::BAD_REQUEST,
                    "not a plain path under the results directory (no `.`, `..`, empty, \
                     encoded `/` or NUL segments)\n",
                );
            }
            Err(Refusal::NotFound) => return plain(StatusCode::NOT_FOUND, "not found\n"),
        };
        let file = path.clone();
        match tokio::task::spawn_blocking(move || std::fs::read(file)).await {
            Ok(Ok(bytes)) => response(StatusCode::OK, content_type(&path), bytes),
            // Gone since it was resolved, or a directory named without its trailing `/`.
            _ => plain(StatusCode::NOT_FOUND, "not found\n"),
        }
    }

    /// The refusal of a request that does not name this server: another name in `Host` (or in
    /// an absolute request target) is a page of another site that reached the loopback address.
    fn misdirected(&self, request: &Request<Incoming>) -> Option<Response<Full<Bytes>>> {
        let mut hosts = request.headers().get_all(HOST).iter();
        let host = match (hosts.next(), hosts.next()) {
            (Some(host), None) => Some(host.to_str().unwrap_or_default()),
            (Some(_), Some(_)) => {
                return Some(plain(
                    StatusCode::BAD_REQUEST,
                    "more than one Host header\n",
                ));
            }
            // HTTP/1.0 made `Host` optional; no browser leaves it out.
            (None, _) if request.version() == Version::HTTP_10 => None,
            (None, _) => {
                return Some(plain(
                    StatusCode::BAD_REQUEST,
                    "no Host header: HTTP/1.1 requires one\n",
                ));
            }
        };
        let authority = request
            .uri()
            .authority()
            .map(|authority| authority.as_str());
        host.into_iter()
            .chain(authority)
            .any(|name| !names_loopback(name))
            .then(|| {
                plain(
                    StatusCode::MISDIRECTED_REQUEST,
                    format!(
                        "this server answers to 127.0.0.1 and localhost only (a guard against DNS \
                         rebinding); open http://127.0.0.1:{}/\n",
                        self.port
                    ),
                )
            })
    }
}

/// Whether `authority` (`host` or `host:port`) names the loopback server. Any port will do: only
/// the name tells another site's page from ours, and a forwarded port (`ssh -L 8080:…`) arrives
/// with the port it was forwarded from.
fn names_loopback(authority: &str) -> bool {
    let (name, port) = match authority.rsplit_once(':') {
        Some((name, port)) => (name, Some(port)),
        None => (authority, None),
    };
    port.is_none_or(|port| port.parse::<u16>().is_ok())
        && LOOPBACK_NAMES
            .iter()
            .any(|loopback| name.eq_ignore_ascii_case(loopback))
}

/// Why a request path names no file to serve.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Not a plain path under the results directory: a `.` or `..` segment, an empty one, an
    /// encoded `/` or NUL, or text that is not UTF-8 once decoded.
    NotPlain,
    /// No file there, or one reached through a link out of the directory.
    NotFound,
}

/// The file under `root` (canonical) a request path names, percent-decoded (`/` is the page, as
/// is any path ending in `/`).
pub fn resolve(root: &Path, path: &str) -> Result<PathBuf, Refusal> {
    let path = path.strip_prefix('/').ok_or(Refusal::NotPlain)?;
    let mut relative = PathBuf::new();
    let mut segments = path.split('/').peekable();
    while let Some(segment) = segments.next() {
        if segment.is_empty() && segments.peek().is_none() {
            relative.push(super::FILE);
            break;
        }
        // Split before decoding, so an encoded `/` cannot make a segment of its own, and
        // checked after, so `%2e%2e` is the `..` it decodes to.
        let decoded = percent_decode_str(segment)
            .decode_utf8()
            .map_err(|_| Refusal::NotPlain)?;
        if decoded.is_empty() || decoded == "." || decoded == ".." || decoded.contains(['/', '\0'])
        {
            return Err(Refusal::NotPlain);
        }
        relative.push(&*decoded);
    }
    if relative
        .components()
        .any(|component| !matches!(component, Component::Normal(_)))
    {
        return Err(Refusal::NotPlain);
    }
    let full = root.join(relative);
    let canonical = full.canonicalize().map_err(|_| Refusal::NotFound)?;
    if canonical.starts_with(root) {
        Ok(full)
    } else {
        Err(Refusal::NotFound)
    }
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|extension| extension.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("json") => "application/json",
        Some("png") => "image/png",
        Some("css") => "text/css",
        Some("md" | "csv" | "jsonl" | "txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpStream;

    use super::*;

    #[test]
    fn requests_resolve_inside_the_results_directory_only() {
        let directory = tempfile::tempdir().unwrap();
        let root = directory.path().canonicalize().unwrap();
        std::fs::write(root.join("index.html"), "page").unwrap();
        std::fs::create_dir(root.join("figures")).unwrap();
        std::fs::write(root.join("figures/arms.svg"), "<svg/>").unwrap();
        std::fs::write(root.join("figures/a b.svg"), "<svg/>").unwrap();
        assert_eq!(resolve(&root, "/"), Ok(root.join("index.html")));
        assert_eq!(
            resolve(&root, "/figures/"),
            Err(Refusal::NotFound),
            "a directory without a page"
        );
        assert_eq!(
            resolve(&root, "/figures/arms.svg"),
            Ok(root.join("figures/arms.svg"))
        );
        assert_eq!(
            resolve(&root, "/figures/a%20b.svg"),
            Ok(root.join("figures/a b.svg"))
        );
        assert_eq!(
            resolve(&root, "/%66igures/arms.svg"),
            Ok(root.join("figures/arms.svg"))
        );
        for refused in [
            "/../etc/passwd",
            "/figures/../../x",
            "//etc/passwd",
            "/./index.html",
            "/%2e%2e/x",
            "/figures/%2E%2E/%2e%2e/x",
            "/..%2fx",
            "/figures%2farms.svg",
            "/index.html%00",
            "/%ff",
            "index.html",
        ] {
            assert_eq!(resolve(&root, refused), Err(Refusal::NotPlain), "{refused}");
        }
        assert_eq!(resolve(&root, "/missing.html"), Err(Refusal::NotFound));
    }

    #[test]
    fn a_link_out_of_the_results_directory_is_not_followed() {
        let directory = tempfile::tempdir().unwrap();
        let outside = directory.path().canonicalize().unwrap();
        std::fs::write(outside.join("secret.txt"), "secret").unwrap();
        let root = outside.join("results");
        std::fs::create_dir(&root).unwrap();
        std::os::unix::fs::symlink(outside.join("secret.txt"), root.join("secret.txt")).unwrap();
        assert_eq!(resolve(&root, "/secret.txt"), Err(Refusal::NotFound));
    }

    #[test]
    fn only_loopback_names_reach_the_server() {
        for name in ["127.0.0.1", "127.0.0.1:8000", "localhost", "LocalHost:1"] {
            assert!(names_loopback(name), "{name}");
        }
        for name in [
            "evil.example",
            "evil.example:8000",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "localhost:http",
            "[::1]:8000",
            "",
        ] {
            assert!(!names_loopback(name), "{name}");
        }
    }

    #[test]
    fn the_server_answers_the_page_and_refuses_other_methods() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("index.html"), "<p>page</p>").unwrap();
        let server = Server::bind(root.path(), 0).unwrap();
        let port = server.port();
        std::thread::spawn(move || server.run());
        let ask = |method: &str, path: &str| {
            let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(60)))
                .unwrap();
            write!(
                stream,
                "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
            )
            .unwrap();
            let mut answer = String::new();
            stream.read_to_string(&mut answer).unwrap();
            answer
        };
        let page = ask("GET", "/");
        assert!(page.starts_with("HTTP/1.1 200 OK"), "{page}");
        assert!(page.contains("cache-control: no-store"), "{page}");
        assert!(page.ends_with("<p>page</p>"), "{page}");
        let head = ask("HEAD", "/");
        assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
        assert!(head.contains("content-length: 11"), "{head}");
        assert!(head.ends_with("\r\n\r\n"), "{head}");
        let post = ask("POST", "/");
        assert!(post.starts_with("HTTP/1.1 405"), "{post}");
        assert!(post.contains("allow: GET, HEAD"), "{post}");
        assert!(ask("GET", "/../x").starts_with("HTTP/1.1 400"));
        assert!(ask("GET", "/missing").starts_with("HTTP/1.1 404"));
    }
}
