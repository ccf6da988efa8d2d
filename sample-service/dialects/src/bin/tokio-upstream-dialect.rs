//! A Tokio 1.53 program carrying the probes of Tokio's upstream USDT proposal (tokio-rs/tokio
//! pull request #7717): `tokio-upstream-dialect --duration SECS [--tasks N]`.
#[path = "../upstream.rs"]
mod upstream;

use tokio_dialects::{parse_args, print_counts, run_workload};

fn main() {
    let args = parse_args();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    let rt = upstream::register_hooks(&mut builder).enable_all().build().expect("runtime");
    run_workload(&rt, &args, upstream::traced);
    drop(rt); // every task, waker and hook call accounted for before the counts
    print_counts(&upstream::COUNTERS);
}
