//! The one HTTP response of claimflow's two local servers, the results browser's (`view --serve`,
//! through hyper) and the dated index's (over a bare stream): a status, a content type, the
//! length and `Cache-Control: no-store`, since a page the next run rewrites must not be served
//! from a browser's cache. Both build it here, so they cannot drift apart in their headers.

use std::io::Write;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use hyper::{Response, StatusCode};

/// A response of `status` with `body` as `content_type`.
pub(crate) fn response(
    status: StatusCode,
    content_type: &'static str,
    body: impl Into<Bytes>,
) -> Response<Full<Bytes>> {
    let body = body.into();
    let mut response = Response::new(Full::new(body.clone()));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    // Set here rather than left to the writer: a `HEAD` answer carries the length `GET` would.
    headers.insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A short plain-text answer: why a request was refused.
pub(crate) fn plain(status: StatusCode, text: impl Into<Bytes>) -> Response<Full<Bytes>> {
    response(status, "text/plain; charset=utf-8", text)
}

/// Writes [`response`] as HTTP/1.1 to `stream` and ends the exchange (`Connection: close`); the
/// body is left out for a `HEAD` request (`with_body` false).
pub(crate) fn respond(
    stream: &mut impl Write,
    status: u16,
    content_type: &'static str,
    body: &[u8],
    with_body: bool,
) -> std::io::Result<()> {
    let status = StatusCode::from_u16(status)
        .map_err(|error| std::io::Error::new(std::io::ErrorKind::InvalidInput, error))?;
    let answer = response(status, content_type, Bytes::copy_from_slice(body));
    let mut head = format!(
        "HTTP/1.1 {} {}\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    );
    for (name, value) in answer.headers() {
        // Every value above is ASCII, from a static string or a number.
        head.push_str(&format!(
            "{name}: {}\r\n",
            value.to_str().unwrap_or_default()
        ));
    }
    head.push_str("Connection: close\r\n\r\n");
    stream.write_all(head.as_bytes())?;
    if with_body {
        stream.write_all(body)?;
    }
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bare_writer_sends_the_headers_hyper_is_given() {
        let mut written = Vec::new();
        respond(&mut written, 421, "text/plain", b"refused\n", true).unwrap();
        let text = String::from_utf8(written).unwrap();
        assert_eq!(
            text,
            "HTTP/1.1 421 Misdirected Request\r\ncontent-type: text/plain\r\n\
             content-length: 8\r\ncache-control: no-store\r\nConnection: close\r\n\r\nrefused\n"
        );
        let mut head_only = Vec::new();
        respond(&mut head_only, 200, "text/html", b"<p>page</p>", false).unwrap();
        let text = String::from_utf8(head_only).unwrap();
        assert!(text.contains("content-length: 11\r\n"), "{text}");
        assert!(text.ends_with("\r\n\r\n"), "{text}");
    }
}
