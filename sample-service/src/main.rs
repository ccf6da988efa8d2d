//! sample-service: a Tokio HTTP service with switchable pathologies, and deterministic
//! workloads, traced by the tests of tokio-ebpf-trace. One source tree builds against three
//! Tokio lines (lines/tokio-1.24, -1.43, -1.53) and stays within the Tokio 1.24 API; HTTP is
//! hyper 1 where the suite has it (feature `hyper`), else a small hand-written server.
//! See README.md for flags, endpoints and what a tracer should report for each pathology.

mod cli;
#[cfg(not(feature = "hyper"))]
mod http_basic;
#[cfg(feature = "hyper")]
mod http_hyper;
mod load;
mod pathology;
mod routes;
mod server;
#[cfg(feature = "uring")]
mod uring;
mod starve;
mod waits;
mod workload;

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use cli::{Cli, Command, RuntimeOpts};

/// The manifest directory's name, e.g. `tokio-1.43`: which Tokio line this binary was built for.
pub const TOKIO_LINE: &str = env!("CARGO_MANIFEST_DIR");

fn main() -> ExitCode {
    // tokio-console's instrumentation, in the tokio-1.53-console build of `make bench` only
    #[cfg(feature = "console")]
    console_subscriber::init();
    let cli = match cli::parse(std::env::args().skip(1).collect()) {
        Ok(cli) => cli,
        Err(e) => {
            eprintln!("sample-service: {e}\n\n{}", cli::USAGE);
            return ExitCode::from(2);
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sample-service: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<(), String> {
    if let Command::Help = cli.command {
        print!("{}", cli::USAGE);
        println!("built for {}", tokio_line());
        return Ok(());
    }
    if let Some(path) = &cli.runtime.wait_start {
        wait_for_file(Path::new(path));
    }
    // tokio-uring builds its own runtime (and exits the process at the end)
    if let Command::UringWorkload(opts) = cli.command {
        return uring_workload(opts);
    }
    // waits: the multi-thread runtime with 2 workers (one of them blocked all along)
    let runtime = if let Command::Waits { .. } | Command::Starve { .. } | Command::Locks { .. } = cli.command {
        build_runtime(&RuntimeOpts { workers: Some(2), current_thread: false, wait_start: None })?
    } else {
        build_runtime(&cli.runtime)?
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Serve(opts) => server::serve(opts).await,
            Command::YieldWorkload { tasks, yields } => {
                println!("{}", workload::yield_workload(tasks, yields).await);
                Ok(())
            }
            Command::LockWorkload { tasks, locks } => {
                println!("{}", workload::lock_workload(tasks, locks).await);
                Ok(())
            }
            Command::Checksum { iterations } => {
                println!("{}", workload::checksum(iterations).await);
                Ok(())
            }
            Command::SpinWorkload { tasks, us } => {
                println!("{}", workload::spin_workload(tasks, us).await);
                Ok(())
            }
            Command::LongPoll { ms } => {
                println!("{}", workload::long_poll(ms).await);
                Ok(())
            }
            Command::Waits { duration } => waits::run(duration).await,
            Command::Starve { duration, block } => starve::run(duration, block).await,
            Command::Locks { duration } => pathology::run_locks(duration).await,
            Command::Help | Command::UringWorkload(_) => Ok(()),
        }
    });
    // Never-completing pathology tasks are dropped here; a worker inside a blocking call
    // finishes that one poll first.
    runtime.shutdown_timeout(Duration::from_secs(2));
    result
}

#[cfg(feature = "uring")]
fn uring_workload(opts: cli::UringOpts) -> Result<(), String> {
    uring::run(opts)
}

/// Never reached: cli::parse refuses uring-workload in a build without tokio-uring.
#[cfg(not(feature = "uring"))]
fn uring_workload(_opts: cli::UringOpts) -> Result<(), String> {
    Err("uring-workload: built without tokio-uring (line tokio-1.53-uring)".to_string())
}

pub fn tokio_line() -> &'static str {
    Path::new(TOKIO_LINE).file_name().and_then(|n| n.to_str()).unwrap_or("tokio")
}

fn build_runtime(opts: &RuntimeOpts) -> Result<tokio::runtime::Runtime, String> {
    let mut builder = if opts.current_thread {
        pathology::set_workers(1);
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        if let Some(n) = opts.workers {
            b.worker_threads(n);
        }
        // Tokio's default: one worker per CPU (TOKIO_WORKER_THREADS overrides it)
        pathology::set_workers(opts.workers.unwrap_or_else(|| {
            std::env::var("TOKIO_WORKER_THREADS").ok().and_then(|v| v.parse().ok()).unwrap_or_else(|| {
                std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
            })
        }));
        b
    };
    builder.enable_all().build().map_err(|e| format!("cannot build the Tokio runtime: {e}"))
}

/// `--wait-start PATH`: lets a test start a tracer on this PID before any task exists.
fn wait_for_file(path: &Path) {
    while !path.exists() {
        std::thread::sleep(Duration::from_millis(10));
    }
}
