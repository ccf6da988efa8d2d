//! Deterministic workloads for tests and benchmarks; each runs to completion and returns the
//! line to print.
//!
//! `yield-workload`: N tasks each call `yield_now()` M times, so every task is polled exactly
//! M + 1 times (M polls end in a yield, the last completes). The joining happens in the
//! `block_on` future, which is not a task, so the only task events are those of the N tasks.
//!
//! `long-poll`: one task that yields three times, then blocks its worker thread inside one poll
//! for `--ms` milliseconds (a blocking call in async code), then completes; it prints
//! `blocking N ms` as the block begins.
//!
//! `spin-workload`: N tasks, each polled once: it spins `--us` microseconds of CPU and completes.
//! No probe fires inside these polls (no waker, no yield), so per-event capture times them as
//! faithfully as batched capture: the two can be compared on them.
//!
//! `checksum`: a hot loop whose every iteration runs Tokio's probe sites (spawn, poll, yield,
//! waker clone/wake/drop, terminate) and folds the tasks' results into a checksum. The result
//! depends only on `--iterations`, never on scheduling, so a traced run must print the same
//! checksum as an untraced one — a probe that corrupted registers or the stack (e.g. the red
//! zone below the stack pointer) would change it.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::oneshot;

pub async fn yield_workload(tasks: u64, yields: u64) -> String {
    let start = Instant::now();
    let mut handles = Vec::with_capacity(tasks as usize);
    for task in 0..tasks {
        handles.push(tokio::spawn(yield_task(task, yields))); // SPAWN-SITE: yield_workload
    }
    let mut total = 0u64;
    for handle in handles {
        total = total.wrapping_add(handle.await.expect("yield task panicked"));
    }
    let elapsed_ns = start.elapsed().as_nanos();
    black_box(total);
    let polls = tasks * (yields + 1);
    format!(
        "polls_expected={polls} elapsed_ns={elapsed_ns} ns_per_poll={:.1}",
        elapsed_ns as f64 / polls as f64
    )
}

/// Polled exactly `yields + 1` times: nothing here can return Pending except `yield_now`.
async fn yield_task(task: u64, yields: u64) -> u64 {
    let mut acc = black_box(task);
    for _ in 0..yields {
        tokio::task::yield_now().await;
        acc = black_box(acc.wrapping_add(1));
    }
    acc
}

/// `lock-workload`: `tasks` tasks each take a `tokio::sync::Mutex` of their own `locks` times
/// (and a `Semaphore` permit and an `RwLock` read guard of their own every 4th time), yielding
/// every 16th: the acquire and release hooks on a lock-heavy path, uncontended, so that the
/// figure is what the hooks cost and not how the scheduler hands a contended lock around
/// (what `task_lock` costs, make bench). Prints `locks_total=N elapsed_ns=E ns_per_lock=X`.
pub async fn lock_workload(tasks: u64, locks: u64) -> String {
    use std::sync::Arc;
    let start = Instant::now();
    let mut handles = Vec::with_capacity(tasks as usize);
    for _ in 0..tasks {
        let m = Arc::new(tokio::sync::Mutex::new(0u64));
        let rw = Arc::new(tokio::sync::RwLock::new(0u64));
        let sem = Arc::new(tokio::sync::Semaphore::new(4));
        handles.push(tokio::spawn(async move { // SPAWN-SITE: lock_workload
            let mut acc = 0u64;
            for i in 0..locks {
                *m.lock().await += 1;
                if i % 4 == 0 {
                    let _p = sem.acquire().await;
                    acc = black_box(acc.wrapping_add(*rw.read().await));
                }
                if i % 16 == 15 {
                    tokio::task::yield_now().await;
                }
            }
            acc.wrapping_add(*m.lock().await)
        }));
    }
    let mut total = 0u64;
    for handle in handles {
        total = total.wrapping_add(handle.await.expect("lock task panicked"));
    }
    let elapsed_ns = start.elapsed().as_nanos();
    format!(
        "locks_total={total} elapsed_ns={elapsed_ns} ns_per_lock={:.1}",
        elapsed_ns as f64 / (tasks * locks) as f64
    )
}

pub async fn spin_workload(tasks: u64, us: u64) -> String {
    let mut handles = Vec::with_capacity(tasks as usize);
    for _ in 0..tasks {
        handles.push(tokio::spawn(spin_task(us))); // SPAWN-SITE: spin_workload
    }
    let mut total = 0u64;
    for handle in handles {
        total = total.wrapping_add(handle.await.expect("spin task panicked"));
    }
    black_box(total);
    format!("spin_tasks={tasks} spin_us={us}")
}

/// One poll: `us` microseconds of CPU, then Ready.
async fn spin_task(us: u64) -> u64 {
    let until = Instant::now() + std::time::Duration::from_micros(us);
    let mut n = 0u64;
    while Instant::now() < until {
        n = black_box(n.wrapping_add(1));
    }
    n
}

pub async fn long_poll(ms: u64) -> String {
    let handle = tokio::spawn(long_poll_task(ms)); // SPAWN-SITE: long_poll
    handle.await.expect("long_poll task panicked");
    format!("long_poll_ms={ms}")
}

async fn long_poll_task(ms: u64) {
    for _ in 0..3 {
        tokio::task::yield_now().await;
    }
    println!("blocking {ms} ms");
    std::thread::sleep(std::time::Duration::from_millis(ms));
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
const DATA_LEN: usize = 64 * 1024;

pub async fn checksum(iterations: u64) -> String {
    let data: Arc<[u8]> = test_data(DATA_LEN).into();
    let mut sum = FNV_OFFSET;
    for i in 0..iterations {
        // Two independent tasks hashing the data across yields, and a pair talking over a
        // oneshot channel (waker clone in the receiver, wake from the sender).
        let hash_a = tokio::spawn(checksum_hash_step(data.clone(), i, 1)); // SPAWN-SITE: checksum_hash_a
        let hash_b = tokio::spawn(checksum_hash_step(data.clone(), i, 2 + (i % 3) as u32)); // SPAWN-SITE: checksum_hash_b
        let (tx, rx) = oneshot::channel();
        let receiver = tokio::spawn(checksum_receive(rx)); // SPAWN-SITE: checksum_receive
        let sender = tokio::spawn(checksum_send(tx, data.clone(), i)); // SPAWN-SITE: checksum_send
        for handle in [hash_a, hash_b, receiver, sender] {
            let value = handle.await.expect("checksum task panicked");
            sum = (sum ^ value).wrapping_mul(FNV_PRIME).rotate_left(7);
        }
    }
    format!("checksum={:016x}", black_box(sum))
}

async fn checksum_hash_step(data: Arc<[u8]>, iteration: u64, rounds: u32) -> u64 {
    let mut h = FNV_OFFSET ^ iteration;
    let start = (iteration as usize).wrapping_mul(613) % data.len();
    for round in 0..rounds as usize {
        for k in 0..64 {
            let byte = data[(start + k * 7 + round * 131) % data.len()];
            h = (h ^ u64::from(byte)).wrapping_mul(FNV_PRIME);
        }
        tokio::task::yield_now().await;
    }
    black_box(h)
}

async fn checksum_send(tx: oneshot::Sender<u64>, data: Arc<[u8]>, iteration: u64) -> u64 {
    tokio::task::yield_now().await;
    let value = u64::from(data[(iteration as usize * 17) % data.len()]) << 8 | (iteration & 0xff);
    let _ = tx.send(black_box(value));
    value.rotate_left(13)
}

async fn checksum_receive(rx: oneshot::Receiver<u64>) -> u64 {
    rx.await.expect("checksum sender dropped").wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// Fixed pseudo-random bytes (xorshift64, fixed seed).
fn test_data(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 32) as u8
        })
        .collect()
}
