//! A Tokio 1.53 program carrying the probes of oxide's tokio-dtrace (provider "tokio", fired
//! from Tokio's runtime hooks): `tokio-dtrace-dialect --duration SECS [--tasks N]`.
#[path = "../oxide.rs"]
mod oxide;

use tokio_dialects::{parse_args, print_counts, run_workload};

fn main() {
    let args = parse_args();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    let rt = oxide::register_hooks(&mut builder).enable_all().build().expect("runtime");
    run_workload(&rt, &args, |task| task);
    drop(rt); // every hook call made before the counts
    print_counts(&oxide::COUNTERS);
}
