//! A small HTTP/1.1 server on `tokio::net`, for Tokio lines without hyper 1 (Debian bookworm).
//! One request per connection (the reply says `Connection: close`); the request head is read
//! with a size limit and a timeout; a request body is not read (only GET/HEAD are served).

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::routes;

const MAX_HEAD: usize = 16 * 1024;
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

pub const NAME: &str = "hand-written HTTP/1.1";

pub async fn serve_connection(mut stream: TcpStream) {
    let reply = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut stream)).await {
        Ok(Ok(Some(head))) => match parse_request_line(&head) {
            Some((method, path)) => {
                let reply = routes::handle(method, path).await;
                let body = if method == "HEAD" { "" } else { reply.body.as_str() };
                render(reply.status, reply.body.len(), body)
            }
            None => render(400, 12, "bad request\n"),
        },
        // Connection closed before a full head, an I/O error, or too slow: just close.
        _ => return,
    };
    if stream.write_all(reply.as_bytes()).await.is_ok() {
        let _ = stream.shutdown().await;
    }
}

/// Reads up to the blank line ending the request head. `None` when the peer closed first or
/// the head is larger than `MAX_HEAD`.
async fn read_head(stream: &mut TcpStream) -> std::io::Result<Option<String>> {
    let mut buf = Vec::with_capacity(1024);
    // on the heap: an array held across the await would make every connection's future
    // 2 KiB larger (a large_future)
    let mut chunk = vec![0u8; 2048];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = find_head_end(&buf) {
            buf.truncate(end);
            return Ok(Some(String::from_utf8_lossy(&buf).into_owned()));
        }
        if buf.len() > MAX_HEAD {
            return Ok(None);
        }
    }
}

fn find_head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").or_else(|| buf.windows(2).position(|w| w == b"\n\n"))
}

/// `GET /path HTTP/1.1` → ("GET", "/path").
fn parse_request_line(head: &str) -> Option<(&str, &str)> {
    let mut parts = head.lines().next()?.split_whitespace();
    let method = parts.next()?;
    let target = parts.next()?;
    let version = parts.next()?;
    if !version.starts_with("HTTP/1.") || !target.starts_with('/') || parts.next().is_some() {
        return None;
    }
    Some((method, target))
}

fn render(status: u16, content_length: usize, body: &str) -> String {
    format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {content_length}\r\nConnection: close\r\n\r\n{body}",
        reason(status)
    )
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        429 => "Too Many Requests",
        _ => "Unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_line() {
        assert_eq!(parse_request_line("GET /work HTTP/1.1\r\nHost: x"), Some(("GET", "/work")));
        assert_eq!(parse_request_line("GET /work"), None);
        assert_eq!(parse_request_line("GET work HTTP/1.1"), None);
        assert_eq!(find_head_end(b"GET / HTTP/1.1\r\nA: b\r\n\r\nrest"), Some(20));
    }
}
