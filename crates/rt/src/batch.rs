//! The batch clock of `--model-only` (`crate::aggregate`): a helper thread ends each
//! aggregating thread's batch once the thread has run [`BATCH_CPU_NS`] of CPU time
//! since the last one ended (its own CPU clock, so that batches follow each thread's
//! progress however the machine's load schedules the threads), and the hot path counts
//! nothing for it. It flips the per-thread mode word that `record` already loads to
//! `window::MODE_PAUSE`, as `--window`'s helper does at a window's end; the thread's
//! next access (off the hot path, `state::resolve_pause`) drains its table into its
//! chunk, writes it and takes the mode of the current phase again.

use crate::aggregate::BATCH_CPU_NS;
use crate::quiet_thread::{self, Shape};
use crate::state;
use crate::window;
use std::sync::atomic::Ordering::Relaxed;

/// How often the helper reads the threads' CPU clocks (a system call per thread).
const TICK_NS: u64 = BATCH_CPU_NS / 4;

/// Starts the batch clock when threads aggregate (in a forked child too: threads do
/// not survive `fork`); without it, batches end only on full chunks, the thread's first
/// first touch, windows and the thread's end.
pub fn start() {
    if !state::AGGREGATE.load(Relaxed) {
        return;
    }
    let Some(create) = window::real_create() else {
        return;
    };
    extern "C" fn main(_: *mut libc::c_void) -> *mut libc::c_void {
        state::quiet(|| {
            let mut next = state::now_ns();
            loop {
                next += TICK_NS;
                window::sleep_until(next);
                // A helper woken late reads the clocks once, not once per tick it overslept.
                next = next.max(state::now_ns());
                state::end_batches(BATCH_CPU_NS);
            }
        })
    }
    let name = c"tdmap-batch";
    // On a stack of its own in the runtime's data, not one libc maps: a mapping would
    // move the program's later thread stacks, so that the same run would put its data
    // at other addresses with `--model-only` than without (`tests/trace/model_only.rs`).
    let stack = std::ptr::addr_of_mut!(STACK).cast::<u8>() as usize;
    let shape = Shape::Stack(stack, std::mem::size_of::<Stack>());
    let _ = quiet_thread::spawn(create, shape, main, std::ptr::null_mut(), name);
}

/// The helper's stack: room for libc's thread block and the program's static TLS too,
/// which libc puts on a given stack (a program whose TLS does not fit gets no helper,
/// and its batches end as [`start`] says). Never freed: the helper never
/// ends, and a forked child's copy serves the child's helper.
#[repr(C, align(4096))]
struct Stack([u8; 1 << 20]);
static mut STACK: Stack = Stack([0; 1 << 20]);
