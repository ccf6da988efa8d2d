#!/bin/bash
# tests/kit/tls_app.sh (sourced): tls_app_build VERSION builds a small multi-thread Tokio program
# against Tokio VERSION from ../shared/tokio-src (tests/kit/registry.sh), with full DWARF
# (debug = 2), kept under $W/app-VERSION-HASH (W: the caller's cache folder). The program (`app SECS`)
# prints "ready", then for SECS seconds runs rounds of 4 tasks that spin 300 us, yield and spin
# 300 us again, and one task, hog_compute, that spins 30 ms in a poll every 100 ms. Used by
# tests/tls_matrix.sh (the slot against gdb) and t_sampling_release (--mode sampling on it).
tls_app_build() {  # tls_app_build VERSION: sets APP (built once into $W/app-VERSION-HASH; log $TMPD/build.VERSION.log)
    local v=$1 d
    # kept by the program's content too: a changed program is built anew
    d="$W/app-$1-$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12)"
    APP="$d/target/release/app"
    [ -x "$APP" ] && return 0
    "$ROOT/tests/kit/registry.sh" "$v" "$W/reg-$v" || return 1
    rm -rf "$d" && mkdir -p "$d/src" "$d/.cargo"
    printf '[source.crates-io]\nreplace-with = "m"\n[source.m]\ndirectory = "%s"\n[net]\noffline = true\n' "$W/reg-$v" > "$d/.cargo/config.toml"
    cat > "$d/Cargo.toml" <<EOF
[package]
name = "app"
version = "0.1.0"
edition = "2021"
[dependencies]
tokio = { version = "=$v", features = ["rt-multi-thread", "macros", "time"] }
[profile.release]
debug = 2
EOF
    cat > "$d/src/main.rs" <<'RS'
use std::time::{Duration, Instant};

#[inline(never)]
fn spin(us: u64) -> u64 {
    let end = Instant::now() + Duration::from_micros(us);
    let mut n = 0u64;
    while Instant::now() < end {
        n = n.wrapping_add(1);
    }
    n
}

// CPU for `ms` milliseconds, the clock read once every 2^20 rounds of arithmetic (a sample's
// leaf frame is this function, not the vDSO's clock)
#[inline(never)]
fn crunch(ms: u64) -> u64 {
    let end = Instant::now() + Duration::from_millis(ms);
    let mut x = 0x9e3779b97f4a7c15u64;
    loop {
        for _ in 0..(1u32 << 20) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        if Instant::now() >= end {
            return x;
        }
    }
}

// a task that hogs its worker: 30 ms on CPU in one poll, every 100 ms (t_sampling_release)
async fn hog_compute() {
    loop {
        std::hint::black_box(crunch(30));
        tokio::time::sleep(Duration::from_millis(70)).await;
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let secs: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(5);
    let end = Instant::now() + Duration::from_secs(secs);
    tokio::spawn(hog_compute());
    println!("ready");
    let mut total = 0u64;
    while Instant::now() < end {
        let hs: Vec<_> = (0..4).map(|_| tokio::spawn(async {
            let n = spin(300);
            tokio::task::yield_now().await;
            n + spin(300)
        })).collect();
        for h in hs {
            total = total.wrapping_add(h.await.unwrap());
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    println!("done {total}");
}
RS
    (cd "$d" && cargo generate-lockfile --offline --quiet && cargo build --release --offline --quiet) > "$TMPD/build.$v.log" 2>&1
}

