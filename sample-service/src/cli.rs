//! Hand-parsed command line (no argument-parsing crate: the same source builds against three
//! Debian suites and needs nothing beyond Tokio and, on newer lines, hyper).

use std::net::SocketAddr;
use std::time::Duration;

use crate::pathology::Pathology;

pub const USAGE: &str = "\
usage: sample-service [serve] [OPTIONS]
       sample-service yield-workload --tasks N --yields M [--workers W] [--current-thread]
       sample-service lock-workload --tasks N --locks M [--workers W] [--current-thread]
       sample-service checksum [--iterations N] [--workers W] [--current-thread]
       sample-service long-poll --ms N [--workers W] [--current-thread]
       sample-service spin-workload --tasks N --us U [--workers W] [--current-thread]
       sample-service uring-workload [--tasks N] [--duration DUR] [--file-size BYTES] [--stuck-pipe]
                                     [--cancel-at-exit] [--wait-start PATH]
       sample-service waits [--duration DUR] [--wait-start PATH]
       sample-service starve [--duration DUR] [--block DUR] [--wait-start PATH]
       sample-service locks [--duration DUR] [--wait-start PATH]

A Tokio HTTP service with switchable pathologies, and deterministic workloads, for tracing.

serve options:
  --addr ADDR          listen address (default 127.0.0.1:0); prints `listening on ADDR` when ready
  --pathology LIST     run pathologies continuously: comma-separated names, `all` or `none`
                       (slow_dependency, blocking_call, lost_waker, stalled_task, cpu_hog, spawn_storm;
                       not in `all`: starvation, deadlock)
  --duration DUR       exit 0 after DUR (e.g. 5s, 500ms, 1.5s, 2m)
  --load RPS           run the built-in loopback load generator at RPS requests/s (1..=10000)
  --concurrency N      load generator client tasks (1..=256, default min(8, RPS))
  --load-paths LIST    comma-separated paths the load generator requests (default /,/work)
  --crash HOW          crash on purpose after --crash-after (default 2s), from a task: `segv`
                       (a write to an unmapped address: SIGSEGV) or `panic-abort` (a panic, as
                       with panic = \"abort\": the message, then SIGABRT)
  --crash-after DUR    when --crash happens

uring-workload (only in the tokio-1.53-uring build, cargo feature `uring`): file I/O through
io_uring with tokio-uring (tokio_uring::start: a current-thread runtime and its own ring)
  --tasks N            tasks (default 4), each writing a file of its own under $TMPDIR whole,
                       reading it back and checking it, an fsync every 8 rounds, until the end
                       of --duration; then close and unlink (removed at exit in any case)
  --duration DUR       how long (default 5s); then exit 0
  --file-size BYTES    size of each task's file (1..=64M, default 65536)
  --stuck-pipe         one more task reads a pipe whose write end stays open and is never
                       written: an io_uring READ submitted that never completes (abandoned at exit)
  --cancel-at-exit     at the end, return from the runtime instead: tokio-uring's driver cancels
                       the stuck READ (ASYNC_CANCEL; it completes with -ECANCELED) before the exit
  prints `uring pid=PID stuck_fd=FD` (FD: the pipe's read end, or -1) at start, and at the end
  `uring tasks=N rounds=R bytes_verified=B elapsed_ms=MS` and the SQEs it submitted per opcode,
  `uring ops write=W read=R fsync=F openat=O close=C unlinkat=U stuck_read=0|1` (read counts
  the stuck read); each file task, as it ends, `uring task id=ID requests=N` (its Tokio task
  id and its calls). --workers and --current-thread do not apply.

waits: tasks that each stay pending on one thing for the whole run, on the multi-thread runtime
with 2 workers (--workers and --current-thread do not apply), each from its own spawn site:
timer (a 10-minute sleep), accept (an accept loop nobody connects to), idle_conn (a read of a
connection whose client, idle_client, never writes; idle_client sleeps), notify (a Notify nobody
notifies), leaked_rx and oneshot_rx (mpsc/oneshot receivers whose senders are leaked), blocked
(one poll blocking its worker thread all along) and joiner (awaits blocked's JoinHandle), named
(a sleep in a task named `waits-named` by task::Builder, which needs --cfg tokio_unstable and
Tokio's `tracing` feature: only the tokio-1.53-console build has both), large (a future of over
20000 bytes) and selfwake (rounds of a 100 ms sleep then 2 polls that wake themselves)
  --duration DUR       how long (default 20s); then exit 0 (SIGTERM or SIGINT: at once, exit 0)
  prints per task `waits task=ROLE id=ID` (its Tokio task id) with, for the sockets, `fd=FD
  addr=IP:PORT` (and `peer=IP:PORT` for idle_conn and idle_client), `joins=ID` (joiner),
  `name=waits-named`, `size=BYTES` (large: size_of_val of its future), `sleep_ms=100
  self_wakes=2` (selfwake), in that order (`waits named unsupported` in place of named's line
  where it cannot be built); then `waits pid=PID ready` once every task is pending.

starve: runtime starvation in a small service of the usual shapes, on the multi-thread runtime
with 2 workers: shutdown (a Notify), jobs (an mpsc worker), news (broadcast) and config (watch)
subscribers, their senders alive; ticker (a 100 ms interval) and sleeper (300 ms sleeps); ~1 s
after `ready`, block_a and block_b block both workers at once in std::thread::sleep
  --duration DUR       how long (default 8s); then exit 0 (SIGTERM or SIGINT: at once, exit 0)
  --block DUR          how long each blocker blocks its worker (default 2.5s)
  prints `starve task=ROLE id=ID` per task, `starve pid=PID ready`, then `starve blocked role=R
  start_ns=S end_ns=E` per blocker (CLOCK_MONOTONIC) and `starve overlap_ms=N`, and at the end
  `starve late_max_ms ticker=T sleeper=S` (the worst lateness each measured)

locks: the deadlock pathology's tasks alone (what `--pathology deadlock` spawns once), on the
multi-thread runtime with 2 workers: deadlock_a/deadlock_b (two Mutexes taken in opposite
orders), deadlock_join_a/b/c (a Mutex held while awaiting a JoinHandle chain back to it),
lock_holder (holds a Mutex, an RwLock for writing and a Semaphore's only permit for 2.5 s)
with mutex_waiter, rwlock_waiter and semaphore_waiter, and three lock_ordered tasks (two Mutexes
in one order, under contention)
  --duration DUR       how long (default 8s); then exit 0 (SIGTERM or SIGINT: at once, exit 0)
  prints `locks task=ROLE id=ID` per task and `locks lock=NAME addr=0xADDR size=BYTES` per lock
  (the primitive's own address and size), then `locks pid=PID ready`

common options:
  --workers N          worker threads of the multi-thread runtime (1..=1024, default: Tokio's)
  --current-thread     use the current-thread runtime instead
  --wait-start PATH    wait until PATH exists before the runtime starts
  -h, --help           this text

SIGTERM or SIGINT: graceful exit 0.
";

pub const MAX_RPS: u32 = 10_000;
pub const MAX_CONCURRENCY: u32 = 256;

#[derive(Debug)]
pub struct RuntimeOpts {
    pub workers: Option<usize>,
    pub current_thread: bool,
    pub wait_start: Option<String>,
}

#[derive(Debug)]
pub struct ServeOpts {
    pub addr: SocketAddr,
    pub pathologies: Vec<Pathology>,
    pub duration: Option<Duration>,
    pub load_rps: Option<u32>,
    pub concurrency: Option<u32>,
    pub load_paths: Vec<String>,
    pub crash: Option<(Crash, Duration)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crash {
    Segv,
    PanicAbort,
}

#[derive(Debug)]
pub enum Command {
    Serve(ServeOpts),
    YieldWorkload { tasks: u64, yields: u64 },
    LockWorkload { tasks: u64, locks: u64 },
    Checksum { iterations: u64 },
    LongPoll { ms: u64 },
    SpinWorkload { tasks: u64, us: u64 },
    UringWorkload(UringOpts),
    Waits { duration: Duration },
    Starve { duration: Duration, block: Duration },
    Locks { duration: Duration },
    Help,
}

/// `uring-workload` (built only with the cargo feature `uring`).
#[derive(Debug)]
#[cfg_attr(not(feature = "uring"), allow(dead_code))]
pub struct UringOpts {
    pub tasks: u64,
    pub duration: Duration,
    pub file_size: usize,
    pub stuck_pipe: bool,
    pub cancel_at_exit: bool,
}

#[derive(Debug)]
pub struct Cli {
    pub command: Command,
    pub runtime: RuntimeOpts,
}

/// Splits `--flag=value` / `--flag value` pairs off an argument list.
struct Args {
    items: Vec<String>,
    pos: usize,
}

impl Args {
    fn next_flag(&mut self) -> Option<(String, Option<String>)> {
        let arg = self.items.get(self.pos)?.clone();
        self.pos += 1;
        match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                Some((flag.to_string(), Some(value.to_string())))
            }
            _ => Some((arg, None)),
        }
    }

    fn value(&mut self, flag: &str, inline: Option<String>) -> Result<String, String> {
        if let Some(v) = inline {
            return Ok(v);
        }
        let v = self
            .items
            .get(self.pos)
            .ok_or_else(|| format!("{flag}: missing value"))?
            .clone();
        self.pos += 1;
        Ok(v)
    }
}

pub fn parse(argv: Vec<String>) -> Result<Cli, String> {
    let mut items = argv;
    let mode = match items.first().map(String::as_str) {
        Some("serve") | Some("yield-workload") | Some("lock-workload") | Some("checksum") | Some("long-poll")
        | Some("spin-workload") | Some("uring-workload") | Some("waits") | Some("starve")
        | Some("locks") | Some("help") => {
            items.remove(0)
        }
        _ => "serve".to_string(),
    };
    let mut args = Args { items, pos: 0 };

    let mut runtime = RuntimeOpts { workers: None, current_thread: false, wait_start: None };
    let mut serve = ServeOpts {
        addr: "127.0.0.1:0".parse().expect("literal address"),
        pathologies: Vec::new(),
        duration: None,
        load_rps: None,
        concurrency: None,
        load_paths: vec!["/".to_string(), "/work".to_string()],
        crash: None,
    };
    let mut crash_after = Duration::from_secs(2);
    let mut tasks: u64 = 1000;
    let mut yields: u64 = 10;
    let mut locks: u64 = 10_000;
    let mut iterations: u64 = 10_000;
    let mut ms: u64 = 5000;
    let mut us: u64 = 20;
    let mut help = mode == "help";
    let mut uring = UringOpts {
        tasks: 4,
        duration: Duration::from_secs(5),
        file_size: 65536,
        stuck_pipe: false,
        cancel_at_exit: false,
    };
    let mut waits_duration = Duration::from_secs(20);
    let mut starve_duration = Duration::from_secs(8);
    let mut starve_block = Duration::from_millis(2500);
    let mut locks_duration = Duration::from_secs(8);

    while let Some((flag, inline)) = args.next_flag() {
        let serve_only = matches!(
            flag.as_str(),
            "--addr" | "--pathology" | "--duration" | "--load" | "--concurrency" | "--load-paths"
                | "--crash" | "--crash-after"
        );
        let uring_too =
            flag == "--duration"
                && (mode == "uring-workload" || mode == "waits" || mode == "starve" || mode == "locks");
        if serve_only && mode != "serve" && !uring_too {
            return Err(format!("{flag}: only for `serve`"));
        }
        if mode == "uring-workload" && matches!(flag.as_str(), "--workers" | "--current-thread") {
            return Err(format!("{flag}: not for `uring-workload` (tokio-uring runs its own current-thread runtime)"));
        }
        if (mode == "waits" || mode == "starve" || mode == "locks")
            && matches!(flag.as_str(), "--workers" | "--current-thread")
        {
            return Err(format!("{flag}: not for `{mode}` (it runs on the multi-thread runtime with 2 workers)"));
        }
        match flag.as_str() {
            "-h" | "--help" => help = true,
            "--current-thread" => runtime.current_thread = true,
            "--workers" => {
                let v = args.value(&flag, inline)?;
                runtime.workers = Some(parse_num(&flag, &v, 1, 1024)? as usize);
            }
            "--wait-start" => runtime.wait_start = Some(args.value(&flag, inline)?),
            "--addr" => {
                let v = args.value(&flag, inline)?;
                serve.addr = v.parse().map_err(|e| format!("--addr {v}: {e}"))?;
            }
            "--pathology" => {
                let v = args.value(&flag, inline)?;
                for p in parse_pathologies(&v)? {
                    if !serve.pathologies.contains(&p) {
                        serve.pathologies.push(p);
                    }
                }
                if v == "none" {
                    serve.pathologies.clear();
                }
            }
            "--duration" => {
                let v = args.value(&flag, inline)?;
                serve.duration = Some(parse_duration(&v)?);
                uring.duration = parse_duration(&v)?;
                waits_duration = parse_duration(&v)?;
                starve_duration = parse_duration(&v)?;
                locks_duration = starve_duration;
            }
            "--block" if mode == "starve" => {
                let v = args.value(&flag, inline)?;
                starve_block = parse_duration(&v)?;
            }
            "--tasks" if mode == "uring-workload" => {
                let v = args.value(&flag, inline)?;
                uring.tasks = parse_num(&flag, &v, 1, 10_000)?;
            }
            "--file-size" if mode == "uring-workload" => {
                let v = args.value(&flag, inline)?;
                uring.file_size = parse_num(&flag, &v, 1, 64 << 20)? as usize;
            }
            "--stuck-pipe" if mode == "uring-workload" => uring.stuck_pipe = true,
            "--cancel-at-exit" if mode == "uring-workload" => uring.cancel_at_exit = true,
            "--load" => {
                let v = args.value(&flag, inline)?;
                serve.load_rps = Some(parse_num(&flag, &v, 1, MAX_RPS as u64)? as u32);
            }
            "--concurrency" => {
                let v = args.value(&flag, inline)?;
                serve.concurrency = Some(parse_num(&flag, &v, 1, MAX_CONCURRENCY as u64)? as u32);
            }
            "--load-paths" => {
                let v = args.value(&flag, inline)?;
                let paths: Vec<String> =
                    v.split(',').filter(|s| !s.is_empty()).map(str::to_string).collect();
                if paths.is_empty() || paths.iter().any(|p| !p.starts_with('/') || p.contains(' ')) {
                    return Err(format!("--load-paths {v}: want comma-separated paths starting with /"));
                }
                serve.load_paths = paths;
            }
            "--crash" => {
                let v = args.value(&flag, inline)?;
                let how = match v.as_str() {
                    "segv" => Crash::Segv,
                    "panic-abort" => Crash::PanicAbort,
                    _ => return Err(format!("--crash {v}: want segv or panic-abort")),
                };
                serve.crash = Some((how, crash_after));
            }
            "--crash-after" => {
                let v = args.value(&flag, inline)?;
                crash_after = parse_duration(&v)?;
                if let Some((how, _)) = serve.crash {
                    serve.crash = Some((how, crash_after));
                }
            }
            "--us" if mode == "spin-workload" => {
                let v = args.value(&flag, inline)?;
                us = parse_num(&flag, &v, 0, 10_000_000)?;
            }
            "--tasks" if mode == "yield-workload" || mode == "spin-workload" || mode == "lock-workload" => {
                let v = args.value(&flag, inline)?;
                tasks = parse_num(&flag, &v, 1, 10_000_000)?;
            }
            "--locks" if mode == "lock-workload" => {
                let v = args.value(&flag, inline)?;
                locks = parse_num(&flag, &v, 1, 1_000_000_000)?;
            }
            "--yields" if mode == "yield-workload" => {
                let v = args.value(&flag, inline)?;
                yields = parse_num(&flag, &v, 0, 1_000_000_000)?;
            }
            "--iterations" if mode == "checksum" => {
                let v = args.value(&flag, inline)?;
                iterations = parse_num(&flag, &v, 1, 1_000_000_000)?;
            }
            "--ms" if mode == "long-poll" => {
                let v = args.value(&flag, inline)?;
                ms = parse_num(&flag, &v, 0, 3_600_000)?;
            }
            _ => return Err(format!("unknown argument '{flag}' for `{mode}`")),
        }
    }

    let command = if help {
        Command::Help
    } else {
        match mode.as_str() {
            "yield-workload" => {
                tasks
                    .checked_mul(yields + 1)
                    .ok_or("yield-workload: --tasks × (--yields + 1) overflows")?;
                Command::YieldWorkload { tasks, yields }
            }
            "lock-workload" => {
                tasks.checked_mul(locks).ok_or("lock-workload: --tasks × --locks overflows")?;
                Command::LockWorkload { tasks, locks }
            }
            "checksum" => Command::Checksum { iterations },
            "long-poll" => Command::LongPoll { ms },
            "spin-workload" => Command::SpinWorkload { tasks, us },
            "uring-workload" => {
                if !cfg!(feature = "uring") {
                    return Err(format!(
                        "uring-workload: this binary ({}) was built without tokio-uring: use the tokio-1.53-uring line",
                        crate::tokio_line()
                    ));
                }
                Command::UringWorkload(uring)
            }
            "waits" => Command::Waits { duration: waits_duration },
            "starve" => Command::Starve { duration: starve_duration, block: starve_block },
            "locks" => Command::Locks { duration: locks_duration },
            _ => Command::Serve(serve),
        }
    };
    Ok(Cli { command, runtime })
}

fn parse_num(flag: &str, v: &str, min: u64, max: u64) -> Result<u64, String> {
    let n: u64 = v.parse().map_err(|_| format!("{flag} {v}: not a number"))?;
    if n < min || n > max {
        return Err(format!("{flag} {v}: out of range {min}..={max}"));
    }
    Ok(n)
}

fn parse_pathologies(list: &str) -> Result<Vec<Pathology>, String> {
    match list {
        "all" => Ok(Pathology::ALL.to_vec()),
        "none" => Ok(Vec::new()),
        _ => list
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|name| {
                Pathology::from_name(name).ok_or_else(|| {
                    format!("--pathology: unknown pathology '{name}' (known: {})", Pathology::names())
                })
            })
            .collect(),
    }
}

/// `5s`, `500ms`, `1.5s`, `250us`, `100ns`, `2m`, `1h`; a bare number means seconds.
pub fn parse_duration(v: &str) -> Result<Duration, String> {
    let split = v.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let n: f64 = num.parse().map_err(|_| format!("duration '{v}': not a number"))?;
    let scale = match unit {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" => 1e-6,
        "ns" => 1e-9,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return Err(format!("duration '{v}': unknown unit '{unit}' (ns, us, ms, s, m, h)")),
    };
    let secs = n * scale;
    if !secs.is_finite() || !(0.0..=1e9).contains(&secs) {
        return Err(format!("duration '{v}': out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert!(parse_duration("5 s").is_err());
        assert!(parse_duration("ms").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn serve_flags() {
        let cli = parse(argv("--addr=127.0.0.1:8080 --pathology slow_dependency,cpu-hog --load 50 --workers 2"))
            .unwrap();
        assert_eq!(cli.runtime.workers, Some(2));
        match cli.command {
            Command::Serve(s) => {
                assert_eq!(s.addr.port(), 8080);
                assert_eq!(s.pathologies, vec![Pathology::SlowDependency, Pathology::CpuHog]);
                assert_eq!(s.load_rps, Some(50));
            }
            other => panic!("{other:?}"),
        }
        assert!(parse(argv("--pathology bogus")).is_err());
        assert!(parse(argv("--load 0")).is_err());
        assert!(parse(argv("--workers")).is_err());
    }

    #[test]
    fn workloads() {
        match parse(argv("yield-workload --tasks 4 --yields 10 --current-thread")).unwrap() {
            Cli { command: Command::YieldWorkload { tasks: 4, yields: 10 }, runtime } => {
                assert!(runtime.current_thread)
            }
            other => panic!("{other:?}"),
        }
        assert!(parse(argv("checksum --tasks 4")).is_err());
        match parse(argv("waits --duration 3s")).unwrap().command {
            Command::Waits { duration } => assert_eq!(duration, Duration::from_secs(3)),
            other => panic!("{other:?}"),
        }
        match parse(argv("waits")).unwrap().command {
            Command::Waits { duration } => assert_eq!(duration, Duration::from_secs(20)),
            other => panic!("{other:?}"),
        }
        assert!(parse(argv("waits --workers 4")).is_err());
        assert!(parse(argv("waits --current-thread")).is_err());
        assert!(parse(argv("waits --load 5")).is_err());
        assert!(parse(argv("yield-workload --load 5")).is_err());
    }
}
