//! `claimflow view --serve`: the results directory over HTTP on 127.0.0.1, for browsers that
//! restrict pages opened from the file system. Loopback only, GET and HEAD of files under the
//! directory only, one request at a time with a bounded request and a read timeout; it runs
//! until the process is stopped (Ctrl-C).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use super::ViewError;

/// The longest request head read.
const MAX_HEAD: u64 = 16 * 1024;

/// A bound listener for the results directory `root`.
pub struct Server {
    listener: TcpListener,
    root: PathBuf,
}

impl Server {
    /// Listens on 127.0.0.1:`port` (0: any free port).
    pub fn bind(root: &Path, port: u16) -> Result<Self, ViewError> {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .map_err(|source| ViewError::Listen { port, source })?;
        Ok(Server {
            listener,
            root: root.to_path_buf(),
        })
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.listener
            .local_addr()
            .map_or(0, |address| address.port())
    }

    /// Answers requests until the process stops; a broken connection only ends that request.
    pub fn run(&self) {
        for stream in self.listener.incoming().flatten() {
            let _ = self.answer(stream);
        }
    }

    fn answer(&self, mut stream: TcpStream) -> std::io::Result<()> {
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        stream.set_write_timeout(Some(Duration::from_secs(30)))?;
        let mut head = String::new();
        BufReader::new((&stream).take(MAX_HEAD)).read_line(&mut head)?;
        let mut parts = head.split_whitespace();
        let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        if method != "GET" && method != "HEAD" {
            return respond(&mut stream, 405, "text/plain", b"only GET and HEAD\n", true);
        }
        let Some(path) = resolve(&self.root, target) else {
            return respond(&mut stream, 404, "text/plain", b"not found\n", true);
        };
        match std::fs::read(&path) {
            Ok(bytes) => respond(
                &mut stream,
                200,
                content_type(&path),
                &bytes,
                method == "GET",
            ),
            Err(_) => respond(&mut stream, 404, "text/plain", b"not found\n", true),
        }
    }
}

/// The file under `root` a request target names (`/` is the page), or None when it would leave
/// `root` or is not a plain relative path.
pub fn resolve(root: &Path, target: &str) -> Option<PathBuf> {
    let path = target.split(['?', '#']).next()?;
    let path = path.strip_prefix('/')?;
    let path = if path.is_empty() || path.ends_with('/') {
        format!("{path}{}", super::FILE)
    } else {
        path.to_string()
    };
    let relative = Path::new(&path);
    if relative
        .components()
        .any(|component| !matches!(component, Component::Normal(_)))
    {
        return None;
    }
    let full = root.join(relative);
    let inside = full
        .canonicalize()
        .ok()?
        .starts_with(root.canonicalize().ok()?);
    inside.then_some(full)
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

/// Writes one HTTP/1.1 response and closes the exchange (`Connection: close`); the body is left
/// out for a `HEAD` request (`with_body` false). Shared by the local servers claimflow runs.
pub(crate) fn respond(
    stream: &mut TcpStream,
    status: u16,
    content_type: &str,
    body: &[u8],
    with_body: bool,
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Bad Gateway",
    };
    write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    if with_body {
        stream.write_all(body)?;
    }
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_resolve_inside_the_results_directory_only() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("index.html"), "page").unwrap();
        std::fs::create_dir(root.path().join("figures")).unwrap();
        std::fs::write(root.path().join("figures/arms.svg"), "<svg/>").unwrap();
        assert_eq!(
            resolve(root.path(), "/").unwrap(),
            root.path().join("index.html")
        );
        assert_eq!(
            resolve(root.path(), "/figures/arms.svg?x=1").unwrap(),
            root.path().join("figures/arms.svg")
        );
        assert!(resolve(root.path(), "/../etc/passwd").is_none());
        assert!(resolve(root.path(), "/figures/../../x").is_none());
        assert!(resolve(root.path(), "//etc/passwd").is_none());
        assert!(resolve(root.path(), "/missing.html").is_none());
    }

    #[test]
    fn the_server_answers_the_page_and_refuses_other_methods() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("index.html"), "<p>page</p>").unwrap();
        let server = Server::bind(root.path(), 0).unwrap();
        let port = server.port();
        std::thread::spawn(move || server.run());
        let ask = |request: &str| {
            let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
            stream.write_all(request.as_bytes()).unwrap();
            let mut answer = String::new();
            stream.read_to_string(&mut answer).unwrap();
            answer
        };
        let page = ask("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(page.starts_with("HTTP/1.1 200 OK"), "{page}");
        assert!(page.ends_with("<p>page</p>"), "{page}");
        assert!(ask("POST / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
        assert!(ask("GET /../x HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
    }
}
