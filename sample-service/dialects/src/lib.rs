//! What the two dialect programs share: the command line, the hook counters, the workload and
//! the `.stapsdt.base` anchor of their SDT notes. Each binary adds its dialect's probes
//! (src/upstream.rs, src/oxide.rs: a module of the binary, not of this library, so that the
//! other dialect's notes stay out of it) to the runtime's hooks; docs/dialects.md says what
//! each one carries.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

// The anchor tracers use to detect prelink-style relocation (`<sys/sdt.h>`'s `_SDT_ASM_BASE`);
// "R" keeps it through --gc-sections (only the non-allocated notes refer to it).
std::arch::global_asm!(
    ".ifndef _.stapsdt.base",
    ".pushsection .stapsdt.base, \"aGR\", \"progbits\", .stapsdt.base, comdat",
    ".weak _.stapsdt.base",
    ".hidden _.stapsdt.base",
    "_.stapsdt.base: .space 1",
    ".size _.stapsdt.base, 1",
    ".popsection",
    ".endif",
);

/// One counter per hook kind, printed at exit (`polls=N spawns=N …`) for a test to compare with
/// what a tracer saw.
pub struct Counter {
    pub name: &'static str,
    n: AtomicU64,
}

impl Counter {
    pub const fn new(name: &'static str) -> Self {
        Counter { name, n: AtomicU64::new(0) }
    }
    #[inline]
    pub fn hit(&self) {
        self.n.fetch_add(1, Relaxed);
    }
    pub fn get(&self) -> u64 {
        self.n.load(Relaxed)
    }
}

pub fn print_counts(counters: &[&Counter]) {
    let line: Vec<String> = counters.iter().map(|c| format!("{}={}", c.name, c.get())).collect();
    println!("{}", line.join(" "));
}

/// A task id as the dialects pass it: the u64 inside `tokio::task::Id` (1.53 has no public
/// accessor; tokio-dtrace reads it the same way, through its layout).
#[inline]
pub fn id_u64(id: tokio::task::Id) -> u64 {
    const _: () = assert!(std::mem::size_of::<tokio::task::Id>() == 8);
    // Safety: `Id` is a single NonZeroU64 (tokio 1.53 src/runtime/task/id.rs), size checked.
    unsafe { std::mem::transmute::<tokio::task::Id, u64>(id) }
}

pub struct Args {
    pub duration: Duration,
    pub tasks: usize,
}

pub fn parse_args() -> Args {
    let usage = |why: &str| -> ! {
        eprintln!("{why}\nusage: {} --duration SECS [--tasks N]", std::env::args().next().unwrap_or_default());
        std::process::exit(2)
    };
    let mut args = Args { duration: Duration::from_secs(3), tasks: 8 };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let v = it.next().unwrap_or_else(|| usage(&format!("{a}: missing value")));
        match a.as_str() {
            "--duration" => match v.parse::<f64>() {
                Ok(s) if s > 0.0 => args.duration = Duration::from_secs_f64(s),
                _ => usage(&format!("--duration {v}: not a positive number of seconds")),
            },
            "--tasks" => args.tasks = v.parse().unwrap_or_else(|_| usage(&format!("--tasks {v}: not a count"))),
            _ => usage(&format!("{a}: unknown option")),
        }
    }
    args
}

pub type Task = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// Runs the workload on `rt` until the duration has passed: `tasks` tasks cycling through a
/// 1 ms sleep, a yield and a little CPU work, plus one task whose polls block its worker for
/// 150 ms every half second (a long poll to be found). Prints `ready pid=PID` once the tasks
/// run. `wrap` is the dialect's say on each task's future (the spawn calls stay here, so that
/// the tasks' spawn locations are these lines).
pub fn run_workload(rt: &tokio::runtime::Runtime, args: &Args, wrap: fn(Task) -> Task) {
    let deadline = Instant::now() + args.duration;
    rt.block_on(async {
        let mut handles: Vec<_> =
            (0..args.tasks).map(|i| tokio::spawn(wrap(Box::pin(busy_task(i as u64, deadline))))).collect();
        handles.push(tokio::spawn(wrap(Box::pin(long_poll_task(deadline)))));
        use std::io::Write;
        println!("ready pid={}", std::process::id());
        let _ = std::io::stdout().flush();
        for h in handles {
            h.await.expect("workload task failed");
        }
    });
}

async fn busy_task(seed: u64, deadline: Instant) {
    let mut x = seed;
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(1)).await;
        tokio::task::yield_now().await;
        for _ in 0..2000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        }
        std::hint::black_box(x);
    }
}

async fn long_poll_task(deadline: Instant) {
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(150)); // blocks the worker inside one poll
        tokio::time::sleep(Duration::from_millis(350)).await;
    }
}
