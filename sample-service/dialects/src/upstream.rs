//! The probes of Tokio's upstream USDT proposal (tokio-rs/tokio pull request #7717, as of its
//! commit 7075c2f2 of 2025-11-16: tokio/src/util/usdt/{provider.d,stapsdt.rs,mod.rs}), fired
//! from Tokio 1.53's runtime hooks and from a waker wrapper, since that proposal fires them
//! inside Tokio itself. Layout as the proposal writes it: a 1-byte `nop`, the note in
//! `.note.stapsdt` with flag "o" (SHF_LINK_ORDER, kept or dropped with its code), operands in
//! registers the compiler picks (`8@%rax`), no semaphore (0) except `task-details`'s.
//!
//! What the hooks cannot give as the proposal does (docs/dialects.md): `task-start`'s size and
//! original size are both the size of the future handed to `tokio::spawn` here (a boxed
//! future: 16; the proposal's `original_size` is the size before Tokio boxes a large future); no `block_on` task; no
//! `trace-root` (taskdump builds only). Waker clones are counted as Tokio's own raw waker would
//! count them: one waker per task, shared by every poll.

use tokio_dialects::{id_u64, Counter, Task};
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

pub static POLLS: Counter = Counter::new("polls");
pub static SPAWNS: Counter = Counter::new("spawns");
pub static TERMINATES: Counter = Counter::new("terminates");
pub static POLL_ENDS: Counter = Counter::new("poll_ends");
pub static WAKER_CLONES: Counter = Counter::new("waker_clones");
pub static WAKER_DROPS: Counter = Counter::new("waker_drops");
pub static WAKER_WAKES: Counter = Counter::new("waker_wakes");
pub static COUNTERS: [&Counter; 7] = [&POLLS, &SPAWNS, &TERMINATES, &POLL_ENDS, &WAKER_CLONES, &WAKER_DROPS, &WAKER_WAKES];

// ===== the probe sites =====

/// One probe site: `$args` is the SDT argument string over the named register operands,
/// `$sema` the semaphore operand (`const 0` or `sym STATIC`).
macro_rules! probe {
    ($name:literal, $args:literal, semaphore = $skind:ident $sema:tt $(, $op:ident = $val:expr)* $(,)?) => {
        // Safety: a nop, plus data in other sections. The label is made unique by the `label`
        // operand's name (the proposal's technique), hence the allow.
        #[allow(named_asm_labels)]
        unsafe {
            std::arch::asm!(
                ".Lprobe_{site}: nop",
                ".pushsection .note.stapsdt, \"o\", \"note\", .Lprobe_{site}",
                ".balign 4",
                ".4byte 992f-991f, 994f-993f, 3",
                "991: .asciz \"stapsdt\"",
                "992: .balign 4",
                "993: .8byte .Lprobe_{site}",
                ".8byte _.stapsdt.base",
                ".8byte {semaphore}",
                ".asciz \"tokio\"",
                concat!(".asciz \"", $name, "\""),
                concat!(".asciz \"", $args, "\""),
                "994: .balign 4",
                ".popsection",
                semaphore = $skind $sema,
                $($op = in(reg) $val,)*
                site = label {}, // a label unique to this site, which the note is linked to
                options(att_syntax, readonly, preserves_flags),
            );
        }
    };
}

// `task-details`'s semaphore, as the proposal's declare_semaphore! defines it.
std::arch::global_asm!(
    ".ifndef __usdt_sema_tokio_task__details",
    ".pushsection .probes, \"aw\", \"progbits\"",
    ".weak __usdt_sema_tokio_task__details",
    ".hidden __usdt_sema_tokio_task__details",
    "__usdt_sema_tokio_task__details: .zero 2",
    ".type __usdt_sema_tokio_task__details, @object",
    ".size __usdt_sema_tokio_task__details, 2",
    ".popsection",
    ".endif",
);
extern "C" {
    static __usdt_sema_tokio_task__details: u16;
}

/// kind: 0 block_on, 1 spawn, 2 spawn_local
#[inline(never)]
fn task_start(task_id: u64, kind: u8, size: usize, original_size: usize) {
    probe!("task-start", "8@{task_id:r} 1@{kind:l} 8@{size} 8@{original_size}", semaphore = const 0,
           task_id = task_id, kind = kind as u32, size = size, original_size = original_size);
}

/// name and file: NUL-terminated strings (the name "" for an unnamed task)
#[cold]
#[inline(never)]
fn task_details(task_id: u64, name: &str, file: &str, line: u32, col: u32) {
    let name0 = [name.as_bytes(), b"\0"].concat();
    let file0 = [file.as_bytes(), b"\0"].concat();
    probe!("task-details", "8@{task_id:r} 8@{name} 8@{file} 4@{line:e} 4@{col:e}",
           semaphore = sym __usdt_sema_tokio_task__details,
           task_id = task_id, name = name0.as_ptr(), file = file0.as_ptr(), line = line, col = col);
}

#[inline(never)]
fn task_poll_start(task_id: u64) {
    probe!("task-poll-start", "8@{task_id:r}", semaphore = const 0, task_id = task_id);
}

#[inline(never)]
fn task_poll_end(task_id: u64) {
    probe!("task-poll-end", "8@{task_id:r}", semaphore = const 0, task_id = task_id);
}

/// reason: 0 completed, 1 cancelled, 2 panicked
#[inline(never)]
fn task_terminate(task_id: u64, reason: u8) {
    probe!("task-terminate", "8@{task_id:r} 1@{reason:l}", semaphore = const 0,
           task_id = task_id, reason = reason as u32);
}

#[inline(never)]
fn waker_clone(task_id: u64) {
    probe!("waker-clone", "8@{task_id:r}", semaphore = const 0, task_id = task_id);
}

#[inline(never)]
fn waker_drop(task_id: u64) {
    probe!("waker-drop", "8@{task_id:r}", semaphore = const 0, task_id = task_id);
}

#[inline(never)]
fn waker_wake(task_id: u64) {
    probe!("waker-wake", "8@{task_id:r}", semaphore = const 0, task_id = task_id);
}

// ===== the runtime hooks =====

thread_local! {
    /// The size of the future being spawned on this thread (set by `spawn`, read by the hook).
    static SPAWN_SIZE: Cell<usize> = const { Cell::new(0) };
    /// The task this thread polls (between the poll hooks).
    static POLLING: Cell<u64> = const { Cell::new(0) };
    /// A terminate seen inside its task's poll, fired after `task-poll-end` as the proposal
    /// orders them (the hooks run terminate first).
    static TERMINATED: Cell<Option<(u64, u8)>> = const { Cell::new(None) };
    /// The last task whose future was dropped unfinished here, and why (1 cancelled, 2 panicked).
    static UNFINISHED: Cell<(u64, u8)> = const { Cell::new((0, 0)) };
}

pub fn register_hooks(b: &mut tokio::runtime::Builder) -> &mut tokio::runtime::Builder {
    b.on_task_spawn(|meta| {
        SPAWNS.hit();
        let id = id_u64(meta.id());
        let size = SPAWN_SIZE.with(|s| s.replace(0));
        task_start(id, 1, size, size);
        // Safety: a u16 the kernel raises while a tracer is attached.
        if unsafe { std::ptr::read_volatile(&raw const __usdt_sema_tokio_task__details) } != 0 {
            let at = meta.spawned_at();
            task_details(id, "", at.file(), at.line(), at.column());
        }
    })
    .on_before_task_poll(|meta| {
        POLLS.hit();
        let id = id_u64(meta.id());
        POLLING.with(|p| p.set(id));
        task_poll_start(id);
    })
    .on_after_task_poll(|meta| {
        POLL_ENDS.hit();
        POLLING.with(|p| p.set(0));
        task_poll_end(id_u64(meta.id()));
        if let Some((id, reason)) = TERMINATED.with(|t| t.take()) {
            task_terminate(id, reason);
        }
    })
    .on_task_terminate(|meta| {
        TERMINATES.hit();
        let id = id_u64(meta.id());
        let reason = match UNFINISHED.with(|u| u.get()) {
            (t, r) if t == id => r,
            _ => 0,
        };
        if POLLING.with(|p| p.get()) == id {
            TERMINATED.with(|t| t.set(Some((id, reason))));
        } else {
            task_terminate(id, reason);
        }
    })
}

/// A task's future with its waker traced, for `tokio::spawn` (which must follow on this thread:
/// its spawn hook takes the size noted here).
pub fn traced(fut: Task) -> Task {
    SPAWN_SIZE.with(|s| s.set(std::mem::size_of::<Task>()));
    Box::pin(Traced { fut, waker: None, done: false })
}

// ===== wakers =====

/// A task's future, polled with a waker that fires the waker probes. Like Tokio's own (a
/// pointer to the task), one waker per task: the one each poll lends and its clones share a
/// data pointer and vtable, so `Waker::will_wake` holds across polls as it does in Tokio.
struct Traced {
    fut: Task,
    waker: Option<Arc<TaskWaker>>,
    done: bool,
}

struct TaskWaker {
    id: u64,
    tokio: Waker,
}

impl Future for Traced {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let me = &mut *self;
        let w = me.waker.get_or_insert_with(|| {
            let id = tokio::task::try_id().map(id_u64).unwrap_or(0);
            Arc::new(TaskWaker { id, tokio: cx.waker().clone() })
        });
        // The lent waker: no reference of its own (Tokio's `waker_ref`), never dropped.
        let lent = std::mem::ManuallyDrop::new(unsafe { Waker::from_raw(raw(Arc::as_ptr(w))) });
        let res = me.fut.as_mut().poll(&mut Context::from_waker(&lent));
        me.done = res.is_ready();
        res
    }
}

impl Drop for Traced {
    fn drop(&mut self) {
        if !self.done {
            let id = self.waker.as_ref().map(|w| w.id).or_else(|| tokio::task::try_id().map(id_u64));
            let why = if std::thread::panicking() { 2 } else { 1 };
            UNFINISHED.with(|u| u.set((id.unwrap_or(0), why)));
        }
    }
}

static VTABLE: RawWakerVTable = RawWakerVTable::new(clone_waker, wake, wake_by_ref, drop_waker);

fn raw(w: *const TaskWaker) -> RawWaker {
    RawWaker::new(w as *const (), &VTABLE)
}

// Safety (all four): `p` is an `Arc<TaskWaker>` pointer; every waker but the lent one owns a
// reference.
unsafe fn clone_waker(p: *const ()) -> RawWaker {
    let w = p as *const TaskWaker;
    WAKER_CLONES.hit();
    waker_clone((*w).id);
    Arc::increment_strong_count(w);
    raw(w)
}

unsafe fn wake(p: *const ()) {
    let w = Arc::from_raw(p as *const TaskWaker);
    WAKER_WAKES.hit();
    waker_wake(w.id);
    WAKER_DROPS.hit();
    waker_drop(w.id); // the proposal fires both for a wake by value
    w.tokio.wake_by_ref();
}

unsafe fn wake_by_ref(p: *const ()) {
    let w = &*(p as *const TaskWaker);
    WAKER_WAKES.hit();
    waker_wake(w.id);
    w.tokio.wake_by_ref();
}

unsafe fn drop_waker(p: *const ()) {
    let w = Arc::from_raw(p as *const TaskWaker);
    WAKER_DROPS.hit();
    waker_drop(w.id);
}
