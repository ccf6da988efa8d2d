//! `waits`: tasks that each wait on one known thing for the whole run, for testing what a tracer
//! says a pending task waits for (a timer, I/O readiness on an fd, a Tokio sync primitive, a
//! JoinHandle), that only the truly stuck ones are "stalled", and task names, future sizes and
//! self-wakes.
//!
//! Runs on the multi-thread runtime with 2 workers (main.rs builds it). `blocked` is spawned
//! first and, once it reports from inside its one never-ending poll, owns worker A for the whole
//! run; every other task is spawned after that, from `block_on` (the injection queue), so they all
//! run on the other worker (nothing they need can sit in worker A's queue or LIFO slot).
//!
//! Every task reports its role from its first poll, right before the await it then stays in;
//! its id comes from its JoinHandle (`Debug`: "JoinHandle { id: Id(5) }", on every Tokio line,
//! where `tokio::task::id()` needs --cfg tokio_unstable on 1.24); `block_on` prints one
//! `waits task=ROLE id=ID …` line per role in a fixed
//! order, lets them settle, prints `waits pid=PID ready`, and ends after --duration (or at
//! SIGTERM/SIGINT) with exit 0. Each spawn call has its own SPAWN-SITE marker `waits_ROLE`.

use std::future::Future;
use std::io::Write;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::task::JoinHandle;

/// The sleeps that never fire during a run.
const LONG: Duration = Duration::from_secs(600);
/// The array `large` holds across its await.
pub const LARGE_BYTES: usize = 20_000;
/// `selfwake`: per round, a sleep of SELFWAKE_SLEEP then SELF_WAKES self-wakes (each one poll
/// that calls `wake_by_ref` and returns Pending): per round SELF_WAKES + 1 polls and wakes, of
/// which SELF_WAKES are self-wakes.
pub const SELFWAKE_SLEEP: Duration = Duration::from_millis(100);
pub const SELF_WAKES: u32 = 2;
/// The task name of `named`.
pub const NAME: &str = "waits-named";
/// After the last task reported, before `ready`: time for each to reach its await.
const SETTLE: Duration = Duration::from_millis(100);

/// The roles, in the order their lines are printed.
const ROLES: &[&str] = &[
    "timer",
    "accept",
    "idle_conn",
    "idle_client",
    "notify",
    "leaked_rx",
    "oneshot_rx",
    "blocked",
    "joiner",
    "named",
    "large",
    "selfwake",
];

/// A task's report from its first poll: its role.
#[derive(Clone)]
struct Reporter(mpsc::UnboundedSender<&'static str>);

impl Reporter {
    fn started(&self, role: &'static str) {
        let _ = self.0.send(role);
    }
}

/// A task's Tokio id, from its JoinHandle's Debug form ("JoinHandle { id: Id(5) }").
fn id_of<T: std::fmt::Debug>(h: &JoinHandle<T>) -> String {
    let s = format!("{h:?}");
    s.split("Id(").nth(1).and_then(|r| r.split(')').next()).unwrap_or("?").to_string()
}

/// Set when the run ends (also on an early return): `blocked` then returns from its poll, so the
/// runtime shuts down at once.
struct Stop(Arc<AtomicBool>);

impl Drop for Stop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

pub async fn run(duration: Duration) -> Result<(), String> {
    // Signals first: a SIGTERM right after the ready line must be a graceful exit.
    let mut sigterm = signal(SignalKind::terminate()).map_err(|e| format!("SIGTERM handler: {e}"))?;
    let mut sigint = signal(SignalKind::interrupt()).map_err(|e| format!("SIGINT handler: {e}"))?;
    let end = tokio::time::sleep(duration);
    tokio::pin!(end);

    let (tx, mut rx) = mpsc::unbounded_channel();
    let report = Reporter(tx);
    let stop = Stop(Arc::new(AtomicBool::new(false)));
    // extra facts per role, printed after `id=`
    let mut facts: Vec<(&'static str, String)> = Vec::new();
    let mut expected = 0usize;
    let mut reported = 0usize;
    let mut ids: Vec<(&'static str, String)> = Vec::new();

    // 6. `blocked` first, alone: once it reported it is inside its poll, holding its worker.
    let blocked = tokio::spawn(waits_blocked(report.clone(), stop.0.clone())); // SPAWN-SITE: waits_blocked
    expected += 1;
    let blocked_id = id_of(&blocked);
    ids.push(("blocked", blocked_id.clone()));
    while reported < expected {
        rx.recv().await.ok_or("task reports: channel closed")?;
        reported += 1;
    }
    facts.push(("joiner", format!(" joins={blocked_id}")));
    let joiner = tokio::spawn(waits_joiner(report.clone(), blocked)); // SPAWN-SITE: waits_joiner
    ids.push(("joiner", id_of(&joiner)));
    expected += 1;

    // 1. a timer that does not fire during the run
    let timer = tokio::spawn(waits_timer(report.clone())); // SPAWN-SITE: waits_timer
    ids.push(("timer", id_of(&timer)));
    expected += 1;

    // 2. an accept loop nobody connects to (binding a SocketAddr: a string would be resolved by
    // a spawn_blocking task)
    let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
    let listener = TcpListener::bind(loopback).await.map_err(|e| format!("bind: {e}"))?;
    let addr = listener.local_addr().map_err(|e| format!("local_addr: {e}"))?;
    facts.push(("accept", format!(" fd={} addr={addr}", listener.as_raw_fd())));
    let accept = tokio::spawn(waits_accept(report.clone(), listener)); // SPAWN-SITE: waits_accept
    ids.push(("accept", id_of(&accept)));
    expected += 1;

    // 3. a connection whose client never writes (nor closes): connected and accepted here
    let server = TcpListener::bind(loopback).await.map_err(|e| format!("bind: {e}"))?;
    let server_addr = server.local_addr().map_err(|e| format!("local_addr: {e}"))?;
    let client = TcpStream::connect(server_addr).await.map_err(|e| format!("connect {server_addr}: {e}"))?;
    let (conn, _) = server.accept().await.map_err(|e| format!("accept: {e}"))?;
    drop(server);
    for (role, s) in [("idle_conn", &conn), ("idle_client", &client)] {
        let local = s.local_addr().map_err(|e| format!("local_addr: {e}"))?;
        let peer = s.peer_addr().map_err(|e| format!("peer_addr: {e}"))?;
        facts.push((role, format!(" fd={} addr={local} peer={peer}", s.as_raw_fd())));
    }
    let conn = tokio::spawn(waits_idle_conn(report.clone(), conn)); // SPAWN-SITE: waits_idle_conn
    let client = tokio::spawn(waits_idle_client(report.clone(), client)); // SPAWN-SITE: waits_idle_client
    ids.push(("idle_conn", id_of(&conn)));
    ids.push(("idle_client", id_of(&client)));
    expected += 2;

    // 4. a Notify nobody notifies (kept alive here until the end)
    let notify = Arc::new(Notify::new());
    let notified = tokio::spawn(waits_notify(report.clone(), notify.clone())); // SPAWN-SITE: waits_notify
    ids.push(("notify", id_of(&notified)));
    facts.push(("notify", format!(" object={:p}", Arc::as_ptr(&notify))));
    expected += 1;

    // 5. channels whose senders are leaked: never signalled, never closed
    let (leaked_tx, leaked_rx) = mpsc::channel::<u64>(1);
    std::mem::forget(leaked_tx);
    let leaked = tokio::spawn(waits_leaked_rx(report.clone(), leaked_rx)); // SPAWN-SITE: waits_leaked_rx
    let (oneshot_tx, oneshot_rx) = oneshot::channel::<u64>();
    std::mem::forget(oneshot_tx);
    let oneshot = tokio::spawn(waits_oneshot_rx(report.clone(), oneshot_rx)); // SPAWN-SITE: waits_oneshot_rx
    ids.push(("leaked_rx", id_of(&leaked)));
    ids.push(("oneshot_rx", id_of(&oneshot)));
    expected += 2;

    // 7. a named task (tokio::task::Builder: tokio_unstable + Tokio's tracing feature)
    match spawn_named(report.clone())? {
        Some(named) => {
            facts.push(("named", format!(" name={NAME}")));
            ids.push(("named", id_of(&named)));
            expected += 1;
        }
        None => {
            debug_assert!(!NAMED_SUPPORTED);
            eprintln!(
                "sample-service: waits: named: unsupported in this build ({}, tokio_unstable: {}): \
                 tokio::task::Builder needs --cfg tokio_unstable and Tokio's `tracing` feature, \
                 which would wrap every task's future in tracing::instrument::Instrumented",
                crate::tokio_line(),
                cfg!(tokio_unstable)
            );
        }
    }

    // 8. a large future: its size as spawned (Tokio 1.43+ boxes futures over 16 KiB in release)
    let large = waits_large(report.clone());
    facts.push(("large", format!(" size={}", std::mem::size_of_val(&large))));
    let large = tokio::spawn(large); // SPAWN-SITE: waits_large
    ids.push(("large", id_of(&large)));
    expected += 1;

    // 9. a slow self-waking loop
    let selfwake = tokio::spawn(waits_selfwake(report.clone())); // SPAWN-SITE: waits_selfwake
    ids.push(("selfwake", id_of(&selfwake)));
    expected += 1;
    facts.push(("selfwake", format!(" sleep_ms={} self_wakes={SELF_WAKES}", SELFWAKE_SLEEP.as_millis())));

    while reported < expected {
        tokio::select! {
            r = rx.recv() => {
                r.ok_or("task reports: channel closed")?;
                reported += 1;
            }
            _ = &mut end => return Err(format!("--duration over before all {expected} tasks started")),
        }
    }
    for role in ROLES {
        if *role == "named" && !NAMED_SUPPORTED {
            println!("waits named unsupported");
        }
        if let Some((_, id)) = ids.iter().find(|(r, _)| r == role) {
            let extra: String =
                facts.iter().filter(|(r, _)| r == role).map(|(_, f)| f.as_str()).collect();
            println!("waits task={role} id={id}{extra}");
        }
    }
    let _ = std::io::stdout().flush();
    tokio::time::sleep(SETTLE).await;
    println!("waits pid={} ready", std::process::id());
    let _ = std::io::stdout().flush();

    tokio::select! {
        _ = &mut end => {}
        _ = sigterm.recv() => {}
        _ = sigint.recv() => {}
    }
    drop(notify);
    drop(stop);
    Ok(())
}

/// `task::Builder::spawn` returns `io::Result<JoinHandle<T>>` since Tokio 1.23 (all three lines
/// here: 1.24.2, 1.43.1, 1.53.2) and `JoinHandle<T>` before; either works.
#[cfg_attr(not(all(tokio_unstable, any(feature = "console", feature = "named"))), allow(dead_code))]
trait SpawnResult<T> {
    fn into_handle(self) -> Result<JoinHandle<T>, String>;
}

impl<T> SpawnResult<T> for JoinHandle<T> {
    fn into_handle(self) -> Result<JoinHandle<T>, String> {
        Ok(self)
    }
}

impl<T> SpawnResult<T> for std::io::Result<JoinHandle<T>> {
    fn into_handle(self) -> Result<JoinHandle<T>, String> {
        self.map_err(|e| format!("task::Builder::spawn: {e}"))
    }
}

/// `tokio::task::Builder` exists only with `--cfg tokio_unstable` *and* Tokio's cargo feature
/// `tracing` (tokio's `cfg_trace!`, on 1.24, 1.43 and 1.53 alike), which wraps every task's
/// future in `tracing::instrument::Instrumented`: the lines 1.24, 1.43 and 1.53 have neither
/// (`named` is unsupported there); the line tokio-1.53-named (feature `named`) and the
/// tokio-1.53-console line (feature `console`) have both.
const NAMED_SUPPORTED: bool = cfg!(all(tokio_unstable, any(feature = "console", feature = "named")));

#[cfg(all(tokio_unstable, any(feature = "console", feature = "named")))]
fn spawn_named(report: Reporter) -> Result<Option<JoinHandle<()>>, String> {
    let named = tokio::task::Builder::new().name(NAME).spawn(waits_named(report)); // SPAWN-SITE: waits_named
    named.into_handle().map(Some)
}

#[cfg(not(all(tokio_unstable, any(feature = "console", feature = "named"))))]
fn spawn_named(_report: Reporter) -> Result<Option<JoinHandle<()>>, String> {
    Ok(None)
}

/// 1: a 10-minute sleep (a timer that never fires during the run).
async fn waits_timer(report: Reporter) {
    report.started("timer");
    tokio::time::sleep(LONG).await;
}

/// 2: Pending on accept (read readiness of the listening socket); nobody connects.
async fn waits_accept(report: Reporter, listener: TcpListener) {
    report.started("accept");
    loop {
        match listener.accept().await {
            Ok((stream, _)) => drop(stream),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// 3: Pending on a read of an accepted connection whose client never writes.
async fn waits_idle_conn(report: Reporter, mut stream: TcpStream) {
    report.started("idle_conn");
    let mut buf = [0u8; 256];
    // ends only when the client goes away (at runtime shutdown)
    while let Ok(n) = stream.read(&mut buf).await {
        if n == 0 {
            break;
        }
    }
}

/// 3: holds the client end open, waiting on a timer (not on the socket).
async fn waits_idle_client(report: Reporter, stream: TcpStream) {
    report.started("idle_client");
    tokio::time::sleep(LONG).await;
    drop(stream);
}

/// 4: a Notify nobody notifies.
async fn waits_notify(report: Reporter, notify: Arc<Notify>) {
    report.started("notify");
    notify.notified().await;
}

/// 5: an mpsc receiver whose sender was leaked (std::mem::forget): never a message, never closed.
async fn waits_leaked_rx(report: Reporter, mut rx: mpsc::Receiver<u64>) {
    report.started("leaked_rx");
    let _ = rx.recv().await;
}

/// 5: a oneshot receiver whose sender was leaked.
async fn waits_oneshot_rx(report: Reporter, rx: oneshot::Receiver<u64>) {
    report.started("oneshot_rx");
    let _ = rx.await;
}

/// 6: one poll that blocks its worker thread (std::thread::sleep, no await) until the run ends.
async fn waits_blocked(report: Reporter, stop: Arc<AtomicBool>) {
    report.started("blocked");
    block_worker(&stop);
}

fn block_worker(stop: &AtomicBool) {
    while !stop.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// 6: awaits the JoinHandle of `blocked`.
async fn waits_joiner(report: Reporter, blocked: JoinHandle<()>) {
    report.started("joiner");
    let _ = blocked.await;
}

/// 7: a task named NAME (task::Builder), stuck on a oneshot whose sender was leaked: stalled,
/// so its name shows in every output's findings.
#[cfg_attr(not(all(tokio_unstable, any(feature = "console", feature = "named"))), allow(dead_code))]
async fn waits_named(report: Reporter) {
    let (tx, rx) = oneshot::channel::<u64>();
    std::mem::forget(tx);
    report.started("named");
    let _ = rx.await;
}

/// 8: a future of a bit more than LARGE_BYTES: the array lives across the await.
async fn waits_large(report: Reporter) {
    let buf = [0x5au8; LARGE_BYTES];
    report.started("large");
    tokio::time::sleep(LONG).await;
    std::hint::black_box(&buf);
}

/// 9: rounds of a SELFWAKE_SLEEP sleep, then SELF_WAKES polls each waking itself.
async fn waits_selfwake(report: Reporter) {
    report.started("selfwake");
    loop {
        tokio::time::sleep(SELFWAKE_SLEEP).await;
        SelfWake { left: SELF_WAKES }.await;
    }
}

/// Returns Pending `left` times, each after `cx.waker().wake_by_ref()` (a self-wake: Tokio
/// reschedules the task as soon as the poll ends), then Ready.
struct SelfWake {
    left: u32,
}

impl Future for SelfWake {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.left == 0 {
            return Poll::Ready(());
        }
        self.left -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
