//! `starve`: a small service of the usual shapes whose two workers are both blocked at once for
//! a while — the runtime starvation a tracer must report as one episode caused by the two
//! blocking polls, with the timer tasks that fell due meanwhile as its victims (not `stalled`),
//! and the tasks that wait for work by design as no finding at all.
//!
//! Runs on the multi-thread runtime with 2 workers (main.rs builds it). Tasks, each from its own
//! spawn site (marker `starve_ROLE`):
//!   shutdown   waits on a Notify nobody notifies until the end (a CancellationToken waits so)
//!   jobs       an mpsc job worker whose sender stays alive (one job at start)
//!   news       a broadcast subscriber, its sender alive
//!   config     a watch subscriber, its sender alive
//!   ticker     a 100 ms `interval`, measuring how late each tick came
//!   sleeper    a loop of 300 ms sleeps, measuring how late each one woke
//!   block_a, block_b   spawned together ~1 s after `ready` (their lines then): each waits (up to 1 s) until the
//!              other has started, so both workers are held at once, then blocks its worker in
//!              `std::thread::sleep` for --block (default 2.5 s), then returns
//!
//! Prints `starve task=ROLE id=ID` per role (the blockers' once spawned), `starve pid=PID ready`; after the blocking,
//! `starve blocked role=R start_ns=S end_ns=E` (CLOCK_MONOTONIC, as Rust's `Instant` reads it on
//! Linux) for both and `starve overlap_ms=N` (both held at once); at the end
//! `starve late_max_ms ticker=T sleeper=S` (their worst lateness as they measured it) and exits 0.

use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::{broadcast, mpsc, watch, Notify};
use tokio::task::JoinHandle;

const TICK: Duration = Duration::from_millis(100);
const NAP: Duration = Duration::from_millis(300);
/// After `ready`, before the blockers are spawned.
const BEFORE_BLOCK: Duration = Duration::from_secs(1);

pub fn id_of<T: std::fmt::Debug>(h: &JoinHandle<T>) -> String {
    let s = format!("{h:?}");
    s.split("Id(").nth(1).and_then(|r| r.split(')').next()).unwrap_or("?").to_string()
}

/// CLOCK_MONOTONIC in ns from an `Instant` (its Debug form on Linux is
/// `Instant { tv_sec: S, tv_nsec: N }`); 0 when the form is not that.
fn mono_ns(t: Instant) -> u64 {
    let s = format!("{t:?}");
    let field = |k: &str| -> Option<u64> {
        s.split(k).nth(1)?.trim_start_matches([':', ' ']).split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
    };
    match (field("tv_sec"), field("tv_nsec")) {
        (Some(sec), Some(ns)) => sec * 1_000_000_000 + ns,
        _ => 0,
    }
}

fn update_max(m: &AtomicU64, v: u64) {
    m.fetch_max(v, Ordering::Relaxed);
}

pub async fn run(duration: Duration, block: Duration) -> Result<(), String> {
    let mut sigterm = signal(SignalKind::terminate()).map_err(|e| format!("SIGTERM handler: {e}"))?;
    let mut sigint = signal(SignalKind::interrupt()).map_err(|e| format!("SIGINT handler: {e}"))?;
    let end = tokio::time::sleep(duration);
    tokio::pin!(end);

    let shutdown = Arc::new(Notify::new());
    let (job_tx, job_rx) = mpsc::channel::<u64>(16);
    let (news_tx, news_rx) = broadcast::channel::<u64>(16);
    let (config_tx, config_rx) = watch::channel(0u64);
    let ticker_late = Arc::new(AtomicU64::new(0));
    let sleeper_late = Arc::new(AtomicU64::new(0));

    let mut ids: Vec<(&str, String)> = Vec::new();
    let h = tokio::spawn(starve_shutdown(shutdown.clone())); // SPAWN-SITE: starve_shutdown
    ids.push(("shutdown", id_of(&h)));
    let h = tokio::spawn(starve_jobs(job_rx)); // SPAWN-SITE: starve_jobs
    ids.push(("jobs", id_of(&h)));
    let h = tokio::spawn(starve_news(news_rx)); // SPAWN-SITE: starve_news
    ids.push(("news", id_of(&h)));
    let h = tokio::spawn(starve_config(config_rx)); // SPAWN-SITE: starve_config
    ids.push(("config", id_of(&h)));
    let h = tokio::spawn(starve_ticker(ticker_late.clone())); // SPAWN-SITE: starve_ticker
    ids.push(("ticker", id_of(&h)));
    let h = tokio::spawn(starve_sleeper(sleeper_late.clone())); // SPAWN-SITE: starve_sleeper
    ids.push(("sleeper", id_of(&h)));
    job_tx.send(1).await.map_err(|_| "jobs: receiver gone")?;

    for (role, id) in &ids {
        println!("starve task={role} id={id}");
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    println!("starve pid={} ready", std::process::id());
    let _ = std::io::stdout().flush();

    tokio::select! {
        _ = tokio::time::sleep(BEFORE_BLOCK) => {}
        _ = &mut end => return Err("--duration over before the blocking began".into()),
    }
    // from block_on (the injection queue, not a worker's LIFO slot): each idle worker takes one
    let started = Arc::new(AtomicUsize::new(0));
    let times: Arc<[AtomicU64; 4]> = Arc::new(Default::default());
    let a = tokio::spawn(starve_block(0, started.clone(), times.clone(), block)); // SPAWN-SITE: starve_block_a
    let b = tokio::spawn(starve_block(1, started.clone(), times.clone(), block)); // SPAWN-SITE: starve_block_b
    println!("starve task=block_a id={}", id_of(&a));
    println!("starve task=block_b id={}", id_of(&b));
    let _ = std::io::stdout().flush();
    let _ = a.await;
    let _ = b.await;
    let t: Vec<u64> = times.iter().map(|x| x.load(Ordering::Acquire)).collect();
    println!("starve blocked role=block_a start_ns={} end_ns={}", t[0], t[1]);
    println!("starve blocked role=block_b start_ns={} end_ns={}", t[2], t[3]);
    let (s, e) = (t[0].max(t[2]), t[1].min(t[3]));
    println!("starve overlap_ms={}", if e > s { (e - s) / 1_000_000 } else { 0 });
    let _ = std::io::stdout().flush();

    tokio::select! {
        _ = &mut end => {}
        _ = sigterm.recv() => {}
        _ = sigint.recv() => {}
    }
    println!(
        "starve late_max_ms ticker={} sleeper={}",
        ticker_late.load(Ordering::Relaxed) / 1_000_000,
        sleeper_late.load(Ordering::Relaxed) / 1_000_000
    );
    let _ = std::io::stdout().flush();
    drop((job_tx, news_tx, config_tx));
    shutdown.notify_waiters();
    Ok(())
}

async fn starve_shutdown(n: Arc<Notify>) {
    n.notified().await;
}

async fn starve_jobs(mut rx: mpsc::Receiver<u64>) {
    while let Some(j) = rx.recv().await {
        std::hint::black_box(j);
    }
}

async fn starve_news(mut rx: broadcast::Receiver<u64>) {
    while let Ok(v) = rx.recv().await {
        std::hint::black_box(v);
    }
}

async fn starve_config(mut rx: watch::Receiver<u64>) {
    while rx.changed().await.is_ok() {
        std::hint::black_box(*rx.borrow());
    }
}

async fn starve_ticker(late: Arc<AtomicU64>) {
    let mut iv = tokio::time::interval(TICK);
    loop {
        let due = iv.tick().await;
        update_max(&late, Instant::now().saturating_duration_since(due.into_std()).as_nanos() as u64);
    }
}

async fn starve_sleeper(late: Arc<AtomicU64>) {
    loop {
        let due = Instant::now() + NAP;
        tokio::time::sleep(NAP).await;
        update_max(&late, Instant::now().saturating_duration_since(due).as_nanos() as u64);
    }
}

/// Blocks its worker for `block`, once the other blocker has started too (up to 1 s).
async fn starve_block(i: usize, started: Arc<AtomicUsize>, times: Arc<[AtomicU64; 4]>, block: Duration) {
    started.fetch_add(1, Ordering::AcqRel);
    let wait = Instant::now();
    while started.load(Ordering::Acquire) < 2 && wait.elapsed() < Duration::from_secs(1) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let t0 = Instant::now();
    std::thread::sleep(block); // blocks the worker thread: the pathology
    times[2 * i].store(mono_ns(t0), Ordering::Release);
    times[2 * i + 1].store(mono_ns(Instant::now()), Ordering::Release);
}
