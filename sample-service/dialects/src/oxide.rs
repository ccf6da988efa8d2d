//! The probes of oxide's tokio-dtrace (oxidecomputer/tokio-dtrace src/lib.rs at 91f72de, its
//! `#[usdt::provider(provider = "tokio")]` module), fired from the same Tokio runtime hooks it
//! registers, laid out as the `usdt` crate lays out SystemTap probes on Linux (usdt 0.6.0,
//! usdt-impl/src/stapsdt.rs and stapsdt/args.rs; tokio-dtrace's own Cargo.toml asks for
//! usdt 0.5, which has no Linux backend: oxidecomputer/tokio-dtrace pull request #4 moves it to
//! 0.6). Per probe: a semaphore `__usdt_sema_tokio_<rust name>` in `.probes`, read before the
//! arguments are built; a 1-byte `nop`; the note in `.note.stapsdt`; arguments in the C calling
//! convention's registers in order (rdi, rsi, rdx, rcx), strings as pointers to NUL-terminated
//! copies.

use tokio_dialects::{id_u64, Counter};
use tokio::runtime::TaskMeta;

pub static POLLS: Counter = Counter::new("polls");
pub static SPAWNS: Counter = Counter::new("spawns");
pub static TERMINATES: Counter = Counter::new("terminates");
pub static POLL_ENDS: Counter = Counter::new("poll_ends");
pub static THREAD_STARTS: Counter = Counter::new("thread_starts");
pub static THREAD_STOPS: Counter = Counter::new("thread_stops");
pub static PARKS: Counter = Counter::new("parks");
pub static UNPARKS: Counter = Counter::new("unparks");
pub static COUNTERS: [&Counter; 8] =
    [&POLLS, &SPAWNS, &TERMINATES, &POLL_ENDS, &THREAD_STARTS, &THREAD_STOPS, &PARKS, &UNPARKS];

/// Defines probe `$name` (`$note`: the Rust name with "__" as "-", as usdt writes it): its
/// semaphore, and
/// `$name::fire(|| args)` building the arguments only while the semaphore is raised.
macro_rules! usdt_probe {
    ($name:ident, $note:literal, $sema:literal, $args:literal $(, $arg:ident: $ty:ty => $reg:tt)*) => {
        pub mod $name {
            std::arch::global_asm!(
                concat!(".ifndef ", $sema),
                ".pushsection .probes, \"aw\", \"progbits\"",
                concat!(".weak ", $sema),
                concat!(".hidden ", $sema),
                ".align 2",
                concat!($sema, ": .zero 2"),
                concat!(".type ", $sema, ", @object"),
                concat!(".size ", $sema, ", 2"),
                ".popsection",
                ".endif",
            );
            extern "C" {
                #[link_name = $sema]
                static SEMAPHORE: u16;
            }

            #[inline(never)]
            pub fn fire(args: impl FnOnce() -> ($($ty,)*)) {
                #[allow(unused_imports)]
                use super::IntoReg;
                // Safety: a u16 the kernel raises while a tracer is attached.
                if unsafe { std::ptr::read_volatile(&raw const SEMAPHORE) } == 0 {
                    return;
                }
                #[allow(clippy::let_unit_value)]
                let ($($arg,)*) = args();
                // Safety: a nop, plus data in other sections.
                unsafe {
                    std::arch::asm!(
                        "990: nop",
                        ".pushsection .note.stapsdt, \"\", \"note\"",
                        ".balign 4",
                        ".4byte 992f-991f, 994f-993f, 3",
                        "991: .asciz \"stapsdt\"",
                        "992: .balign 4",
                        "993: .8byte 990b",
                        ".8byte _.stapsdt.base",
                        concat!(".8byte ", $sema),
                        ".asciz \"tokio\"",
                        concat!(".asciz \"", $note, "\""),
                        concat!(".asciz \"", $args, "\""),
                        "994: .balign 4",
                        ".popsection",
                        $(in($reg) $arg.into_reg(),)*
                        // usdt says `nomem`; `readonly` keeps the strings the tracer reads
                        // from being optimised away (and no `nostack`: see docs/dialects.md)
                        options(att_syntax, readonly, preserves_flags),
                    );
                }
            }
        }
    };
}

/// A probe argument as the `usdt` crate passes it: integers zero-extended to the register,
/// strings as a pointer to a NUL-terminated copy (kept alive by the tuple until the nop).
pub trait IntoReg {
    fn into_reg(&self) -> usize;
}
impl IntoReg for u64 {
    fn into_reg(&self) -> usize {
        *self as usize
    }
}
impl IntoReg for u32 {
    fn into_reg(&self) -> usize {
        *self as usize
    }
}
impl IntoReg for Vec<u8> {
    fn into_reg(&self) -> usize {
        self.as_ptr() as usize
    }
}

usdt_probe!(task_spawn, "task-spawn", "__usdt_sema_tokio_task__spawn", "8@%rdi 8@%rsi 4@%edx 4@%ecx",
    id: u64 => "rdi", file: Vec<u8> => "rsi", line: u32 => "rdx", col: u32 => "rcx");
usdt_probe!(task_poll_start, "task-poll-start", "__usdt_sema_tokio_task__poll__start", "8@%rdi 8@%rsi 4@%edx 4@%ecx",
    id: u64 => "rdi", file: Vec<u8> => "rsi", line: u32 => "rdx", col: u32 => "rcx");
usdt_probe!(task_poll_end, "task-poll-end", "__usdt_sema_tokio_task__poll__end", "8@%rdi 8@%rsi 4@%edx 4@%ecx",
    id: u64 => "rdi", file: Vec<u8> => "rsi", line: u32 => "rdx", col: u32 => "rcx");
usdt_probe!(task_terminate, "task-terminate", "__usdt_sema_tokio_task__terminate", "8@%rdi 8@%rsi 4@%edx 4@%ecx",
    id: u64 => "rdi", file: Vec<u8> => "rsi", line: u32 => "rdx", col: u32 => "rcx");
usdt_probe!(worker_thread_start, "worker-thread-start", "__usdt_sema_tokio_worker__thread__start", "");
usdt_probe!(worker_thread_stop, "worker-thread-stop", "__usdt_sema_tokio_worker__thread__stop", "");
usdt_probe!(worker_thread_park, "worker-thread-park", "__usdt_sema_tokio_worker__thread__park", "");
usdt_probe!(worker_thread_unpark, "worker-thread-unpark", "__usdt_sema_tokio_worker__thread__unpark", "");

/// tokio-dtrace's `unpack_meta`: (task id, spawn file as a C string, line, column).
fn unpack_meta(meta: &TaskMeta<'_>) -> (u64, Vec<u8>, u32, u32) {
    let at = meta.spawned_at();
    (id_u64(meta.id()), [at.file().as_bytes(), b"\0"].concat(), at.line(), at.column())
}

/// tokio-dtrace's `register_hooks`, counting each hook call.
pub fn register_hooks(b: &mut tokio::runtime::Builder) -> &mut tokio::runtime::Builder {
    b.on_thread_start(|| {
        THREAD_STARTS.hit();
        worker_thread_start::fire(|| ());
    })
    .on_thread_stop(|| {
        THREAD_STOPS.hit();
        worker_thread_stop::fire(|| ());
    })
    .on_thread_park(|| {
        PARKS.hit();
        worker_thread_park::fire(|| ());
    })
    .on_thread_unpark(|| {
        UNPARKS.hit();
        worker_thread_unpark::fire(|| ());
    })
    .on_task_spawn(|meta| {
        SPAWNS.hit();
        task_spawn::fire(|| unpack_meta(meta));
    })
    .on_before_task_poll(|meta| {
        POLLS.hit();
        task_poll_start::fire(|| unpack_meta(meta));
    })
    .on_after_task_poll(|meta| {
        POLL_ENDS.hit();
        task_poll_end::fire(|| unpack_meta(meta));
    })
    .on_task_terminate(|meta| {
        TERMINATES.hit();
        task_terminate::fire(|| unpack_meta(meta));
    })
}
