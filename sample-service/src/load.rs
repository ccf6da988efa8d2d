//! The built-in load generator (`--load RPS`): `concurrency` client tasks, each sending its
//! share of the rate as plain HTTP/1.1 GETs (one request per connection) to the service's own
//! loopback address, cycling through the configured paths. Client tasks are healthy: short
//! polls, every wait on a timer or a socket that wakes them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::MissedTickBehavior;

const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
const MAX_RESPONSE: usize = 64 * 1024;

#[derive(Default)]
pub struct LoadStats {
    pub sent: AtomicU64,
    pub ok: AtomicU64,
    pub failed: AtomicU64,
}

impl LoadStats {
    pub fn summary(&self) -> String {
        format!(
            "load: sent={} ok={} failed={}",
            self.sent.load(Ordering::Relaxed),
            self.ok.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed)
        )
    }
}

pub struct LoadConfig {
    pub rps: u32,
    pub concurrency: u32,
    pub paths: Vec<String>,
}

/// The load generator only ever talks to the service itself over loopback, whatever address
/// the service listens on.
pub fn loopback_target(listening: SocketAddr) -> SocketAddr {
    let ip = match listening.ip() {
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
    };
    SocketAddr::new(ip, listening.port())
}

/// Spawns the client tasks; they run until the runtime shuts down.
pub fn start(listening: SocketAddr, config: LoadConfig, stats: Arc<LoadStats>) {
    let target = loopback_target(listening);
    let concurrency = config.concurrency.clamp(1, config.rps);
    // Each client sends rps/concurrency requests per second.
    let period = Duration::from_secs_f64(f64::from(concurrency) / f64::from(config.rps));
    let paths: Arc<[String]> = config.paths.into();
    for client in 0..concurrency {
        let offset = period.mul_f64(f64::from(client) / f64::from(concurrency));
        let _client = tokio::spawn(load_client(target, period, offset, client, paths.clone(), stats.clone())); // SPAWN-SITE: load_client
    }
}

async fn load_client(
    target: SocketAddr,
    period: Duration,
    offset: Duration,
    client: u32,
    paths: Arc<[String]>,
    stats: Arc<LoadStats>,
) {
    // Spread the clients over one period instead of firing together.
    tokio::time::sleep(offset).await;
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut next = client as usize;
    loop {
        ticks.tick().await;
        let path = &paths[next % paths.len()];
        next += 1;
        stats.sent.fetch_add(1, Ordering::Relaxed);
        // boxed: the request's future (a connect, a timer) would otherwise sit inline in this
        // long-lived task, over 1 KiB on Tokio 1.24 (a large_future)
        match Box::pin(tokio::time::timeout(REQUEST_TIMEOUT, get(target, path))).await {
            Ok(Ok(status)) if (200..300).contains(&status) => stats.ok.fetch_add(1, Ordering::Relaxed),
            _ => stats.failed.fetch_add(1, Ordering::Relaxed),
        };
    }
}

/// One GET on a fresh connection; returns the response status.
async fn get(target: SocketAddr, path: &str) -> std::io::Result<u16> {
    let mut stream = TcpStream::connect(target).await?;
    stream.set_nodelay(true)?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {target}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = Vec::with_capacity(256);
    (&mut stream).take(MAX_RESPONSE as u64).read_to_end(&mut response).await?;
    parse_status(&response)
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "bad HTTP status line"))
}

fn parse_status(response: &[u8]) -> Option<u16> {
    let line = response.split(|&b| b == b'\r' || b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut parts = line.split_whitespace();
    if !parts.next()?.starts_with("HTTP/1.") {
        return None;
    }
    parts.next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_line() {
        assert_eq!(parse_status(b"HTTP/1.1 202 Accepted\r\n\r\n"), Some(202));
        assert_eq!(parse_status(b"garbage"), None);
    }

    #[test]
    fn target_is_loopback() {
        let t = loopback_target("0.0.0.0:8080".parse().unwrap());
        assert_eq!(t, "127.0.0.1:8080".parse::<SocketAddr>().unwrap());
        assert!(loopback_target("[::]:1".parse().unwrap()).ip().is_loopback());
    }
}
