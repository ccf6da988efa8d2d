//! `uring-workload` (cargo feature `uring`, line tokio-1.53-uring only): file I/O through
//! io_uring with tokio-uring 0.5, for tracing a Tokio program whose I/O bypasses Tokio's reactor.
//!
//! `tokio_uring::start` runs a current-thread Tokio runtime with a `LocalSet` and its own ring.
//! N tasks (site `uring_file`) each open a file of their own under $TMPDIR and, until the
//! deadline, write it whole (`write_at`), read it back (`read_at`) and compare, with an `fsync`
//! (`sync_all`) every FSYNC_EVERY rounds; then close it and unlink it, all through the ring.
//! With `--stuck-pipe` one more task (site `uring_stuck_read`) reads the read end of a pipe whose
//! write end stays open and is never written: an io_uring READ submitted and never completed. At
//! the deadline the process prints its counts and exits at once (`std::process::exit` inside the
//! runtime), abandoning that read: returning from `tokio_uring::start` would drop tokio-uring's
//! driver, which submits an ASYNC_CANCEL for every op in flight and waits for them. With
//! `--cancel-at-exit` it does return, so that read ends cancelled (-ECANCELED) before the exit.
//!
//! Each tokio-uring call used here submits exactly one SQE, counted before it is awaited:
//! `OpenOptions::open` OPENAT, `write_at` WRITE, `read_at` READ, `sync_all` FSYNC, `close` CLOSE,
//! `remove_file` UNLINKAT. A short write or read is continued with another call (and counted).

use std::cell::Cell;
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Instant;

use tokio_uring::buf::BoundedBuf;
use tokio_uring::fs::{File, OpenOptions};

use crate::cli::UringOpts;

/// An fsync every this many write/read rounds.
const FSYNC_EVERY: u64 = 8;

/// SQEs submitted, per opcode.
#[derive(Default)]
struct Ops {
    openat: Cell<u64>,
    write: Cell<u64>,
    read: Cell<u64>,
    fsync: Cell<u64>,
    close: Cell<u64>,
    unlinkat: Cell<u64>,
    rounds: Cell<u64>,
    bytes_verified: Cell<u64>,
}

fn bump(c: &Cell<u64>, n: u64) {
    c.set(c.get() + n);
}

pub fn run(opts: UringOpts) -> Result<(), String> {
    let pid = std::process::id();
    let dir = std::env::temp_dir();
    let paths: Vec<PathBuf> =
        (0..opts.tasks).map(|i| dir.join(format!("sample-service-uring-{pid}-{i}"))).collect();
    let cleanup = |paths: &[PathBuf]| {
        // Leave no file behind (normally the tasks have unlinked theirs already).
        for p in paths {
            let _ = std::fs::remove_file(p);
        }
        let _ = std::io::stdout().flush();
    };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        tokio_uring::start(async {
            let code = match workload(&opts, &paths).await {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("sample-service: uring-workload: {e}");
                    1
                }
            };
            cleanup(&paths);
            if opts.cancel_at_exit {
                return code;
            }
            // Exit from inside the runtime: returning would drop tokio-uring's driver, which
            // cancels (ASYNC_CANCEL) and waits for every op still in flight. The stuck read
            // is abandoned instead, still pending in the ring when the process ends.
            std::process::exit(code)
        })
    }));
    if let Ok(code) = result {
        // --cancel-at-exit: the driver is gone, the stuck read was cancelled
        println!("uring cancelled_at_exit=1");
        let _ = std::io::stdout().flush();
        std::process::exit(code);
    }
    // Only after a panic (the panic message is already on stderr).
    cleanup(&paths);
    std::process::exit(1)
}

async fn workload(opts: &UringOpts, paths: &[PathBuf]) -> Result<(), String> {
    let ops = Rc::new(Ops::default());
    let deadline = Instant::now() + opts.duration;

    // The pipe of --stuck-pipe: the write end is kept open (never written) until exit.
    let mut stuck: Option<(File, OwnedFd)> = None;
    let mut stuck_fd = -1;
    if opts.stuck_pipe {
        let (reader, writer) = std::io::pipe().map_err(|e| format!("pipe: {e}"))?;
        let reader = std::fs::File::from(OwnedFd::from(reader));
        stuck_fd = reader.as_raw_fd();
        stuck = Some((File::from_std(reader), OwnedFd::from(writer)));
    }
    println!("uring pid={} stuck_fd={stuck_fd}", std::process::id());
    let _ = std::io::stdout().flush();

    if let Some((file, writer)) = stuck {
        // Open until the process exits (closing it would end the read with EOF).
        std::mem::forget(writer);
        bump(&ops.read, 1);
        let _stuck = tokio::task::spawn_local(uring_stuck_read(file)); // SPAWN-SITE: uring_stuck_read
    }

    let start = Instant::now();
    let mut handles = Vec::with_capacity(paths.len());
    for (i, path) in paths.iter().enumerate() {
        let task = uring_file_task(i as u64, path.clone(), opts.file_size, deadline, ops.clone());
        handles.push(tokio::task::spawn_local(task)); // SPAWN-SITE: uring_file
    }
    let mut first_err = None;
    for h in handles {
        let r = h.await.map_err(|e| format!("task: {e}")).and_then(|r| r);
        if let (Err(e), None) = (r, &first_err) {
            first_err = Some(e);
        }
    }
    let elapsed = start.elapsed();
    println!(
        "uring tasks={} rounds={} bytes_verified={} elapsed_ms={}",
        paths.len(),
        ops.rounds.get(),
        ops.bytes_verified.get(),
        elapsed.as_millis()
    );
    println!(
        "uring ops write={} read={} fsync={} openat={} close={} unlinkat={} stuck_read={}",
        ops.write.get(),
        ops.read.get(),
        ops.fsync.get(),
        ops.openat.get(),
        ops.close.get(),
        ops.unlinkat.get(),
        opts.stuck_pipe as u8
    );
    match first_err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The pattern of task `task`'s round `round`: changes every round, so a stale read shows.
fn fill(buf: &mut [u8], task: u64, round: u64) {
    let seed = task.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ round.wrapping_mul(0xD1B5_4A32_D192_ED03);
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (seed.wrapping_add(i as u64).wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8;
    }
}

async fn uring_file_task(
    task: u64,
    path: PathBuf,
    size: usize,
    deadline: Instant,
    ops: Rc<Ops>,
) -> Result<(), String> {
    let what = |op: &str, e: std::io::Error| format!("{}: {op}: {e}", path.display());
    // the requests this task submits (one per tokio-uring call), printed with its Tokio task id
    let mut mine = 0u64;
    mine += 1;
    bump(&ops.openat, 1);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .await
        .map_err(|e| what("open", e))?;
    let mut wbuf = vec![0u8; size];
    let mut rbuf = vec![0u8; size];
    let mut round = 0u64;
    let result: Result<(), String> = async {
        while Instant::now() < deadline {
            fill(&mut wbuf, task, round);
            // write it whole (a short write is continued from where it stopped)
            let mut done = 0;
            while done < size {
                mine += 1;
                bump(&ops.write, 1);
                let (res, slice) = file.write_at(wbuf.slice(done..), done as u64).submit().await;
                wbuf = slice.into_inner();
                match res.map_err(|e| what("write_at", e))? {
                    0 => return Err(format!("{}: write_at wrote nothing", path.display())),
                    n => done += n,
                }
            }
            round += 1;
            if round % FSYNC_EVERY == 0 {
                mine += 1;
                bump(&ops.fsync, 1);
                file.sync_all().await.map_err(|e| what("fsync", e))?;
            }
            // read it back whole into a cleared buffer
            rbuf.iter_mut().for_each(|b| *b = 0);
            let mut got = 0;
            while got < size {
                mine += 1;
                bump(&ops.read, 1);
                let (res, slice) = file.read_at(rbuf.slice(got..size), got as u64).await;
                rbuf = slice.into_inner();
                match res.map_err(|e| what("read_at", e))? {
                    0 => {
                        return Err(format!("{}: read_at: end of file at {got} of {size}", path.display()))
                    }
                    n => got += n,
                }
            }
            if rbuf != wbuf {
                let at = rbuf.iter().zip(&wbuf).position(|(a, b)| a != b).unwrap_or(0);
                return Err(format!("{}: round {round}: read back differs at byte {at}", path.display()));
            }
            bump(&ops.rounds, 1);
            bump(&ops.bytes_verified, size as u64);
        }
        Ok(())
    }
    .await;
    mine += 1;
    bump(&ops.close, 1);
    let closed = file.close().await.map_err(|e| what("close", e));
    mine += 1;
    bump(&ops.unlinkat, 1);
    let removed = tokio_uring::fs::remove_file(&path).await.map_err(|e| what("unlink", e));
    println!("uring task id={} requests={mine}", tokio::task::id());
    result.and(closed).and(removed)
}

/// The read of --stuck-pipe: nothing is ever written to the pipe, so it never completes.
async fn uring_stuck_read(file: File) {
    let (res, _) = file.read_at(vec![0u8; 4096], 0).await;
    eprintln!("sample-service: uring-workload: the stuck pipe read completed: {res:?}");
}
