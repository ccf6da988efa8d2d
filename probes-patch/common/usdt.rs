//! USDT probes, provider `tokio` (added by tokio-ebpf-trace's probes-patch).
//!
//! Compiled in only with `RUSTFLAGS="--cfg tokio_task_tracking"` on x86_64 Linux. Every hook
//! point in the runtime is one `usdt::probe!(...)` line; without the cfg the macro expands to
//! nothing, so the crate compiles to what stock Tokio compiles to.
//!
//! Two ways out of the process, both gated by USDT semaphores the kernel raises while a tracer
//! is attached:
//!
//! - Per-event probes (`task_spawn`, `task_poll_begin`, …): each is a 5-byte nop described by a
//!   SystemTap SDT v3 note in `.note.stapsdt`, laid out byte for byte as `<sys/sdt.h>` lays it
//!   out. The nop sits in a cold, out-of-line function per probe, so there is one note per
//!   probe whatever the number of hook points and future types.
//! - Batched capture (`event_batch`): while a tracer is attached to `event_batch`, every hook
//!   point appends a compact record to a buffer of its thread (TSC stamps, no lock, no
//!   allocation, no syscall), and the thread fires `event_batch` once per batch: when the
//!   buffer fills, when a worker parks holding task records, every few milliseconds of
//!   activity and before the thread leaves the runtime. The tracer copies the batch in one uprobe hit. Sampling (one
//!   task in N, decided from the task id) is set by the tracer through the semaphores of the
//!   16 `sample_rate` sites, which encode N bit by bit; they go back to 0 when it detaches.
//!
//! Gates. The semaphores live in four gate words (section `.probes`), four u16 lanes to an
//! aligned 8-byte word, each word holding one replica of the `event_batch` semaphore (the probe
//! has one site per word) and the semaphores of up to three per-event probes. A hook point
//! tests its whole word with one load and one branch: untraced, it costs what a single
//! semaphore check costs; traced, it checks its lanes one by one.
//!
//! Probe names, argument lists, codes and the batch format: probes-patch/PROBES.md (they are
//! part of the tracer's ABI). Note layout and hook points per Tokio version: probes-patch/README.md.

/// A hook point. `probe!(name(args))` runs hook `name` with `args` evaluated only while a
/// tracer is attached to something sharing its gate word; `probe!(if cond => name(args))` the
/// same when `cond` also holds (tested after the gate); `probe!(gate => f(args))` calls `f`
/// only while gate `gate` is open; `probe!(let v = f(args))` binds what a later hook point
/// needs; `probe!(value v = expr => probe…)` is `expr` with the probe after it (a hook at a
/// function's tail expression: the value is bound to `v`, the probe runs, `v` is returned).
/// Without `--cfg tokio_task_tracking` every form expands to nothing, and `value` to `expr`
/// alone: the code stock Tokio has, in its order (a `let` + tail would compile differently).
#[cfg(not(all(tokio_task_tracking, target_arch = "x86_64", target_os = "linux")))]
macro_rules! probe {
    (value $v:ident = $e:expr => $($t:tt)*) => {
        $e
    };
    ($($t:tt)*) => {};
}

#[cfg(all(tokio_task_tracking, target_arch = "x86_64", target_os = "linux"))]
macro_rules! probe {
    (value $v:ident = $e:expr => $($t:tt)*) => {{
        let $v = $e;
        $crate::runtime::task::usdt::probe!($($t)*);
        $v
    }};
    (let $v:ident = $f:ident($($a:expr),* $(,)?)) => {
        let $v = $crate::runtime::task::usdt::$f($($a),*);
    };
    (task_poll_end($polled:expr, $result:expr $(,)?)) => {
        if $polled.traced() {
            $crate::runtime::task::usdt::task_poll_end($polled, $result)
        }
    };
    (if $cond:expr => $probe:ident($($a:expr),* $(,)?)) => {
        if $crate::runtime::task::usdt::$probe::gate() && $cond {
            $crate::runtime::task::usdt::$probe($($a),*)
        }
    };
    ($gate:ident => $f:ident($($a:expr),* $(,)?)) => {
        if $crate::runtime::task::usdt::$gate::gate() {
            $crate::runtime::task::usdt::$f($($a),*)
        }
    };
    ($probe:ident $(::<$($g:ty),+>)? ($($a:expr),* $(,)?)) => {
        if $crate::runtime::task::usdt::$probe::gate() {
            $crate::runtime::task::usdt::$probe $(::<$($g),+>)? ($($a),*)
        }
    };
}

pub(crate) use probe;

#[cfg(all(tokio_task_tracking, target_arch = "x86_64", target_os = "linux"))]
pub(crate) use self::imp::*;

#[cfg(all(tokio_task_tracking, target_arch = "x86_64", target_os = "linux"))]
mod imp {
    use crate::future::Future;
    use crate::runtime::task::core::{Core, Stage};
    use crate::runtime::task::state::TransitionToIdle;
    use crate::runtime::task::{Header, Id, Task};

    use std::cell::Cell;
    use std::panic::Location;
    use std::ptr::{self, NonNull};
    use std::sync::atomic::Ordering::{Relaxed, Release};
    use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8};
    use std::time::Duration;

    // ===== semaphores and gates =====

    /// A gate word: four u16 semaphores (lane 0 a replica of event_batch's, the others
    /// per-event probes'), tested at once by a hook point. The kernel writes a lane while a
    /// uprobe with that lane as ref_ctr_offset is installed; nothing else does.
    #[repr(C, align(8))]
    pub(crate) struct Gate([u16; 4]);

    // One static per word: a word referenced only by non-generic hook points stays private to
    // the crate and is read RIP-relative; the one generic code reads (the poll hooks,
    // instantiated in the application's crate) is exported and read through the GOT.
    #[link_section = ".probes"]
    static mut GATE_POLL: Gate = Gate([0; 4]); // event_batch, task_poll_begin, task_poll_end, task_yielded
    #[link_section = ".probes"]
    static mut GATE_WAKER: Gate = Gate([0; 4]); // event_batch, waker_wake, waker_clone, waker_drop
    #[link_section = ".probes"]
    static mut GATE_TASK: Gate = Gate([0; 4]); // event_batch, task_spawn, task_terminate, task_wait
    #[link_section = ".probes"]
    static mut GATE_WORKER: Gate = Gate([0; 4]); // event_batch, worker_park, worker_unpark, task_meta
    /// sample_rate bits 0-15
    #[link_section = ".probes"]
    static mut SAMPLE_BITS: [u16; 16] = [0; 16];

    const W_POLL: usize = 0;
    const W_WAKER: usize = 1;
    const W_TASK: usize = 2;
    const W_WORKER: usize = 3;

    #[inline(always)]
    fn gate_ptr(w: usize) -> *const Gate {
        match w {
            W_POLL => ptr::addr_of!(GATE_POLL),
            W_WAKER => ptr::addr_of!(GATE_WAKER),
            W_TASK => ptr::addr_of!(GATE_TASK),
            _ => ptr::addr_of!(GATE_WORKER),
        }
    }

    /// Is anything traced that shares gate word `w`? One 8-byte load.
    #[inline(always)]
    fn gate_word(w: usize) -> bool {
        // Safety: an aligned 8-byte read of a Gate; only the kernel writes it.
        unsafe { ptr::read_volatile(gate_ptr(w) as *const u64) != 0 }
    }

    /// Lane `l` of gate word `w`.
    #[inline(always)]
    fn lane(w: usize, l: usize) -> bool {
        // Safety: a u16 read inside a Gate.
        unsafe { ptr::read_volatile((gate_ptr(w) as *const u16).add(l)) != 0 }
    }

    /// Batched capture is on for the hooks of gate word `w`.
    #[inline(always)]
    fn batch_on(w: usize) -> bool {
        lane(w, 0)
    }

    /// Batched capture alone is on for gate word `w` (lane 0 set, no per-event probe sharing
    /// the word): the hot hooks then take their inlined fast path, which counts the event and
    /// stops at a task the sample rate leaves out (no call, no stack frame), and call out only
    /// for a task that is recorded. One load of the word, as `gate_word`.
    #[inline(always)]
    fn batch_only(w: usize) -> bool {
        // Safety: as in gate_word.
        let word = unsafe { ptr::read_volatile(gate_ptr(w) as *const u64) };
        word != 0 && word >> 16 == 0
    }

    /// The gate of a hook that records only inside the polled task's recorded poll
    /// (`task_wait`, `task_lock`): its own lane `l` of word `w`, or batched capture with a
    /// recorded poll open on this thread. A task the sample rate leaves out has none open: its
    /// hook point stops here, before its arguments are computed and without a call. One load
    /// of the word untraced, as `gate_word`.
    #[inline(always)]
    fn in_poll_gate(w: usize, l: usize) -> bool {
        // Safety: as in gate_word.
        let word = unsafe { ptr::read_volatile(gate_ptr(w) as *const u64) };
        word != 0
            && ((word >> (16 * l)) & 0xffff != 0 || (word & 0xffff != 0 && recorded_poll_open()))
    }

    fn sample_bit(k: usize) -> bool {
        // Safety: a u16 read inside SAMPLE_BITS.
        unsafe { ptr::read_volatile((ptr::addr_of!(SAMPLE_BITS) as *const u16).add(k)) != 0 }
    }

    // ===== the emitter =====

    /// The assembly of one probe site, as `<sys/sdt.h>` (`_SDT_ASM_BODY` + `_SDT_ASM_BASE`)
    /// writes it: the nop, its note, and the `.stapsdt.base` anchor tracers use to detect
    /// prelink-style relocation. The semaphore is `{semaphore}` (a `sym` operand: the gate
    /// word, or the sample-rate bits) plus the byte offset of the lane; the argument string
    /// holds register operands.
    macro_rules! sdt_asm {
        ($name:expr, $args:expr, $sema_off:expr) => {
            concat!(
                "990: .byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n", // nop5: nopl 0x0(%rax,%rax,1)
                ".pushsection .note.stapsdt, \"?\", \"note\"\n",
                ".balign 4\n",
                ".4byte 992f-991f, 994f-993f, 3\n", // namesz, descsz, type 3 (NT_STAPSDT)
                "991: .asciz \"stapsdt\"\n",
                "992: .balign 4\n",
                "993: .8byte 990b\n", // pc
                ".8byte _.stapsdt.base\n",
                ".8byte {semaphore}+", $sema_off, "\n",
                ".asciz \"tokio\"\n",
                ".asciz \"", $name, "\"\n",
                ".asciz \"", $args, "\"\n",
                "994: .balign 4\n",
                ".popsection\n",
                ".ifndef _.stapsdt.base\n",
                // "R" (SHF_GNU_RETAIN): only the non-alloc note refers to the anchor, and Rust
                // links with --gc-sections, which would drop it and leave Base 0 in the notes.
                ".pushsection .stapsdt.base, \"aGR\", \"progbits\", .stapsdt.base, comdat\n",
                ".weak _.stapsdt.base\n",
                ".hidden _.stapsdt.base\n",
                "_.stapsdt.base: .space 1\n",
                ".size _.stapsdt.base, 1\n",
                ".popsection\n",
                ".endif\n",
            )
        };
    }

    /// Defines module `$name` with the probe's gate (`gate()`: its word; with `in_poll`, its
    /// word and, in batched capture alone, a recorded poll open on the thread), its own
    /// semaphore (`enabled()`: its lane) and the cold `emit()` holding the probe site. `$args`
    /// is the SDT argument string over the named operands.
    macro_rules! sdt_probe {
        ($name:ident, word $word:ident $gate:ident, lane $lane:literal, sema $off:literal, in_poll,
         $($rest:tt)*) => {
            sdt_probe!(@def $name, $word, $gate, $lane, $off,
                       { super::in_poll_gate(super::$word, $lane) }, $($rest)*);
        };
        ($name:ident, word $word:ident $gate:ident, lane $lane:literal, sema $off:literal,
         $($rest:tt)*) => {
            sdt_probe!(@def $name, $word, $gate, $lane, $off, { super::gate_word(super::$word) },
                       $($rest)*);
        };
        (@def $name:ident, $word:ident, $gate:ident, $lane:literal, $off:literal, $open:block,
         $args:literal, $($arg:ident: $ty:ty => $class:ident),* $(,)?) => {
            pub(crate) mod $name {
                /// Open while this probe, or anything sharing its gate word, is traced
                /// (`in_poll`: see in_poll_gate).
                #[inline(always)]
                pub(crate) fn gate() -> bool {
                    $open
                }

                /// Non-zero while a tracer is attached to this probe.
                #[inline(always)]
                pub(crate) fn enabled() -> bool {
                    super::lane(super::$word, $lane)
                }

                #[cold]
                #[inline(never)]
                pub(crate) fn emit($($arg: $ty),*) {
                    // Safety: the template is a nop plus data in other sections.
                    unsafe {
                        ::core::arch::asm!(
                            sdt_asm!(stringify!($name), $args, $off),
                            $($arg = in($class) $arg,)*
                            semaphore = sym super::$gate,
                            options(att_syntax),
                        );
                    }
                }
            }
        };
    }

    sdt_probe!(task_spawn, word W_TASK GATE_TASK, lane 1, sema "2",
        "8@{id} 8@{header} 1@{kind} 8@{file} 8@{file_len} 4@{line:e} 4@{col:e} 8@{type_name} 8@{type_name_len}",
        id: u64 => reg, header: u64 => reg, kind: u8 => reg_byte, file: u64 => reg,
        file_len: u64 => reg, line: u32 => reg, col: u32 => reg, type_name: u64 => reg,
        type_name_len: u64 => reg);
    sdt_probe!(task_poll_begin, word W_POLL GATE_POLL, lane 1, sema "2", "8@{id} 8@{header} -4@{worker:e}",
        id: u64 => reg, header: u64 => reg, worker: i32 => reg);
    sdt_probe!(task_poll_end, word W_POLL GATE_POLL, lane 2, sema "4", "8@{id} 8@{header} 1@{result}",
        id: u64 => reg, header: u64 => reg, result: u8 => reg_byte);
    sdt_probe!(task_yielded, word W_POLL GATE_POLL, lane 3, sema "6", "8@{id} 1@{reason}",
        id: u64 => reg, reason: u8 => reg_byte);
    sdt_probe!(waker_wake, word W_WAKER GATE_WAKER, lane 1, sema "2", "8@{id} 8@{header} 1@{by_ref}",
        id: u64 => reg, header: u64 => reg, by_ref: u8 => reg_byte);
    sdt_probe!(waker_clone, word W_WAKER GATE_WAKER, lane 2, sema "4", "8@{id} 8@{header}",
        id: u64 => reg, header: u64 => reg);
    sdt_probe!(waker_drop, word W_WAKER GATE_WAKER, lane 3, sema "6", "8@{id} 8@{header}",
        id: u64 => reg, header: u64 => reg);
    sdt_probe!(task_terminate, word W_TASK GATE_TASK, lane 2, sema "4", "8@{id} 8@{header} 1@{reason}",
        id: u64 => reg, header: u64 => reg, reason: u8 => reg_byte);
    sdt_probe!(worker_park, word W_WORKER GATE_WORKER, lane 1, sema "2", "-4@{worker:e} 8@{timeout_ns}",
        worker: i32 => reg, timeout_ns: u64 => reg);
    sdt_probe!(worker_unpark, word W_WORKER GATE_WORKER, lane 2, sema "4", "-4@{worker:e} 8@{timeout_ns}",
        worker: i32 => reg, timeout_ns: u64 => reg);
    sdt_probe!(task_wait, word W_TASK GATE_TASK, lane 3, sema "6", in_poll,
        "8@{id} 1@{kind} 8@{object} 8@{arg}",
        id: u64 => reg, kind: u8 => reg_byte, object: u64 => reg, arg: u64 => reg);
    // task_lock shares task_wait's lane (its word is full): a tracer of either gets both
    sdt_probe!(task_lock, word W_TASK GATE_TASK, lane 3, sema "6", in_poll,
        "8@{id} 1@{op} 8@{object} 8@{permits}",
        id: u64 => reg, op: u8 => reg_byte, object: u64 => reg, permits: u64 => reg);
    sdt_probe!(task_meta, word W_WORKER GATE_WORKER, lane 3, sema "6",
        "8@{id} 8@{name} 8@{name_len} 8@{size} 1@{flags}",
        id: u64 => reg, name: u64 => reg, name_len: u64 => reg, size: u64 => reg,
        flags: u8 => reg_byte);

    /// One site of `event_batch`, whose semaphore is the batch lane of gate word `$word`. The
    /// arguments sit in fixed registers (the SysV argument registers), so a tracer may read
    /// them without an argument-spec table: buffer address, bytes of records, batch sequence
    /// number, flush time on the batch clock, flush time in CLOCK_MONOTONIC ns.
    macro_rules! batch_site {
        ($name:ident, $gate:ident) => {
            mod $name {
                #[cold]
                #[inline(never)]
                pub(super) fn emit(buf: u64, len: u64, seq: u64, clock: u64, mono_ns: u64) {
                    // Safety: the template is a nop plus data in other sections.
                    unsafe {
                        ::core::arch::asm!(
                            sdt_asm!("event_batch", "8@%rdi 8@%rsi 8@%rdx 8@%rcx 8@%r8", "0"),
                            in("rdi") buf, in("rsi") len, in("rdx") seq, in("rcx") clock,
                            in("r8") mono_ns,
                            semaphore = sym super::$gate,
                            options(att_syntax),
                        );
                    }
                }
            }
        };
    }

    batch_site!(event_batch_0, GATE_POLL);
    batch_site!(event_batch_1, GATE_WAKER);
    batch_site!(event_batch_2, GATE_TASK);
    batch_site!(event_batch_3, GATE_WORKER);

    /// The 16 `sample_rate` sites: never executed; a tracer attaches to the sites of the bits
    /// it sets, so their lanes spell the rate (PROBES.md). Kept alive by a reference from
    /// `refresh_sampling`.
    #[cold]
    #[inline(never)]
    fn sample_rate_sites() {
        // Safety: nops and notes; never called.
        unsafe {
            ::core::arch::asm!(
                sdt_asm!("sample_rate", "", "0"), sdt_asm!("sample_rate", "", "2"),
                sdt_asm!("sample_rate", "", "4"), sdt_asm!("sample_rate", "", "6"),
                sdt_asm!("sample_rate", "", "8"), sdt_asm!("sample_rate", "", "10"),
                sdt_asm!("sample_rate", "", "12"), sdt_asm!("sample_rate", "", "14"),
                sdt_asm!("sample_rate", "", "16"), sdt_asm!("sample_rate", "", "18"),
                sdt_asm!("sample_rate", "", "20"), sdt_asm!("sample_rate", "", "22"),
                sdt_asm!("sample_rate", "", "24"), sdt_asm!("sample_rate", "", "26"),
                sdt_asm!("sample_rate", "", "28"), sdt_asm!("sample_rate", "", "30"),
                semaphore = sym SAMPLE_BITS,
                options(att_syntax),
            );
        }
    }

    /// `probe!(event_batch => f())`: batched capture is on (any of its sites is traced).
    pub(crate) mod event_batch {
        #[inline(always)]
        pub(crate) fn gate() -> bool {
            super::batch_on(super::W_POLL) || super::batch_on(super::W_WAKER)
                || super::batch_on(super::W_TASK) || super::batch_on(super::W_WORKER)
        }
    }

    // ===== codes (PROBES.md) =====

    pub(crate) const SPAWN: u8 = 0;
    pub(crate) const SPAWN_LOCAL: u8 = 1;
    pub(crate) const SPAWN_BLOCKING: u8 = 2;

    const POLL_PENDING: u8 = 0;
    const POLL_READY: u8 = 1;
    const POLL_NOTIFIED: u8 = 2;
    const POLL_CANCELLED: u8 = 3;
    const POLL_PANICKED: u8 = 4;

    pub(crate) const YIELD_NOW: u8 = 0;
    pub(crate) const YIELD_BUDGET: u8 = 1;
    pub(crate) const YIELD_NOTIFIED: u8 = 2;

    const END_COMPLETED: u8 = 0;
    const END_CANCELLED: u8 = 1;
    const END_PANICKED: u8 = 2;

    // wait kinds (`task_wait.kind`); a Tokio line may lack a resource, hence the allows
    #[allow(dead_code)]
    pub(crate) const WAIT_TIMER: u8 = 0;
    #[allow(dead_code)]
    pub(crate) const WAIT_IO: u8 = 1;
    #[allow(dead_code)]
    pub(crate) const WAIT_NOTIFY: u8 = 2;
    #[allow(dead_code)]
    pub(crate) const WAIT_SEMAPHORE: u8 = 3;
    #[allow(dead_code)]
    pub(crate) const WAIT_MPSC_RECV: u8 = 4;
    #[allow(dead_code)]
    pub(crate) const WAIT_ONESHOT_RECV: u8 = 5;
    #[allow(dead_code)]
    pub(crate) const WAIT_JOIN: u8 = 6;
    #[allow(dead_code)]
    pub(crate) const WAIT_BROADCAST_RECV: u8 = 7;

    // lock ops (`task_lock.op`): permits of a batch semaphore taken as a primitive, given back
    #[allow(dead_code)]
    pub(crate) const LOCK_MUTEX: u8 = 0;
    #[allow(dead_code)]
    pub(crate) const LOCK_RWLOCK_READ: u8 = 1;
    #[allow(dead_code)]
    pub(crate) const LOCK_RWLOCK_WRITE: u8 = 2;
    #[allow(dead_code)]
    pub(crate) const LOCK_SEMAPHORE: u8 = 3;
    #[allow(dead_code)]
    pub(crate) const LOCK_RELEASE: u8 = 4;
    #[allow(dead_code)]
    pub(crate) const LOCK_FORGET: u8 = 5;

    // I/O directions (`task_wait.arg` of WAIT_IO)
    #[allow(dead_code)]
    pub(crate) const IO_READ: u64 = 1;
    #[allow(dead_code)]
    pub(crate) const IO_WRITE: u64 = 2;
    #[allow(dead_code)]
    pub(crate) const IO_OTHER: u64 = 4;

    // meta flags (`task_meta.flags`)
    pub(crate) const META_BOXED: u8 = 1;
    pub(crate) const META_NAMED: u8 = 2;

    // ===== thread state =====

    thread_local! {
        /// The index of the worker this thread runs, -1 when it runs none.
        static WORKER: Cell<i32> = const { Cell::new(-1) };
        /// Where the task about to be bound was spawned: (task id, location).
        static SPAWNED_AT: Cell<(u64, Option<&'static Location<'static>>)> =
            const { Cell::new((0, None)) };
    }

    fn worker() -> i32 {
        WORKER.try_with(Cell::get).unwrap_or(-1)
    }

    /// Marks the current thread as running worker `index` until the guard drops.
    pub(crate) fn worker_thread(index: usize) -> WorkerGuard {
        let prev = WORKER.try_with(|w| w.replace(index as i32)).unwrap_or(-1);
        WorkerGuard(prev)
    }

    pub(crate) struct WorkerGuard(i32);

    impl Drop for WorkerGuard {
        #[inline(never)]
        fn drop(&mut self) {
            let _ = WORKER.try_with(|w| w.set(self.0));
            // The worker leaves the runtime: what it recorded goes out before the runtime's
            // shutdown lets the process exit.
            if event_batch::gate() {
                thread_end();
            }
        }
    }

    // Spawn locations, for Tokio versions whose path from the `#[track_caller]` spawn
    // functions to `bind` goes through closures (which end `#[track_caller]`) and does not carry
    // the location itself: the spawn path records the caller here, `bind` takes it back by id.
    // Unused where Tokio threads the location down to `bind` itself (1.53: `SpawnLocation`).

    /// `SPAWNED_AT` id of a location captured before the task id is known.
    const PENDING: u64 = u64::MAX;

    /// Remembers the caller's location for the task `id` about to be bound on this thread,
    /// unless an enclosing `spawn_scope` captured the location already.
    #[allow(dead_code)]
    #[track_caller]
    pub(crate) fn record_spawn_location(id: Id) {
        let at = Location::caller();
        let _ = SPAWNED_AT.try_with(|s| match s.get() {
            (PENDING, Some(outer)) => s.set((id.as_u64(), Some(outer))),
            _ => s.set((id.as_u64(), Some(at))),
        });
    }

    /// Captures the caller's location for the spawn that follows on this thread, for spawn
    /// functions that reach `record_spawn_location` only through a closure.
    #[allow(dead_code)]
    #[track_caller]
    pub(crate) fn spawn_scope() -> SpawnScope {
        let traced = task_spawn::gate();
        if traced {
            let at = Location::caller();
            let _ = SPAWNED_AT.try_with(|s| s.set((PENDING, Some(at))));
        }
        SpawnScope(traced)
    }

    pub(crate) struct SpawnScope(bool);

    impl Drop for SpawnScope {
        fn drop(&mut self) {
            if self.0 {
                let _ = SPAWNED_AT.try_with(|s| s.set((0, None)));
            }
        }
    }

    /// The location recorded for task `id`, if any.
    #[allow(dead_code)]
    pub(crate) fn spawn_location(id: Id) -> Option<&'static Location<'static>> {
        match SPAWNED_AT.try_with(|s| s.replace((0, None))) {
            Ok((recorded, at)) if recorded == id.as_u64() => at,
            _ => None,
        }
    }

    // ===== probes with Tokio's types =====

    /// Reads one byte of every page `s` spans. The strings sit in `.rodata` pages the process
    /// may never have touched; a tracer reads them from the uprobe handler, where the kernel
    /// cannot fault pages in (`bpf_probe_read_user` fails on them). Only runs while traced.
    #[inline(always)]
    fn touch_pages(s: &str) {
        const PAGE: usize = 4096;
        let (start, len) = (s.as_ptr() as usize, s.len());
        if len == 0 {
            return;
        }
        let mut at = start;
        while at < start + len {
            // Safety: `at` lies inside `s`.
            unsafe { core::ptr::read_volatile(at as *const u8) };
            at = (at & !(PAGE - 1)) + PAGE;
        }
        // Safety: the last byte of `s`.
        unsafe { core::ptr::read_volatile((start + len - 1) as *const u8) };
    }

    fn addr(header: NonNull<Header>) -> u64 {
        header.as_ptr() as usize as u64
    }

    #[inline(never)]
    pub(crate) fn task_spawn<T: ?Sized, S: 'static>(
        task: &Task<S>,
        id: Id,
        kind: u8,
        at: Option<&'static Location<'static>>,
    ) {
        let (file, line, col) = at.map_or(("", 0, 0), |l| (l.file(), l.line(), l.column()));
        let type_name = std::any::type_name::<T>();
        let header = addr(task.header_ptr());
        if task_spawn::enabled() {
            touch_pages(file);
            touch_pages(type_name);
            task_spawn::emit(
                id.as_u64(),
                header,
                kind,
                file.as_ptr() as usize as u64,
                file.len() as u64,
                line,
                col,
                type_name.as_ptr() as usize as u64,
                type_name.len() as u64,
            );
        }
        if batch_on(W_TASK) {
            count(EV_SPAWN);
            if sampled(id.as_u64()) {
                record_spawn(id.as_u64(), header, kind, file, line, col, type_name);
            }
        }
    }

    const END_EVENT: u64 = 1 << 56; // fire task_poll_end
    const RECORDED: u64 = 2 << 56; // write a poll record at the end (its begin is on the
                                   // thread's open-poll stack)
    const ADDR: u64 = (1 << 56) - 1;

    /// What the end of a poll needs once the task may be gone: two words, so it travels in
    /// registers and costs nothing untraced. `tag`: the header address and the flags above,
    /// 0 when the poll is not traced.
    #[derive(Clone, Copy)]
    pub(crate) struct Polled {
        id: u64,
        tag: u64,
    }

    impl Polled {
        #[inline(always)]
        pub(crate) fn traced(&self) -> bool {
            self.tag != 0
        }
    }

    /// Fires `task_poll_begin`, opens the poll's record, and saves what the end will need.
    /// Batched capture alone: counted inline, and a task the rate leaves out costs nothing more.
    #[inline(always)]
    pub(crate) fn task_poll_begin(id: &Id, header: NonNull<Header>) -> Polled {
        if !task_poll_begin::gate() {
            return Polled { id: 0, tag: 0 };
        }
        if batch_only(W_POLL) {
            count(EV_POLL_BEGIN);
            if !sampled(id.as_u64()) {
                return Polled { id: 0, tag: 0 };
            }
            return poll_open(id.as_u64(), addr(header));
        }
        poll_begin(id.as_u64(), addr(header))
    }

    /// Opens a sampled task's poll record on this thread's open-poll stack; false when the
    /// poll is not recorded (no buffer; a poll nested deeper than OPEN_MAX is counted, not
    /// recorded).
    #[inline(always)]
    fn open_poll(id: u64) -> bool {
        if let Some(b) = buf() {
            let d = b.head.depth.load(Relaxed) as usize;
            if d < OPEN_MAX {
                let begin = b.stamp(W_POLL);
                b.head.open[d] = Open { id, begin, yields: 0 };
                b.head.depth.store(d as u8 + 1, Release);
                return true;
            }
        }
        false
    }

    /// The batched-only path of a recorded task (counted by the caller).
    #[inline(never)]
    fn poll_open(id: u64, header: u64) -> Polled {
        if open_poll(id) {
            Polled { id, tag: header & ADDR | RECORDED }
        } else {
            Polled { id: 0, tag: 0 }
        }
    }

    /// Any mix of per-event probes and batched capture.
    #[inline(never)]
    fn poll_begin(id: u64, header: u64) -> Polled {
        let mut how = 0;
        if task_poll_begin::enabled() {
            task_poll_begin::emit(id, header, worker());
        }
        if task_poll_end::enabled() {
            how |= END_EVENT;
        }
        if batch_on(W_POLL) {
            count(EV_POLL_BEGIN);
            if sampled(id) && open_poll(id) {
                how |= RECORDED;
            }
        }
        if how == 0 {
            return Polled { id: 0, tag: 0 };
        }
        Polled { id, tag: header & ADDR | how }
    }

    #[inline(always)]
    pub(crate) fn task_poll_end(polled: Polled, result: u8) {
        poll_end(polled, result)
    }

    /// At both ends of a poll the per-event probe fires before the batched stamp: with both
    /// captures attached (a test compares them), each clock brackets the poll the same way.
    #[inline(never)]
    fn poll_end(p: Polled, result: u8) {
        if p.tag & END_EVENT != 0 && task_poll_end::enabled() {
            task_poll_end::emit(p.id, p.tag & ADDR, result);
        }
        if p.tag & RECORDED != 0 {
            if let Some(b) = buf() {
                // the end stamp comes first; everything else is outside the measured poll
                let end = b.stamp_in_place();
                let d = (b.head.depth.load(Relaxed) as usize).saturating_sub(1);
                let open = b.head.open[d];
                b.head.depth.store(d as u8, Release);
                if open.id != p.id {
                    return; // cannot happen: polls nest
                }
                b.put(
                    [word0(R_POLL, result, p.id), open.begin, end,
                     u64::from(worker() as u32) | open.yields << 32],
                    W_POLL,
                );
                count(EV_POLL_END);
                if result == POLL_NOTIFIED {
                    count(EV_YIELD);
                }
                b.soft_flush(end, W_POLL);
            }
        }
    }

    /// The end of a task's future, read from its stage (the caller holds the RUNNING bit).
    fn outcome<T: Future, S>(core: &Core<T, S>) -> u8 {
        core.stage.with_mut(|stage| {
            // Safety: the caller has exclusive access to the stage.
            match unsafe { &*stage } {
                Stage::Finished(Err(e)) if e.is_panic() => END_PANICKED,
                Stage::Finished(Err(_)) => END_CANCELLED,
                _ => END_COMPLETED,
            }
        })
    }

    /// Poll result when the poll returned `Ready` (the output is stored).
    pub(in crate::runtime::task) fn ready_result<T: Future, S>(core: &Core<T, S>) -> u8 {
        if outcome(core) == END_PANICKED {
            POLL_PANICKED
        } else {
            POLL_READY
        }
    }

    /// Poll result when the poll returned `Pending`, from the transition that followed it.
    pub(in crate::runtime::task) fn idle_result(transition: &TransitionToIdle) -> u8 {
        match transition {
            TransitionToIdle::OkNotified => POLL_NOTIFIED,
            TransitionToIdle::Cancelled => POLL_CANCELLED,
            TransitionToIdle::Ok | TransitionToIdle::OkDealloc => POLL_PENDING,
        }
    }

    #[inline(always)]
    pub(crate) fn task_yielded(id: Option<Id>, reason: u8) {
        if batch_only(W_POLL) {
            if let Some(id) = id {
                if reason != YIELD_NOTIFIED && sampled(id.as_u64()) {
                    record_yield(id.as_u64(), reason);
                }
            }
            return;
        }
        task_yielded_any(id, reason)
    }

    #[inline(never)]
    fn task_yielded_any(id: Option<Id>, reason: u8) {
        if let Some(id) = id {
            if task_yielded::enabled() {
                task_yielded::emit(id.as_u64(), reason);
            }
            // reason 2 (notified) is the poll record's result 2: no record of its own
            if reason != YIELD_NOTIFIED && batch_on(W_POLL) && sampled(id.as_u64()) {
                record_yield(id.as_u64(), reason);
            }
        }
    }

    #[inline(always)]
    pub(crate) fn waker_wake(id: Id, header: NonNull<Header>, by_ref: u8) {
        if batch_only(W_WAKER) {
            count(EV_WAKE);
            if sampled(id.as_u64()) {
                record_wake(id.as_u64(), by_ref);
            }
            return;
        }
        waker_wake_any(id, header, by_ref)
    }

    #[inline(never)]
    fn waker_wake_any(id: Id, header: NonNull<Header>, by_ref: u8) {
        if waker_wake::enabled() {
            waker_wake::emit(id.as_u64(), addr(header), by_ref);
        }
        if batch_on(W_WAKER) {
            count(EV_WAKE);
            if sampled(id.as_u64()) {
                record_wake(id.as_u64(), by_ref);
            }
        }
    }

    #[inline(always)]
    pub(crate) fn waker_clone(id: Id, header: NonNull<Header>) {
        if batch_only(W_WAKER) {
            if sampled(id.as_u64()) {
                record_waker(id.as_u64(), R_CLONE, EV_WAKER_CLONE);
            }
            return;
        }
        waker_clone_any(id, header)
    }

    #[inline(never)]
    fn waker_clone_any(id: Id, header: NonNull<Header>) {
        if waker_clone::enabled() {
            waker_clone::emit(id.as_u64(), addr(header));
        }
        if batch_on(W_WAKER) && sampled(id.as_u64()) {
            record_waker(id.as_u64(), R_CLONE, EV_WAKER_CLONE);
        }
    }

    #[inline(always)]
    pub(crate) fn waker_drop(id: Id, header: NonNull<Header>) {
        if batch_only(W_WAKER) {
            if sampled(id.as_u64()) {
                record_waker(id.as_u64(), R_DROP, EV_WAKER_DROP);
            }
            return;
        }
        waker_drop_any(id, header)
    }

    #[inline(never)]
    fn waker_drop_any(id: Id, header: NonNull<Header>) {
        if waker_drop::enabled() {
            waker_drop::emit(id.as_u64(), addr(header));
        }
        if batch_on(W_WAKER) && sampled(id.as_u64()) {
            record_waker(id.as_u64(), R_DROP, EV_WAKER_DROP);
        }
    }

    #[inline(never)]
    pub(in crate::runtime::task) fn task_terminate<T: Future, S>(header: NonNull<Header>, core: &Core<T, S>) {
        let reason = outcome(core);
        if task_terminate::enabled() {
            task_terminate::emit(core.task_id.as_u64(), addr(header), reason);
        }
        if batch_on(W_TASK) {
            count(EV_TERMINATE);
            if sampled(core.task_id.as_u64()) {
                record_terminate(core.task_id.as_u64(), addr(header), reason);
            }
        }
    }

    /// A resource stored the polled task's waker and returns `Pending` (PROBES.md, wait
    /// kind). `probe!(task_wait(kind, object, arg))`: the arguments are computed only while
    /// gate word 2 is open. The task is the one being polled on this thread (0: none, as in
    /// `block_on`).
    #[inline(never)]
    pub(crate) fn task_wait(kind: u8, object: u64, arg: u64) {
        let id = crate::runtime::context::current_task_id().map_or(0, |id| id.as_u64());
        if task_wait::enabled() {
            task_wait::emit(id, kind, object, arg);
        }
        if id != 0 && batch_on(W_TASK) && sampled(id) {
            record_in_poll(R_WAIT, id, kind, object, arg);
        }
    }

    /// Permits of a batch semaphore were taken as a primitive (`op` LOCK_MUTEX …
    /// LOCK_SEMAPHORE, after the acquire succeeded), given back (LOCK_RELEASE, in
    /// `batch_semaphore::Semaphore::release`: every guard's and permit's drop, `add_permits`,
    /// a bounded mpsc receive), or forgotten (LOCK_FORGET). PROBES.md, `task_lock`. The object
    /// is the batch semaphore's address, the one `task_wait` kind 3 names.
    #[inline(never)]
    pub(crate) fn task_lock(op: u8, object: u64, permits: u64) {
        let id = crate::runtime::context::current_task_id().map_or(0, |id| id.as_u64());
        if task_lock::enabled() {
            task_lock::emit(id, op, object, permits);
        }
        if id != 0 && batch_on(W_TASK) && sampled(id) {
            record_in_poll(R_LOCK, id, op, object, permits);
        }
    }

    /// `task_wait.object` of a resource: its address.
    #[inline(always)]
    pub(crate) fn object<T: ?Sized>(resource: &T) -> u64 {
        resource as *const T as *const () as usize as u64
    }

    /// `task_wait.arg` of an I/O wait: the directions the task waits for.
    #[inline(always)]
    #[allow(dead_code)]
    pub(crate) fn io_dir(read: bool, write: bool, other: bool) -> u64 {
        (if read { IO_READ } else { 0 }) | (if write { IO_WRITE } else { 0 })
            | (if other { IO_OTHER } else { 0 })
    }

    /// What the spawn path knows of a task's future: its size as the caller passed it, its
    /// name, whether Tokio boxed it. `probe!(task_meta(id, name, size, boxed))` right after
    /// the task's `task_spawn`. The name is borrowed: read during the probe, copied into the
    /// batch, never kept.
    #[inline(never)]
    pub(crate) fn task_meta(id: Id, name: Option<&str>, size: usize, boxed: bool) {
        let flags = if boxed { META_BOXED } else { 0 } | if name.is_some() { META_NAMED } else { 0 };
        let (name_ptr, name) = name.map_or((0, ""), |s| (s.as_ptr() as usize as u64, s));
        if task_meta::enabled() {
            touch_pages(name);
            task_meta::emit(id.as_u64(), name_ptr, name.len() as u64, size as u64, flags);
        }
        if batch_on(W_WORKER) && sampled(id.as_u64()) {
            record_meta(id.as_u64(), flags, size as u64, name);
        }
    }

    fn timeout_ns(timeout: Option<Duration>) -> u64 {
        timeout.map_or(u64::MAX, |d| d.as_nanos().min(u64::MAX as u128 - 1) as u64)
    }

    #[inline(never)]
    pub(crate) fn worker_park(worker: usize, timeout: Option<Duration>) {
        if worker_park::enabled() {
            worker_park::emit(worker as i32, timeout_ns(timeout));
        }
        if batch_on(W_WORKER) {
            record_park(R_PARK, EV_PARK, worker as i32, timeout_ns(timeout));
        }
    }

    #[inline(never)]
    pub(crate) fn worker_unpark(worker: usize, timeout: Option<Duration>) {
        if worker_unpark::enabled() {
            worker_unpark::emit(worker as i32, timeout_ns(timeout));
        }
        if batch_on(W_WORKER) {
            record_park(R_UNPARK, EV_UNPARK, worker as i32, timeout_ns(timeout));
        }
    }

    /// `probe!(let _burst = wake_burst())` at the top of the scheduler's deferred-wake loop:
    /// the wakes it issues back to back share one stamp (taken at the first of them).
    #[inline(always)]
    pub(crate) fn wake_burst() -> WakeBurst {
        if waker_wake::gate() && batch_on(W_WAKER) {
            burst_open()
        } else {
            WakeBurst(false)
        }
    }

    pub(crate) struct WakeBurst(bool);

    impl Drop for WakeBurst {
        fn drop(&mut self) {
            if self.0 {
                burst_close();
            }
        }
    }

    /// `probe!(event_batch => thread_end())` where a thread leaves the runtime for good (a
    /// blocking-pool thread at the end of its loop): flush what it holds now, since the
    /// process may exit before the thread's own destructors run.
    #[cold]
    #[inline(never)]
    pub(crate) fn thread_end() {
        if let Some(b) = buf_existing() {
            if b.has_data() {
                b.flush(W_TASK, REASON_LEAVE);
            }
        }
    }

    // ===== batched capture: the recorder =====
    //
    // Each thread that records owns a ThreadBuf (allocated at its first record while batched
    // capture is on, freed when the thread exits). Its head is read by the tracer, copied at
    // every flush and read in place by a "sweep" (/proc/PID/mem) when the thread has not
    // flushed for a while: PROBES.md, "Batch format", is the contract. Records are u64 words;
    // word 0 is the task id (56 bits), the record kind (4 bits) and a code (4 bits).

    const MAGIC: u32 = 0x3142_4b54; // "TKB1"
    const VERSION: u16 = 1;
    const DATA_BYTES: usize = 32 * 1024;
    const DATA_WORDS: usize = DATA_BYTES / 8;
    /// Past this many bytes, a flush point that is not inside a poll flushes.
    const SOFT_FULL: usize = DATA_BYTES * 3 / 4;
    const OPEN_MAX: usize = 8;
    const STRING_SLOTS: usize = 64;
    const STRING_MAX: usize = 256;
    const META_NAME_MAX: usize = 128;

    const CLOCK_TSC: u8 = 1;
    const CLOCK_MONO: u8 = 2;

    const REASON_NEW: u8 = 0; // the thread's first batch (no records): here is my buffer
    const REASON_FULL: u8 = 1;
    const REASON_PARK: u8 = 2; // a worker is about to sleep
    const REASON_AGE: u8 = 3; // the batch is older than the flush interval
    const REASON_STALE: u8 = 4; // records left from before a long pause (an earlier capture?)
    const REASON_LEAVE: u8 = 5; // the thread leaves the runtime (may record again)
    const REASON_EXIT: u8 = 6; // the thread exits: its buffer is freed after this batch

    // record kinds (bits 56-59 of word 0)
    const R_POLL: u64 = 1;
    const R_WAKE: u64 = 2;
    const R_CLONE: u64 = 3;
    const R_DROP: u64 = 4;
    const R_SPAWN: u64 = 5;
    const R_TERMINATE: u64 = 6;
    const R_PARK: u64 = 7;
    const R_UNPARK: u64 = 8;
    const R_STRING: u64 = 9;
    const R_WAIT: u64 = 10;
    const R_META: u64 = 11;
    const R_LOCK: u64 = 12;

    // counts[] index: the per-event probes, in PROBES.md order
    const EV_SPAWN: usize = 0;
    const EV_POLL_BEGIN: usize = 1;
    const EV_POLL_END: usize = 2;
    const EV_YIELD: usize = 3;
    const EV_WAKE: usize = 4;
    const EV_WAKER_CLONE: usize = 5;
    const EV_WAKER_DROP: usize = 6;
    const EV_TERMINATE: usize = 7;
    const EV_PARK: usize = 8;
    const EV_UNPARK: usize = 9;

    #[inline(always)]
    fn word0(kind: u64, code: u8, payload: u64) -> u64 {
        payload & ((1 << 56) - 1) | kind << 56 | u64::from(code & 0xf) << 60
    }

    /// A poll in progress: the tracer can see it before it ends.
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Open {
        id: u64,
        begin: u64,
        /// yield_now count (bits 0-15), coop-budget yields (bits 16-31)
        yields: u64,
    }

    #[repr(C)]
    struct Head {
        magic: u32,
        version: u16,
        head_bytes: u16,
        data_cap: u32,
        tid: u32,
        /// Batches flushed so far: the records in `data` form batch `seq`.
        seq: AtomicU64,
        /// Bytes of records in `data`.
        len: AtomicU32,
        clock: u8,
        reason: u8,
        depth: AtomicU8,
        open_max: u8,
        flush_clock: u64,
        flush_ns: u64,
        /// Clock of the previous flush: this batch's records and counts are from after it.
        window_clock: u64,
        /// The thread's latest stamp.
        last_clock: u64,
        /// Events of this batch's window by probe (COUNTS, copied at the flush).
        counts: [u64; 10],
        /// Sampling: one task in `rate`.
        rate: u64,
        open: [Open; OPEN_MAX],
    }

    const HEAD_BYTES: usize = 344;
    const _: () = assert!(std::mem::size_of::<Head>() == HEAD_BYTES);

    #[repr(C)]
    struct ThreadBuf {
        head: Head,
        data: [u64; DATA_WORDS],
        // private to the thread, not copied
        strings: [u64; STRING_SLOTS],
        burst: u64,
        in_burst: bool,
        /// Bytes of park and unpark records in `data`: the batch holds task records when `len`
        /// is more (record_park's flush rule).
        worker_bytes: u32,
    }

    thread_local! {
        /// Events of the thread's current batch window, by probe (counts[] order): every task
        /// for spawns, poll begins, wakes, terminations, parks and unparks (the exact totals of a
        /// sampled capture), the sampled tasks' for the others. Kept out of the buffer so a task
        /// that is not sampled costs one thread-local increment; copied into the head at a flush.
        static COUNTS: [Cell<u64>; 10] = const {
            [Cell::new(0), Cell::new(0), Cell::new(0), Cell::new(0), Cell::new(0),
             Cell::new(0), Cell::new(0), Cell::new(0), Cell::new(0), Cell::new(0)]
        };
        /// This thread's buffer: null before its first record, DEAD after its destructor.
        static BUF: Cell<*mut ThreadBuf> = const { Cell::new(ptr::null_mut()) };
        /// Flushes and frees BUF when the thread exits.
        static BUF_OWNER: BufOwner = const { BufOwner };
    }

    const DEAD: *mut ThreadBuf = 1 as *mut ThreadBuf;

    #[inline(always)]
    fn count(ev: usize) {
        let _ = COUNTS.try_with(|c| c[ev].set(c[ev].get() + 1));
    }

    fn counts_pending() -> bool {
        COUNTS.try_with(|c| c.iter().any(|x| x.get() != 0)).unwrap_or(false)
    }

    struct BufOwner;

    impl Drop for BufOwner {
        fn drop(&mut self) {
            let p = BUF.try_with(|b| b.replace(DEAD)).unwrap_or(ptr::null_mut());
            if p as usize > DEAD as usize {
                // Safety: this thread's buffer, no other reference to it is live.
                let b = unsafe { &mut *p };
                if event_batch::gate() {
                    b.flush(W_TASK, REASON_EXIT);
                }
                b.head.magic = 0; // a sweep racing with the free sees no buffer here
                // Safety: allocated in buf_new with this layout.
                unsafe { std::alloc::dealloc(p as *mut u8, std::alloc::Layout::new::<ThreadBuf>()) };
            }
        }
    }

    /// This thread's buffer, created at the first record.
    #[inline(always)]
    fn buf() -> Option<&'static mut ThreadBuf> {
        let p = BUF.try_with(Cell::get).unwrap_or(DEAD);
        if p as usize > DEAD as usize {
            // Safety: owned by this thread; hooks do not re-enter each other.
            Some(unsafe { &mut *p })
        } else if p.is_null() {
            buf_new()
        } else {
            None
        }
    }

    /// A poll of a recorded task is in progress on this thread (its buffer's open-poll stack).
    #[inline(always)]
    fn recorded_poll_open() -> bool {
        let p = BUF.try_with(Cell::get).unwrap_or(DEAD);
        // Safety: as in buf().
        p as usize > DEAD as usize && unsafe { (*p).head.depth.load(Relaxed) } != 0
    }

    #[inline(always)]
    fn buf_existing() -> Option<&'static mut ThreadBuf> {
        let p = BUF.try_with(Cell::get).unwrap_or(DEAD);
        if p as usize > DEAD as usize {
            // Safety: as in buf().
            Some(unsafe { &mut *p })
        } else {
            None
        }
    }

    #[cold]
    #[inline(never)]
    fn buf_new() -> Option<&'static mut ThreadBuf> {
        // registers the destructor; fails while the thread's destructors run
        BUF_OWNER.try_with(|_| ()).ok()?;
        let layout = std::alloc::Layout::new::<ThreadBuf>();
        // Safety: a non-zero-sized layout; all-zero bytes are a valid ThreadBuf.
        let p = unsafe { std::alloc::alloc_zeroed(layout) } as *mut ThreadBuf;
        if p.is_null() {
            return None;
        }
        // Safety: just allocated, ours alone.
        let b = unsafe { &mut *p };
        b.head.magic = MAGIC;
        b.head.version = VERSION;
        b.head.head_bytes = HEAD_BYTES as u16;
        b.head.data_cap = DATA_BYTES as u32;
        b.head.tid = gettid();
        b.head.clock = clock_kind();
        b.head.open_max = OPEN_MAX as u8;
        b.head.rate = refresh_sampling();
        let now = now(b.head.clock);
        b.head.last_clock = now;
        b.head.window_clock = now;
        BUF.with(|c| c.set(p));
        // the tracer learns of this thread and its buffer from this first, empty batch
        b.flush(W_TASK, REASON_NEW);
        Some(b)
    }

    impl ThreadBuf {
        fn has_data(&self) -> bool {
            self.head.len.load(Relaxed) != 0 || counts_pending()
        }

        fn depth(&self) -> usize {
            self.head.depth.load(Relaxed) as usize
        }

        /// A timestamp for a new record. A pause longer than STALE since the previous stamp
        /// (an idle thread, or a capture that ended and a new one that began) first sends
        /// what the buffer holds as a batch of its own, then stamps again.
        #[inline(always)]
        fn stamp(&mut self, w: usize) -> u64 {
            let t = now(self.head.clock);
            if t.wrapping_sub(self.head.last_clock) > STALE.load(Relaxed) {
                return self.stale(w);
            }
            self.head.last_clock = t;
            t
        }

        /// A timestamp that must be the current time (a poll's end): no flush before it.
        #[inline(always)]
        fn stamp_in_place(&mut self) -> u64 {
            let t = now(self.head.clock);
            self.head.last_clock = t;
            t
        }

        #[cold]
        #[inline(never)]
        fn stale(&mut self, w: usize) -> u64 {
            if self.has_data() {
                self.flush(w, REASON_STALE);
            }
            // a new capture may not have seen the strings
            self.strings = [0; STRING_SLOTS];
            let t = now(self.head.clock);
            self.head.last_clock = t;
            t
        }

        /// Appends a record of N words (flushing first when it does not fit).
        #[inline(always)]
        fn put<const N: usize>(&mut self, words: [u64; N], w: usize) {
            let mut len = self.head.len.load(Relaxed) as usize;
            if len + N * 8 > DATA_BYTES {
                self.flush(w, REASON_FULL);
                len = 0;
            }
            // Safety: len + N * 8 <= DATA_BYTES.
            unsafe {
                ptr::copy_nonoverlapping(words.as_ptr(), self.data.as_mut_ptr().add(len / 8), N);
            }
            self.head.len.store((len + N * 8) as u32, Release);
        }

        /// Appends a record of N words followed by `bytes`, zero padded to a word (flushing
        /// first when it does not fit; a record is at most N + 32 words).
        #[inline(always)]
        fn put_bytes<const N: usize>(&mut self, words: [u64; N], bytes: &[u8], w: usize) {
            let total = N + (bytes.len() + 7) / 8;
            let mut len = self.head.len.load(Relaxed) as usize;
            if len + total * 8 > DATA_BYTES {
                self.flush(w, REASON_FULL);
                len = 0;
            }
            // Safety: the record fits (checked above: total * 8 is far below DATA_BYTES).
            unsafe {
                let d = self.data.as_mut_ptr().add(len / 8);
                ptr::copy_nonoverlapping(words.as_ptr(), d, N);
                if total > N {
                    *d.add(total - 1) = 0; // padding of the last word
                }
                ptr::copy_nonoverlapping(bytes.as_ptr(), d.add(N) as *mut u8, bytes.len());
            }
            self.head.len.store((len + total * 8) as u32, Release);
        }

        /// A flush point outside the task being polled: flush when the buffer is mostly full
        /// or its window older than the flush interval.
        #[inline(always)]
        fn soft_flush(&mut self, now: u64, w: usize) {
            if self.head.len.load(Relaxed) as usize > SOFT_FULL {
                self.flush(w, REASON_FULL);
            } else if now.wrapping_sub(self.head.window_clock) > AGE.load(Relaxed) {
                self.flush(w, REASON_AGE);
            }
        }

        /// Sends the batch through an `event_batch` site (the one of gate word `w` when it is
        /// traced, else any traced one) and starts the next.
        #[cold]
        #[inline(never)]
        fn flush(&mut self, w: usize, reason: u8) {
            let clock = now(self.head.clock);
            let ns = mono_ns();
            self.head.reason = reason;
            self.head.flush_clock = clock;
            self.head.flush_ns = ns;
            let counts = &mut self.head.counts;
            let _ = COUNTS.try_with(|c| {
                for (i, x) in c.iter().enumerate() {
                    counts[i] = x.replace(0);
                }
            });
            let seq = self.head.seq.load(Relaxed);
            let len = u64::from(self.head.len.load(Relaxed));
            let at = self as *mut ThreadBuf as u64;
            let site = if batch_on(w) { w } else { (0..4).find(|&s| batch_on(s)).unwrap_or(4) };
            match site {
                0 => event_batch_0::emit(at, len, seq, clock, ns),
                1 => event_batch_1::emit(at, len, seq, clock, ns),
                2 => event_batch_2::emit(at, len, seq, clock, ns),
                3 => event_batch_3::emit(at, len, seq, clock, ns),
                _ => {} // nobody listens any more
            }
            // seq first: a sweep that read the old len sees the change and drops its copy
            self.head.seq.store(seq + 1, Release);
            self.head.len.store(0, Release);
            self.worker_bytes = 0;
            self.head.counts = [0; 10];
            self.head.window_clock = clock;
            self.head.rate = refresh_sampling();
            calibrate(clock, ns, self.head.clock);
            if seq % 64 == 63 {
                // resend the strings now and then: a batch that carried one may have been lost
                self.strings = [0; STRING_SLOTS];
            }
        }

        /// Records a string (a spawn's file or type name) unless this thread sent it recently.
        fn string(&mut self, s: &'static str, w: usize) {
            let p = s.as_ptr() as u64;
            if s.is_empty() {
                return;
            }
            let slot = ((p >> 3) ^ (p >> 12)) as usize % STRING_SLOTS;
            if self.strings[slot] == p {
                return;
            }
            let n = s.len().min(STRING_MAX);
            self.put_bytes([word0(R_STRING, 0, n as u64), p], &s.as_bytes()[..n], w);
            self.strings[slot] = p;
        }
    }

    #[inline(never)]
    fn record_spawn(id: u64, header: u64, kind: u8, file: &'static str, line: u32, col: u32,
                    type_name: &'static str) {
        let b = match buf() {
            Some(b) => b,
            None => return,
        };
        let t = b.stamp(W_TASK);
        b.string(file, W_TASK);
        b.string(type_name, W_TASK);
        b.put(
            [word0(R_SPAWN, kind, id), header, t, file.as_ptr() as u64,
             file.len() as u64 & 0xffff_ffff | u64::from(line) << 32,
             type_name.as_ptr() as u64,
             type_name.len() as u64 & 0xffff_ffff | u64::from(col) << 32],
            W_TASK,
        );
        if b.depth() == 0 {
            b.soft_flush(t, W_TASK);
        }
    }

    /// A wait or lock record inside the task's recorded poll (the top of the open-poll
    /// stack); no stamp, no count: the poll record that follows places it.
    #[inline(never)]
    fn record_in_poll(rec: u64, id: u64, kind: u8, object: u64, arg: u64) {
        let b = match buf_existing() {
            Some(b) => b,
            None => return,
        };
        let d = b.depth();
        if d == 0 || d > OPEN_MAX || b.head.open[d - 1].id != id {
            return; // not inside a recorded poll of this task
        }
        b.put([word0(rec, kind, id), object, arg], W_TASK);
    }

    /// A spawned task's size, flags and name (the first META_NAME_MAX bytes, cut at a
    /// character boundary), after its spawn record.
    #[inline(never)]
    fn record_meta(id: u64, flags: u8, size: u64, name: &str) {
        let b = match buf() {
            Some(b) => b,
            None => return,
        };
        let mut n = name.len().min(META_NAME_MAX);
        while !name.is_char_boundary(n) {
            n -= 1;
        }
        b.put_bytes([word0(R_META, flags, id), size, n as u64], &name.as_bytes()[..n], W_WORKER);
    }

    #[inline(never)]
    fn record_terminate(id: u64, header: u64, reason: u8) {
        let b = match buf() {
            Some(b) => b,
            None => return,
        };
        let t = b.stamp(W_TASK);
        b.put([word0(R_TERMINATE, reason, id), header, t], W_TASK);
        if b.depth() == 0 {
            b.soft_flush(t, W_TASK);
        }
    }

    #[inline(never)]
    fn record_yield(id: u64, reason: u8) {
        let b = match buf_existing() {
            Some(b) => b,
            None => return,
        };
        let d = b.depth();
        if d == 0 || d > OPEN_MAX || b.head.open[d - 1].id != id {
            return; // not inside a recorded poll of this task
        }
        let shift = if reason == YIELD_NOW { 0 } else { 16 };
        let o = &mut b.head.open[d - 1];
        if (o.yields >> shift) & 0xffff != 0xffff {
            o.yields += 1 << shift;
        }
        count(EV_YIELD);
    }

    #[inline(never)]
    fn record_wake(id: u64, by_ref: u8) {
        let b = match buf() {
            Some(b) => b,
            None => return,
        };
        let (t, shared) = if b.in_burst {
            if b.burst == 0 {
                b.burst = b.stamp(W_WAKER);
                (b.burst, 0)
            } else {
                (b.burst, 2)
            }
        } else {
            (b.stamp(W_WAKER), 0)
        };
        b.put([word0(R_WAKE, by_ref & 1 | shared, id), t], W_WAKER);
        if b.depth() == 0 && !b.in_burst {
            b.soft_flush(t, W_WAKER);
        }
    }

    /// Waker clones and drops carry no stamp: their order among the thread's records is what
    /// the tracer needs (PROBES.md).
    #[inline(never)]
    fn record_waker(id: u64, kind: u64, ev: usize) {
        let b = match buf() {
            Some(b) => b,
            None => return,
        };
        count(ev);
        b.put([word0(kind, 0, id)], W_WAKER);
    }

    #[inline(never)]
    fn record_park(kind: u64, ev: usize, worker: i32, timeout_ns: u64) {
        if timeout_ns == 0 && THRESHOLD.load(Relaxed) != u64::MAX {
            // sampling: the schedulers' non-blocking driver polls between tasks (every few
            // dozen polls of a busy worker) are counted, not recorded (PROBES.md)
            count(ev);
            if let Some(b) = buf_existing() {
                if b.depth() == 0 {
                    let t = b.stamp(W_WORKER);
                    b.soft_flush(t, W_WORKER);
                }
            }
            return;
        }
        let b = match buf() {
            Some(b) => b,
            None => return,
        };
        let parked_since = b.head.last_clock;
        let t = b.stamp(W_WORKER);
        count(ev);
        b.put([word0(kind, 0, u64::from(worker as u32)), t, timeout_ns], W_WORKER);
        b.worker_bytes += 3 * 8;
        // A worker about to sleep hands over the task records it holds, at most once a
        // millisecond (under load it parks between requests: a flush each time would cost a
        // trap per request); task records it keeps through a sleep of more than a millisecond
        // are handed over when it wakes, and read in place by the tracer meanwhile. A batch of
        // worker records alone (a sampled capture between the tasks it records: an HTTP worker
        // at 1 in 100 parks every few requests) waits for the age rule, as on a worker that
        // never parks: flushed at each park, it cost a uprobe trap every millisecond for records
        // the tracer does not need sooner.
        let holds_tasks = b.head.len.load(Relaxed) > b.worker_bytes;
        let park_flush = PARK_FLUSH.load(Relaxed);
        let since = if kind == R_PARK { b.head.window_clock } else { parked_since };
        if holds_tasks && timeout_ns != 0 && t.wrapping_sub(since) >= park_flush {
            b.flush(W_WORKER, REASON_PARK);
        } else {
            b.soft_flush(t, W_WORKER);
        }
    }

    #[cold]
    #[inline(never)]
    fn burst_open() -> WakeBurst {
        match buf_existing() {
            Some(b) => {
                b.in_burst = true;
                b.burst = 0;
                WakeBurst(true)
            }
            None => WakeBurst(false),
        }
    }

    #[cold]
    #[inline(never)]
    fn burst_close() {
        if let Some(b) = buf_existing() {
            b.in_burst = false;
            if b.burst != 0 && b.depth() == 0 {
                let t = b.burst;
                b.soft_flush(t, W_WAKER);
            }
            b.burst = 0;
        }
    }

    // ===== sampling =====

    /// Task ids at or below this (after the multiplicative hash) are sampled.
    static THRESHOLD: AtomicU64 = AtomicU64::new(u64::MAX);

    /// One task in N: N from the sample_rate lanes, decided by Fibonacci hashing of the task
    /// id, so a task's fate is fixed at its spawn and every thread agrees on it.
    #[inline(always)]
    fn sampled(id: u64) -> bool {
        id.wrapping_mul(0x9e37_79b9_7f4a_7c15) <= THRESHOLD.load(Relaxed)
    }

    fn rate_bits() -> u64 {
        let mut rate = 0u64;
        for bit in 0..16 {
            if sample_bit(bit) {
                rate |= 1 << bit;
            }
        }
        rate
    }

    /// The rate from the sample_rate lanes, read twice: a tracer changing it (it clears the old
    /// bits, then sets the new ones) is never read half-way, a mix stricter than both rates.
    /// While the two reads differ the threshold stays as it was.
    fn refresh_sampling() -> u64 {
        let first = rate_bits();
        if rate_bits() != first {
            let t = THRESHOLD.load(Relaxed);
            return if t == u64::MAX { 1 } else { u64::MAX / t };
        }
        let rate = first.max(1);
        THRESHOLD.store(if rate == 1 { u64::MAX } else { u64::MAX / rate }, Relaxed);
        // keeps the sites (and their notes) in the binary
        core::hint::black_box(sample_rate_sites as fn());
        rate
    }

    // ===== clocks =====

    /// Flush interval, park flush interval and stale pause in clock ticks; refined by
    /// `calibrate`.
    static AGE: AtomicU64 = AtomicU64::new(4 * 3_000_000);
    static PARK_FLUSH: AtomicU64 = AtomicU64::new(3_000_000);
    static STALE: AtomicU64 = AtomicU64::new(200 * 3_000_000);
    static CALIBRATION: AtomicU64 = AtomicU64::new(0); // first flush ns, 0 = none
    static CALIBRATION_CLOCK: AtomicU64 = AtomicU64::new(0);
    static CLOCK: AtomicU8 = AtomicU8::new(0);

    /// TSC when the CPU says its TSC is invariant (constant rate, runs in deep C-states),
    /// CLOCK_MONOTONIC otherwise.
    fn clock_kind() -> u8 {
        let k = CLOCK.load(Relaxed);
        if k != 0 {
            return k;
        }
        // Safety: cpuid exists on every x86_64 CPU.
        let invariant = unsafe {
            core::arch::x86_64::__cpuid(0x8000_0000).eax >= 0x8000_0007
                && core::arch::x86_64::__cpuid(0x8000_0007).edx & (1 << 8) != 0
        };
        let k = if invariant { CLOCK_TSC } else { CLOCK_MONO };
        CLOCK.store(k, Relaxed);
        k
    }

    #[inline(always)]
    fn now(clock: u8) -> u64 {
        if clock == CLOCK_TSC {
            // Safety: rdtsc is available on every x86_64 CPU.
            unsafe { core::arch::x86_64::_rdtsc() }
        } else {
            mono_ns()
        }
    }

    /// Sets AGE and STALE from the first two flushes of the process at least 10 ms apart.
    fn calibrate(clock: u64, ns: u64, kind: u8) {
        let first = CALIBRATION.load(Relaxed);
        if first == u64::MAX {
            return;
        }
        if first == 0 {
            CALIBRATION_CLOCK.store(clock, Relaxed);
            CALIBRATION.store(ns, Relaxed);
            if kind == CLOCK_MONO {
                AGE.store(4_000_000, Relaxed);
                PARK_FLUSH.store(1_000_000, Relaxed);
                STALE.store(200_000_000, Relaxed);
                CALIBRATION.store(u64::MAX, Relaxed);
            }
            return;
        }
        let dns = ns.wrapping_sub(first);
        if dns < 10_000_000 || dns > 1 << 40 {
            return;
        }
        let per_ms = (clock.wrapping_sub(CALIBRATION_CLOCK.load(Relaxed)) as u128 * 1_000_000
            / u128::from(dns)) as u64;
        if per_ms > 0 {
            AGE.store(per_ms * 4, Relaxed);
            PARK_FLUSH.store(per_ms, Relaxed);
            STALE.store(per_ms * 200, Relaxed);
            CALIBRATION.store(u64::MAX, Relaxed);
        }
    }

    #[repr(C)]
    struct Timespec {
        sec: i64,
        nsec: i64,
    }

    extern "C" {
        fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
        fn syscall(num: i64, ...) -> i64;
    }

    fn mono_ns() -> u64 {
        let mut ts = Timespec { sec: 0, nsec: 0 };
        // Safety: CLOCK_MONOTONIC (1) into a valid timespec.
        unsafe { clock_gettime(1, &mut ts) };
        (ts.sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.nsec as u64)
    }

    fn gettid() -> u32 {
        // Safety: SYS_gettid (186 on x86_64) takes no arguments.
        unsafe { syscall(186) as u32 }
    }
}
