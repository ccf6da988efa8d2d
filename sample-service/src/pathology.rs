//! The pathologies a Tokio task tracer should find.
//!
//! Each pathology is one async function (the task body: what a buggy service would do) and one
//! `trigger_*` function that spawns it. The spawn line ends in a SPAWN-SITE marker comment
//! naming the site, so tests can derive the spawn location the tracer must report:
//! `file:line:col`, where `col` is the 1-based column of `tokio::spawn` on the marker line
//! (what `#[track_caller]` records; see README.md).
//!
//! Both the HTTP endpoint `/pathology/NAME` and the background driver (`--pathology`) call the
//! same `trigger`, so every task of one pathology comes from one spawn site. Tasks that never
//! complete (lost_waker, stalled_task) are capped so a long run cannot leak without bound.

use std::future::Future;
use std::hint::black_box;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use tokio::time::MissedTickBehavior;

/// A slow upstream: the task sleeps this long (Pending on a timer), then completes.
pub const SLOW_DEPENDENCY_LATENCY: Duration = Duration::from_millis(1500);
/// A synchronous call inside async code blocks the worker this long in one poll.
pub const BLOCKING_CALL_TIME: Duration = Duration::from_millis(50);
/// A CPU-bound loop runs this long in one poll without yielding.
pub const CPU_HOG_TIME: Duration = Duration::from_millis(30);
/// Tiny tasks spawned per spawn-storm burst.
pub const SPAWN_STORM_BURST: u64 = 2000;
/// The storm spawner yields after this many spawns, so that it is not itself a long poll.
const SPAWN_STORM_YIELD_EVERY: u64 = 250;
/// At most this many lost-waker tasks and this many stalled tasks exist per process.
pub const MAX_LEAKED_TASKS: usize = 5;
/// The starvation pathology blocks every worker at once this long.
pub const STARVATION_TIME: Duration = Duration::from_millis(120);
/// … after waiting for all of its tasks to run (spinning) at most this long.
const STARVATION_RENDEZVOUS: Duration = Duration::from_millis(500);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pathology {
    SlowDependency,
    BlockingCall,
    LostWaker,
    StalledTask,
    CpuHog,
    SpawnStorm,
    /// Not in `all` (the tests of the six keep their findings): `--pathology starvation`.
    Starvation,
    /// Not in `all`: `--pathology deadlock` (once per process: its tasks never end).
    Deadlock,
}

/// What a trigger did.
pub enum Triggered {
    Spawned,
    /// The per-process cap of never-completing tasks was reached; nothing was spawned.
    Capped,
}

impl Pathology {
    pub const ALL: [Pathology; 6] = [
        Pathology::SlowDependency,
        Pathology::BlockingCall,
        Pathology::LostWaker,
        Pathology::StalledTask,
        Pathology::CpuHog,
        Pathology::SpawnStorm,
    ];
    /// The pathologies `all` leaves out (named one by one).
    pub const EXTRA: [Pathology; 2] = [Pathology::Starvation, Pathology::Deadlock];

    pub fn name(self) -> &'static str {
        match self {
            Pathology::SlowDependency => "slow_dependency",
            Pathology::BlockingCall => "blocking_call",
            Pathology::LostWaker => "lost_waker",
            Pathology::StalledTask => "stalled_task",
            Pathology::CpuHog => "cpu_hog",
            Pathology::SpawnStorm => "spawn_storm",
            Pathology::Starvation => "starvation",
            Pathology::Deadlock => "deadlock",
        }
    }

    /// Accepts `slow_dependency` and `slow-dependency`.
    pub fn from_name(name: &str) -> Option<Pathology> {
        let name = name.replace('-', "_");
        Pathology::ALL.into_iter().chain(Pathology::EXTRA).find(|p| p.name() == name)
    }

    pub fn names() -> String {
        Pathology::ALL.into_iter().chain(Pathology::EXTRA).map(Pathology::name).collect::<Vec<_>>().join(", ")
    }

    /// How often the background driver (`--pathology`) triggers it (a multiple of DRIVER_TICK).
    pub fn period(self) -> Duration {
        match self {
            Pathology::SlowDependency => Duration::from_millis(500),
            Pathology::BlockingCall => Duration::from_millis(250),
            Pathology::LostWaker => Duration::from_secs(1),
            Pathology::StalledTask => Duration::from_secs(1),
            Pathology::CpuHog => Duration::from_millis(250),
            Pathology::SpawnStorm => Duration::from_secs(1),
            Pathology::Starvation => Duration::from_secs(1),
            Pathology::Deadlock => Duration::from_secs(1),
        }
    }
}

/// Spawns one instance of the pathology (must run inside the runtime).
pub fn trigger(p: Pathology) -> Triggered {
    match p {
        Pathology::SlowDependency => trigger_slow_dependency(),
        Pathology::BlockingCall => trigger_blocking_call(),
        Pathology::LostWaker => trigger_lost_waker(),
        Pathology::StalledTask => trigger_stalled_task(),
        Pathology::CpuHog => trigger_cpu_hog(),
        Pathology::SpawnStorm => trigger_spawn_storm(),
        Pathology::Starvation => trigger_starvation(),
        Pathology::Deadlock => trigger_deadlock(),
    }
}

/// The background drivers wake this often, whatever their pathology's period, so that no
/// driver waits on its timer anywhere near as long as a slow dependency (1.5 s).
const DRIVER_TICK: Duration = Duration::from_millis(250);

/// The background driver of `--pathology`: triggers `p` every `p.period()` until the runtime
/// shuts down. Its own polls are short; between ticks it waits on the timer.
pub async fn drive(p: Pathology) {
    let ticks_per_trigger = (p.period().as_millis() / DRIVER_TICK.as_millis()).max(1);
    let mut ticks = tokio::time::interval(DRIVER_TICK);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut n: u128 = 0;
    loop {
        ticks.tick().await;
        if n.is_multiple_of(ticks_per_trigger) {
            trigger(p);
        }
        n += 1;
    }
}

// ---- slow_dependency: Pending on a timer for a long time, then completes -------------------

fn trigger_slow_dependency() -> Triggered {
    let _upstream = tokio::spawn(slow_dependency_call(SLOW_DEPENDENCY_LATENCY)); // SPAWN-SITE: slow_dependency
    Triggered::Spawned
}

/// Calls an upstream that takes `latency` to answer.
async fn slow_dependency_call(latency: Duration) -> u64 {
    tokio::time::sleep(latency).await;
    black_box(latency.as_millis() as u64)
}

// ---- blocking_call: a synchronous, sleeping call inside async code (one long poll) ---------

fn trigger_blocking_call() -> Triggered {
    let _lookup = tokio::spawn(blocking_call_in_async()); // SPAWN-SITE: blocking_call
    Triggered::Spawned
}

async fn blocking_call_in_async() -> u64 {
    let answer = legacy_sync_lookup(BLOCKING_CALL_TIME);
    black_box(answer)
}

/// A synchronous client library call: blocks the calling thread (here: a Tokio worker).
fn legacy_sync_lookup(time: Duration) -> u64 {
    std::thread::sleep(time);
    42
}

// ---- lost_waker: returns Pending without keeping the waker; nothing ever wakes it ----------

static LOST_WAKER_TASKS: AtomicUsize = AtomicUsize::new(0);

fn trigger_lost_waker() -> Triggered {
    if !take_slot(&LOST_WAKER_TASKS) {
        return Triggered::Capped;
    }
    let _lost = tokio::spawn(lost_waker_wait()); // SPAWN-SITE: lost_waker
    Triggered::Spawned
}

async fn lost_waker_wait() {
    ForgetfulFuture { polls: 0 }.await
}

/// The bug: a hand-written future that returns `Pending` without storing (or cloning) the
/// waker from its `Context`. Nothing else will wake the task, so it never completes.
struct ForgetfulFuture {
    polls: u64,
}

impl Future for ForgetfulFuture {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        self.polls += 1;
        // "The data is not ready yet; someone will wake us" — but nobody has the waker.
        Poll::Pending
    }
}

// ---- stalled_task: waits on a channel whose sender is kept alive but never sends ------------

static STALLED_TASKS: AtomicUsize = AtomicUsize::new(0);
/// The senders stay here for the life of the process; nobody ever sends on them.
static FORGOTTEN_SENDERS: Mutex<Vec<oneshot::Sender<u64>>> = Mutex::new(Vec::new());

fn trigger_stalled_task() -> Triggered {
    if !take_slot(&STALLED_TASKS) {
        return Triggered::Capped;
    }
    let (tx, rx) = oneshot::channel();
    FORGOTTEN_SENDERS.lock().unwrap_or_else(|e| e.into_inner()).push(tx);
    let _stalled = tokio::spawn(stalled_task_wait(rx)); // SPAWN-SITE: stalled_task
    Triggered::Spawned
}

/// Waits for a reply that never comes: the waker is stored in the channel (live) but the
/// sender is never used and never dropped.
async fn stalled_task_wait(reply: oneshot::Receiver<u64>) -> u64 {
    reply.await.unwrap_or(0)
}

// ---- starvation: every worker blocked at once (the runtime's timers and I/O stop) ------------

/// The runtime's worker threads (set by main; 1 on a current-thread runtime).
static WORKERS: AtomicUsize = AtomicUsize::new(1);
/// Tasks of the last starvation trigger still running (a trigger waits for them to finish).
static STARVERS: AtomicUsize = AtomicUsize::new(0);

pub fn set_workers(n: usize) {
    WORKERS.store(n.max(1), Ordering::Relaxed);
}

fn trigger_starvation() -> Triggered {
    let n = WORKERS.load(Ordering::Relaxed);
    if STARVERS.compare_exchange(0, n, Ordering::AcqRel, Ordering::Acquire).is_err() {
        return Triggered::Capped; // the last one still holds the workers
    }
    let arrived = std::sync::Arc::new(AtomicUsize::new(0));
    for _ in 0..n {
        let _hold = tokio::spawn(hold_worker(arrived.clone(), n)); // SPAWN-SITE: starvation
    }
    Triggered::Spawned
}

/// One of n tasks that hold every worker at once: spins until all n run (at most
/// STARVATION_RENDEZVOUS), then blocks its worker in a synchronous sleep — meanwhile no timer
/// of the runtime fires and no woken task is polled.
async fn hold_worker(arrived: std::sync::Arc<AtomicUsize>, n: usize) {
    arrived.fetch_add(1, Ordering::AcqRel);
    let start = Instant::now();
    while arrived.load(Ordering::Acquire) < n && start.elapsed() < STARVATION_RENDEZVOUS {
        std::hint::spin_loop();
    }
    std::thread::sleep(STARVATION_TIME);
    STARVERS.fetch_sub(1, Ordering::AcqRel);
}

// ---- deadlock: tasks waiting on each other through tokio::sync locks and JoinHandles --------

/// At most one deadlock trigger per process (its tasks never end).
static DEADLOCKS: AtomicUsize = AtomicUsize::new(0);
/// How long the lock holders of the healthy half hold their locks (past the stall threshold).
pub const LOCK_HOLD_TIME: Duration = Duration::from_millis(2500);
/// How long each lock_ordered task holds both of its Mutexes.
pub const LOCK_ORDERED_HOLD: Duration = Duration::from_millis(1000);

/// What the deadlock trigger spawned and locked, as `locks …` lines (`run_locks` prints them).
static DEADLOCK_NOTES: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn note(line: String) {
    DEADLOCK_NOTES.lock().unwrap_or_else(|e| e.into_inner()).push(line);
}

fn note_task<T: std::fmt::Debug>(role: &str, h: &tokio::task::JoinHandle<T>) {
    note(format!("locks task={role} id={}", crate::starve::id_of(h)));
}

fn note_lock<T>(name: &str, lock: &T) {
    note(format!("locks lock={name} addr={:#x} size={}", lock as *const T as usize, std::mem::size_of::<T>()));
}

/// `sample-service locks`: the deadlock trigger alone; prints its tasks and locks, `ready`, and
/// runs for `duration` (SIGTERM/SIGINT: at once).
pub async fn run_locks(duration: Duration) -> Result<(), String> {
    use tokio::signal::unix::{signal, SignalKind};

    let mut term = signal(SignalKind::terminate()).map_err(|e| format!("SIGTERM handler: {e}"))?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| format!("SIGINT handler: {e}"))?;
    trigger_deadlock();
    tokio::time::sleep(Duration::from_millis(300)).await; // the inner spawns are made by then
    for line in DEADLOCK_NOTES.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        println!("{line}");
    }
    println!("locks pid={} ready", std::process::id());
    tokio::select! {
        _ = tokio::time::sleep(duration) => {}
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    Ok(())
}

fn trigger_deadlock() -> Triggered {
    use std::sync::Arc;
    use tokio::sync::{Mutex, RwLock, Semaphore};

    if DEADLOCKS.fetch_add(1, Ordering::AcqRel) != 0 {
        return Triggered::Capped;
    }
    // 1. two tasks over two Mutexes, taken in opposite orders
    let (m1, m2) = (Arc::new(Mutex::new(0u64)), Arc::new(Mutex::new(0u64)));
    let (a1, a2) = (m1.clone(), m2.clone());
    note_lock("m1", &*m1);
    note_lock("m2", &*m2);
    let a = tokio::spawn(async move { lock_both(a1, a2).await }); // SPAWN-SITE: deadlock_a
    let b = tokio::spawn(async move { lock_both(m2, m1).await }); // SPAWN-SITE: deadlock_b
    note_task("deadlock_a", &a);
    note_task("deadlock_b", &b);
    // 2. three tasks over a Mutex and two JoinHandles: the first holds the Mutex and awaits
    //    the second, which awaits the third, which waits for the Mutex
    let m = Arc::new(Mutex::new(0u64));
    let held = m.clone();
    note_lock("m", &*m);
    let c = tokio::spawn(async move { // SPAWN-SITE: deadlock_join_a
        let guard = held.lock().await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        let third = tokio::spawn(async move { *m.lock().await }); // SPAWN-SITE: deadlock_join_c
        note_task("deadlock_join_c", &third);
        let second = tokio::spawn(async move { third.await.unwrap_or(0) }); // SPAWN-SITE: deadlock_join_b
        note_task("deadlock_join_b", &second);
        let v = second.await.unwrap_or(0);
        black_box(*guard + v)
    });
    note_task("deadlock_join_a", &c);
    // 3. healthy: a task holds a Mutex, an RwLock (write) and a Semaphore's only permit while
    //    it sleeps; one waiter on each is named by the tracer as waiting for it; then all end
    let (mx, rw, sem) = (Arc::new(Mutex::new(0u64)), Arc::new(RwLock::new(0u64)), Arc::new(Semaphore::new(1)));
    let (hx, hr, hs) = (mx.clone(), rw.clone(), sem.clone());
    note_lock("mx", &*mx);
    note_lock("rw", &*rw);
    note_lock("sem", &*sem);
    let h = tokio::spawn(async move { // SPAWN-SITE: lock_holder
        let g1 = hx.lock().await;
        let g2 = hr.write().await;
        let p = hs.acquire().await;
        tokio::time::sleep(LOCK_HOLD_TIME).await;
        drop((g1, g2, p));
    });
    note_task("lock_holder", &h);
    let w1 = tokio::spawn(async move { // SPAWN-SITE: mutex_waiter
        tokio::time::sleep(Duration::from_millis(100)).await;
        black_box(*mx.lock().await)
    });
    let w2 = tokio::spawn(async move { // SPAWN-SITE: rwlock_waiter
        tokio::time::sleep(Duration::from_millis(100)).await;
        black_box(*rw.write().await)
    });
    let w3 = tokio::spawn(async move { // SPAWN-SITE: semaphore_waiter
        tokio::time::sleep(Duration::from_millis(100)).await;
        black_box(sem.acquire().await.is_ok())
    });
    note_task("mutex_waiter", &w1);
    note_task("rwlock_waiter", &w2);
    note_task("semaphore_waiter", &w3);
    // 4. three tasks take the same two Mutexes in one order under contention, each holding both
    //    LOCK_ORDERED_HOLD while it sleeps: the last waits twice that (a `stalled` waiter of a
    //    held lock past the threshold), and no deadlock
    let (o1, o2) = (Arc::new(Mutex::new(0u64)), Arc::new(Mutex::new(0u64)));
    for i in 0..3u64 {
        let (x, y) = (o1.clone(), o2.clone());
        let o = tokio::spawn(async move { // SPAWN-SITE: lock_ordered
            tokio::time::sleep(Duration::from_millis(10 * i)).await;
            let mut gx = x.lock().await;
            let mut gy = y.lock().await;
            tokio::time::sleep(LOCK_ORDERED_HOLD).await;
            *gx += 1;
            *gy += 1;
        });
        note_task("lock_ordered", &o);
    }
    Triggered::Spawned
}

/// Takes `first`, lets the other task take its first lock, then waits for `second`.
async fn lock_both(first: std::sync::Arc<tokio::sync::Mutex<u64>>, second: std::sync::Arc<tokio::sync::Mutex<u64>>) -> u64 {
    let a = first.lock().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let b = second.lock().await;
    black_box(*a + *b)
}

// ---- cpu_hog: a CPU-bound loop that never yields --------------------------------------------

fn trigger_cpu_hog() -> Triggered {
    let _hog = tokio::spawn(cpu_hog_compute(CPU_HOG_TIME)); // SPAWN-SITE: cpu_hog
    Triggered::Spawned
}

async fn cpu_hog_compute(time: Duration) -> u64 {
    let start = Instant::now();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    while start.elapsed() < time {
        for _ in 0..4096 {
            x = black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407));
        }
    }
    x
}

// ---- spawn_storm: bursts of many tiny, short-lived tasks -------------------------------------

fn trigger_spawn_storm() -> Triggered {
    let _burst = tokio::spawn(spawn_storm_burst(SPAWN_STORM_BURST)); // SPAWN-SITE: storm_burst
    Triggered::Spawned
}

/// Spawns `n` tiny tasks (the storm: they all come from the `spawn_storm` site below).
async fn spawn_storm_burst(n: u64) {
    for i in 0..n {
        let _tiny = tokio::spawn(spawn_storm_tiny_task(i)); // SPAWN-SITE: spawn_storm
        if i % SPAWN_STORM_YIELD_EVERY == SPAWN_STORM_YIELD_EVERY - 1 {
            tokio::task::yield_now().await;
        }
    }
}

async fn spawn_storm_tiny_task(i: u64) -> u64 {
    black_box(i.wrapping_mul(31).rotate_left(7))
}

/// Reserves one of the `MAX_LEAKED_TASKS` slots of a never-completing pathology.
fn take_slot(count: &AtomicUsize) -> bool {
    count
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < MAX_LEAKED_TASKS).then_some(n + 1))
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for p in Pathology::ALL.into_iter().chain(Pathology::EXTRA) {
            assert_eq!(Pathology::from_name(p.name()), Some(p));
        }
        assert_eq!(Pathology::from_name("cpu-hog"), Some(Pathology::CpuHog));
        assert_eq!(Pathology::from_name("nope"), None);
    }

    #[test]
    fn leaked_tasks_are_capped() {
        let c = AtomicUsize::new(0);
        assert!((0..MAX_LEAKED_TASKS).all(|_| take_slot(&c)));
        assert!(!take_slot(&c));
    }
}
