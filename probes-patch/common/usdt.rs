//! USDT probes, provider `tokio` (added by tokio-ebpf-trace's probes-patch).
//!
//! Compiled in only with `RUSTFLAGS="--cfg tokio_task_tracking"` on x86_64 Linux. Every hook
//! point in the runtime is one `usdt::probe!(...)` line; without the cfg the macro expands to
//! nothing, so the crate compiles to what stock Tokio compiles to.
//!
//! Each probe is a 5-byte nop described by a SystemTap SDT v3 note in `.note.stapsdt`, laid out
//! byte for byte as `<sys/sdt.h>` lays it out, with a u16 semaphore in `.probes`. A tracer
//! attaching to the probe increments the semaphore; a hook point evaluates its arguments only
//! while the semaphore is non-zero, so an untraced process pays one load and one branch per
//! hook point. The nop sits in a cold, out-of-line function per probe, so there is one note
//! per probe whatever the number of hook points and future types.
//!
//! Probe names, argument lists and codes: probes-patch/PROBES.md (they are part of the
//! tracer's ABI). Note layout and hook points per Tokio version: probes-patch/README.md.

/// A hook point. `probe!(name(args))` fires probe `name` with `args` evaluated only while a
/// tracer is attached; `probe!(gate => f(args))` calls `f` only while probe `gate` is traced;
/// `probe!(let v = f(args))` binds what a later hook point needs. Without
/// `--cfg tokio_task_tracking` every form expands to nothing.
#[cfg(not(all(tokio_task_tracking, target_arch = "x86_64", target_os = "linux")))]
macro_rules! probe {
    ($($t:tt)*) => {};
}

#[cfg(all(tokio_task_tracking, target_arch = "x86_64", target_os = "linux"))]
macro_rules! probe {
    (let $v:ident = $f:ident($($a:expr),* $(,)?)) => {
        let $v = $crate::runtime::task::usdt::$f($($a),*);
    };
    (task_poll_end($polled:expr, $result:expr $(,)?)) => {
        if $polled.traced() {
            $crate::runtime::task::usdt::task_poll_end($polled, $result)
        }
    };
    ($gate:ident => $f:ident($($a:expr),* $(,)?)) => {
        if $crate::runtime::task::usdt::$gate::enabled() {
            $crate::runtime::task::usdt::$f($($a),*)
        }
    };
    ($probe:ident $(::<$($g:ty),+>)? ($($a:expr),* $(,)?)) => {
        if $crate::runtime::task::usdt::$probe::enabled() {
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
    use std::ptr::NonNull;
    use std::time::Duration;

    // ===== the emitter =====

    /// The assembly of one probe site, as `<sys/sdt.h>` (`_SDT_ASM_BODY` + `_SDT_ASM_BASE`)
    /// writes it: the nop, its note, and the `.stapsdt.base` anchor tracers use to detect
    /// prelink-style relocation. `{semaphore}` is a `sym` operand, the argument string holds
    /// register operands.
    macro_rules! sdt_asm {
        ($name:expr, $args:expr) => {
            concat!(
                "990: .byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n", // nop5: nopl 0x0(%rax,%rax,1)
                ".pushsection .note.stapsdt, \"?\", \"note\"\n",
                ".balign 4\n",
                ".4byte 992f-991f, 994f-993f, 3\n", // namesz, descsz, type 3 (NT_STAPSDT)
                "991: .asciz \"stapsdt\"\n",
                "992: .balign 4\n",
                "993: .8byte 990b\n", // pc
                ".8byte _.stapsdt.base\n",
                ".8byte {semaphore}\n",
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

    /// Defines module `$name` with the probe's semaphore, `enabled()` and the cold `emit()`
    /// holding the probe site. `$args` is the SDT argument string over the named operands.
    macro_rules! sdt_probe {
        ($name:ident, $args:literal, $($arg:ident: $ty:ty => $class:ident),* $(,)?) => {
            pub(crate) mod $name {
                /// Non-zero while a tracer is attached (the kernel counts attachments here).
                #[link_section = ".probes"]
                static mut SEMAPHORE: u16 = 0;

                #[inline(always)]
                pub(crate) fn enabled() -> bool {
                    // Safety: a plain u16 read; only tracers (through the kernel) write it.
                    unsafe { ::core::ptr::read_volatile(::core::ptr::addr_of!(SEMAPHORE)) != 0 }
                }

                #[cold]
                #[inline(never)]
                pub(crate) fn emit($($arg: $ty),*) {
                    // Safety: the template is a nop plus data in other sections.
                    unsafe {
                        ::core::arch::asm!(
                            sdt_asm!(stringify!($name), $args),
                            $($arg = in($class) $arg,)*
                            semaphore = sym SEMAPHORE,
                            options(att_syntax),
                        );
                    }
                }
            }
        };
    }

    sdt_probe!(task_spawn,
        "8@{id} 8@{header} 1@{kind} 8@{file} 8@{file_len} 4@{line:e} 4@{col:e} 8@{type_name} 8@{type_name_len}",
        id: u64 => reg, header: u64 => reg, kind: u8 => reg_byte, file: u64 => reg,
        file_len: u64 => reg, line: u32 => reg, col: u32 => reg, type_name: u64 => reg,
        type_name_len: u64 => reg);
    sdt_probe!(task_poll_begin, "8@{id} 8@{header} -4@{worker:e}",
        id: u64 => reg, header: u64 => reg, worker: i32 => reg);
    sdt_probe!(task_poll_end, "8@{id} 8@{header} 1@{result}",
        id: u64 => reg, header: u64 => reg, result: u8 => reg_byte);
    sdt_probe!(task_yielded, "8@{id} 1@{reason}",
        id: u64 => reg, reason: u8 => reg_byte);
    sdt_probe!(waker_wake, "8@{id} 8@{header} 1@{by_ref}",
        id: u64 => reg, header: u64 => reg, by_ref: u8 => reg_byte);
    sdt_probe!(waker_clone, "8@{id} 8@{header}",
        id: u64 => reg, header: u64 => reg);
    sdt_probe!(waker_drop, "8@{id} 8@{header}",
        id: u64 => reg, header: u64 => reg);
    sdt_probe!(task_terminate, "8@{id} 8@{header} 1@{reason}",
        id: u64 => reg, header: u64 => reg, reason: u8 => reg_byte);
    sdt_probe!(worker_park, "-4@{worker:e} 8@{timeout_ns}",
        worker: i32 => reg, timeout_ns: u64 => reg);
    sdt_probe!(worker_unpark, "-4@{worker:e} 8@{timeout_ns}",
        worker: i32 => reg, timeout_ns: u64 => reg);

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
        fn drop(&mut self) {
            let _ = WORKER.try_with(|w| w.set(self.0));
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
        let traced = task_spawn::enabled();
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

    #[inline(always)]
    pub(crate) fn task_spawn<T: ?Sized, S: 'static>(
        task: &Task<S>,
        id: Id,
        kind: u8,
        at: Option<&'static Location<'static>>,
    ) {
        let (file, line, col) = at.map_or(("", 0, 0), |l| (l.file(), l.line(), l.column()));
        let type_name = std::any::type_name::<T>();
        touch_pages(file);
        touch_pages(type_name);
        task_spawn::emit(
            id.as_u64(),
            addr(task.header_ptr()),
            kind,
            file.as_ptr() as usize as u64,
            file.len() as u64,
            line,
            col,
            type_name.as_ptr() as usize as u64,
            type_name.len() as u64,
        );
    }

    /// What `task_poll_end` needs once the task may be gone; id 0 when it is not traced.
    #[derive(Clone, Copy)]
    pub(crate) struct Polled {
        id: u64,
        header: u64,
    }

    impl Polled {
        #[inline(always)]
        pub(crate) fn traced(&self) -> bool {
            self.id != 0
        }
    }

    /// Fires `task_poll_begin` and saves what `task_poll_end` will need.
    #[inline(always)]
    pub(crate) fn task_poll_begin(id: &Id, header: NonNull<Header>) -> Polled {
        if task_poll_begin::enabled() {
            task_poll_begin::emit(id.as_u64(), addr(header), worker());
        }
        if task_poll_end::enabled() {
            Polled { id: id.as_u64(), header: addr(header) }
        } else {
            Polled { id: 0, header: 0 }
        }
    }

    #[inline(always)]
    pub(crate) fn task_poll_end(polled: Polled, result: u8) {
        task_poll_end::emit(polled.id, polled.header, result);
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
        if let Some(id) = id {
            task_yielded::emit(id.as_u64(), reason);
        }
    }

    #[inline(always)]
    pub(crate) fn waker_wake(id: Id, header: NonNull<Header>, by_ref: u8) {
        waker_wake::emit(id.as_u64(), addr(header), by_ref);
    }

    #[inline(always)]
    pub(crate) fn waker_clone(id: Id, header: NonNull<Header>) {
        waker_clone::emit(id.as_u64(), addr(header));
    }

    #[inline(always)]
    pub(crate) fn waker_drop(id: Id, header: NonNull<Header>) {
        waker_drop::emit(id.as_u64(), addr(header));
    }

    #[inline(always)]
    pub(in crate::runtime::task) fn task_terminate<T: Future, S>(header: NonNull<Header>, core: &Core<T, S>) {
        task_terminate::emit(core.task_id.as_u64(), addr(header), outcome(core));
    }

    fn timeout_ns(timeout: Option<Duration>) -> u64 {
        timeout.map_or(u64::MAX, |d| d.as_nanos().min(u64::MAX as u128 - 1) as u64)
    }

    #[inline(always)]
    pub(crate) fn worker_park(worker: usize, timeout: Option<Duration>) {
        worker_park::emit(worker as i32, timeout_ns(timeout));
    }

    #[inline(always)]
    pub(crate) fn worker_unpark(worker: usize, timeout: Option<Duration>) {
        worker_unpark::emit(worker as i32, timeout_ns(timeout));
    }
}
