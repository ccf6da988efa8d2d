//! `serve`: listen, start the background pathologies and the load generator, accept until a
//! signal or `--duration`, then drain in-flight connections briefly.
//!
//! The accept loop and the shutdown logic run in the `block_on` future (not a task), so the
//! tasks a tracer sees are connections, their subtasks, load clients, pathology drivers and the
//! pathologies themselves.

use std::future::Future;
use std::io::Write;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpStream};
use tokio::signal::unix::{signal, SignalKind};

use crate::cli::ServeOpts;
use crate::load::{self, LoadConfig, LoadStats};
use crate::pathology;

#[cfg(feature = "hyper")]
use crate::http_hyper as http;
#[cfg(not(feature = "hyper"))]
use crate::http_basic as http;

const DRAIN_TIMEOUT: Duration = Duration::from_secs(1);

static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

struct InFlight;

impl InFlight {
    fn enter() -> InFlight {
        IN_FLIGHT.fetch_add(1, Ordering::AcqRel);
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::AcqRel);
    }
}

pub async fn serve(opts: ServeOpts) -> Result<(), String> {
    // Signals first: a SIGTERM arriving right after the ready line must be a graceful exit.
    let mut sigterm = signal(SignalKind::terminate()).map_err(|e| format!("SIGTERM handler: {e}"))?;
    let mut sigint = signal(SignalKind::interrupt()).map_err(|e| format!("SIGINT handler: {e}"))?;
    let listener = TcpListener::bind(opts.addr).await.map_err(|e| format!("bind {}: {e}", opts.addr))?;
    let local = listener.local_addr().map_err(|e| format!("local_addr: {e}"))?;

    for &p in &opts.pathologies {
        let _driver = tokio::spawn(pathology::drive(p)); // SPAWN-SITE: pathology_driver
    }
    let stats = Arc::new(LoadStats::default());
    if let Some(rps) = opts.load_rps {
        let config = LoadConfig {
            rps,
            concurrency: opts.concurrency.unwrap_or(8.min(rps)),
            paths: opts.load_paths.clone(),
        };
        load::start(local, config, stats.clone());
    }

    announce(local, &opts)?;
    if let Some((how, after)) = opts.crash {
        let _crash = tokio::spawn(crash(how, after)); // SPAWN-SITE: crash
    }

    let deadline: Pin<Box<dyn Future<Output = ()> + Send>> = match opts.duration {
        Some(d) => Box::pin(tokio::time::sleep(d)),
        None => Box::pin(std::future::pending()),
    };
    let shutdown = async move {
        tokio::select! {
            _ = sigterm.recv() => "SIGTERM",
            _ = sigint.recv() => "SIGINT",
            _ = deadline => "duration elapsed",
        }
    };
    tokio::pin!(shutdown);

    let reason = loop {
        tokio::select! {
            reason = &mut shutdown => break reason,
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    let _connection = tokio::spawn(connection(stream)); // SPAWN-SITE: connection
                }
                Err(e) => {
                    // E.g. EMFILE under a flood: back off instead of spinning.
                    eprintln!("sample-service: accept: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
        }
    };
    drop(listener);
    eprintln!("sample-service: {reason}, shutting down");

    let drain_start = Instant::now();
    while IN_FLIGHT.load(Ordering::Acquire) > 0 && drain_start.elapsed() < DRAIN_TIMEOUT {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    if opts.load_rps.is_some() {
        eprintln!("sample-service: {}", stats.summary());
    }
    Ok(())
}

async fn connection(stream: TcpStream) {
    let _in_flight = InFlight::enter();
    let _ = stream.set_nodelay(true);
    // boxed: the HTTP state machine (its reads, timers and the route's future) is over 1 KiB
    // with some Tokio lines; inline it would make every connection task a large_future
    Box::pin(http::serve_connection(stream)).await;
}

fn announce(local: SocketAddr, opts: &ServeOpts) -> Result<(), String> {
    let names: Vec<&str> = opts.pathologies.iter().map(|p| p.name()).collect();
    eprintln!(
        "sample-service: {}, http: {}, pathologies: [{}], load: {}",
        crate::tokio_line(),
        http::NAME,
        names.join(","),
        opts.load_rps.map_or("off".to_string(), |r| format!("{r} rps")),
    );
    let mut out = std::io::stdout().lock();
    writeln!(out, "listening on {local}")
        .and_then(|_| out.flush())
        .map_err(|e| format!("stdout: {e}"))
}

/// `--crash`: the process dies on purpose, from a task, the way production services do.
async fn crash(how: crate::cli::Crash, after: Duration) {
    tokio::time::sleep(after).await;
    match how {
        crate::cli::Crash::Segv => {
            eprintln!("sample-service: crashing on purpose (SIGSEGV)");
            // SAFETY: none — the point is the fault. Address 8 is never mapped (the first page
            // is reserved by the kernel: vm.mmap_min_addr), so the store faults.
            unsafe { std::ptr::write_volatile(8 as *mut u8, 1) };
        }
        crate::cli::Crash::PanicAbort => {
            // panic = "abort": the hook prints the message, then the process aborts (SIGABRT)
            let default = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                default(info);
                std::process::abort();
            }));
            panic!("sample-service: panicking on purpose (--crash panic-abort)");
        }
    }
}
