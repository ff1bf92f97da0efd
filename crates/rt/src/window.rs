//! `tdmap trace --window N:M` (issue 17 item 6): record N ms of every M ms, count the
//! rest, as drmemtrace's burst tracing does, so that a long run gives a trace of
//! bounded size with the sharing pattern of its windows.
//!
//! The hot path pays nothing for it: a helper thread sleeps to each boundary and flips
//! the per-thread mode word that `record` already loads (`state::MODE_RECORD` /
//! `MODE_COUNT`). At a window's end it sets [`MODE_PAUSE`] instead of `MODE_COUNT`: the
//! thread's next access (off the hot path, `state::resolve_pause`) flushes its chunk
//! and forgets its collapse runs and filter line, since other threads' writes in the
//! gap go unseen, then takes the mode of the current phase ([`resolve`]).
//!
//! Windows open at the process's start (and a forked child's) and then every M ms
//! after it; a helper woken late on a loaded machine skips the windows it missed
//! rather than shortening the gaps. Each window that opens is announced to `tdmap
//! trace` (`MSG_WINDOW`), which reports how many were traced.

use crate::quiet_thread::{self, CreateFn, Shape};
use crate::state::{self, MODE_COUNT, MODE_OFF, MODE_RECORD};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::SeqCst};
use tdmap_wire::raw::{Msg, MSG_WINDOW};
use tdmap_wire::window::Window;

/// Mode set at a window's end: the thread resolves it itself on its next access.
pub const MODE_PAUSE: u8 = 3;

/// True while a window is open (records are kept).
static RECORDING: AtomicBool = AtomicBool::new(true);
/// Recorded ns per period, 0 when the whole run is recorded.
static ON_NS: AtomicU64 = AtomicU64::new(0);
/// Length of a period in ns.
static EVERY_NS: AtomicU64 = AtomicU64::new(0);

/// Reads the window spec (`tdmap_wire::window::ENV_WINDOW`); true when the run is
/// windowed, whose threads then start in [`MODE_PAUSE`].
pub fn configure(spec: Option<&str>) -> bool {
    let Some(w) = spec.and_then(|s| s.parse::<Window>().ok()) else {
        return false;
    };
    ON_NS.store(w.on_ms.saturating_mul(1_000_000), SeqCst);
    EVERY_NS.store(w.every_ms.saturating_mul(1_000_000), SeqCst);
    true
}

/// Opens the first window now and starts the helper that closes and opens the next
/// ones; in a forked child (threads do not survive `fork`) it starts them anew.
pub fn start() {
    let (on, every) = (ON_NS.load(SeqCst), EVERY_NS.load(SeqCst));
    if on == 0 {
        return;
    }
    let t0 = state::now_ns();
    open(0, t0);
    if on < every {
        spawn_helper(t0);
    }
}

/// Where the clock stands against the windows: the index of the period that `now`
/// falls in, and whether that period's window is still open.
fn phase(t0: u64, on: u64, every: u64, now: u64) -> (u64, bool) {
    let since = now.saturating_sub(t0);
    (since / every, since % every < on)
}

/// The helper's loop: sleep to the open window's end, close it, sleep to the next
/// period's start (skipping any the helper overslept), open it.
fn run(t0: u64) -> ! {
    let (on, every) = (ON_NS.load(SeqCst), EVERY_NS.load(SeqCst));
    let mut k = 0;
    loop {
        sleep_until(t0 + k * every + on);
        close();
        let (now_k, _) = phase(t0, on, every, state::now_ns());
        k = now_k + 1;
        sleep_until(t0 + k * every);
        // Overslept past the whole window: that one is skipped, try the next.
        let (at, open_now) = phase(t0, on, every, state::now_ns());
        if at != k || !open_now {
            k = at;
            continue;
        }
        open(k, t0 + k * every);
    }
}

/// Opens window `k`: threads counting go back to recording (paused ones resolve
/// themselves).
fn open(k: u64, at: u64) {
    RECORDING.store(true, SeqCst);
    state::flip_modes(MODE_COUNT, MODE_RECORD);
    crate::io::send(Msg {
        tag: MSG_WINDOW,
        b: k.min(u32::MAX as u64) as u32,
        a: at,
    });
}

/// Closes the open window: recording threads pause.
fn close() {
    RECORDING.store(false, SeqCst);
    state::flip_modes(MODE_RECORD, MODE_PAUSE);
}

/// The mode a paused thread takes, set in `mode` (unless the thread was stopped, then
/// None): recording inside a window, counting outside. The caller has already
/// flushed the thread's chunk and reset its per-window state.
pub fn resolve(mode: &AtomicU8) -> Option<u8> {
    // The helper stores RECORDING before flipping the modes; a thread that saw the old
    // phase tries again, so it never keeps the wrong mode for a whole window.
    loop {
        let rec = RECORDING.load(SeqCst);
        let want = if rec { MODE_RECORD } else { MODE_COUNT };
        mode.fetch_update(SeqCst, SeqCst, |m| (m != MODE_OFF).then_some(want))
            .ok()?;
        if RECORDING.load(SeqCst) == rec {
            return Some(want);
        }
    }
}

/// Sleeps until the monotonic clock reads `ns`.
pub(crate) fn sleep_until(ns: u64) {
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: a valid timespec; a null remainder is allowed with TIMER_ABSTIME.
    while unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    } == libc::EINTR
    {}
}

/// libc's `pthread_create`, not the runtime's wrapper, which would give the helper a
/// thread id and shift the program's.
#[cfg(not(test))]
pub(crate) fn real_create() -> Option<CreateFn> {
    crate::next::next_fn!(pthread_create: fn(
        *mut libc::pthread_t,
        *const libc::pthread_attr_t,
        extern "C" fn(*mut libc::c_void) -> *mut libc::c_void,
        *mut libc::c_void
    ) -> i32)
}

/// Unit tests link libc's `pthread_create` directly (there is no wrapper).
#[cfg(test)]
pub(crate) fn real_create() -> Option<CreateFn> {
    Some(libc::pthread_create)
}

/// Starts the detached helper with every signal blocked, so that the program's
/// signals never run on it; if it cannot start, the whole run is recorded.
fn spawn_helper(t0: u64) {
    let Some(create) = real_create() else {
        return;
    };
    extern "C" fn main(p: *mut libc::c_void) -> *mut libc::c_void {
        // The runtime's own copies (`memcpy` the compiler emits) are not the program's
        // accesses: recorded, they would make the helper a traced thread.
        state::quiet(|| run(p as u64))
    }
    let name = c"tdmap-window";
    let _ = quiet_thread::spawn(create, Shape::Detached, main, t0 as *mut libc::c_void, name);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_phase_is_open_for_the_first_n_of_every_m() {
        let (t0, on, every) = (1_000, 5, 20);
        assert_eq!(phase(t0, on, every, 1_000), (0, true));
        assert_eq!(phase(t0, on, every, 1_004), (0, true));
        assert_eq!(phase(t0, on, every, 1_005), (0, false));
        assert_eq!(phase(t0, on, every, 1_019), (0, false));
        assert_eq!(phase(t0, on, every, 1_020), (1, true));
        assert_eq!(phase(t0, on, every, 1_043), (2, true));
        assert_eq!(phase(t0, on, every, 1_047), (2, false));
    }

    #[test]
    fn a_paused_thread_takes_the_phase_but_a_stopped_one_stays_stopped() {
        let mode = AtomicU8::new(MODE_PAUSE);
        RECORDING.store(false, SeqCst);
        assert_eq!(resolve(&mode), Some(MODE_COUNT));
        RECORDING.store(true, SeqCst);
        mode.store(MODE_PAUSE, SeqCst);
        assert_eq!(resolve(&mode), Some(MODE_RECORD));
        assert_eq!(mode.load(SeqCst), MODE_RECORD);
        mode.store(MODE_OFF, SeqCst);
        assert_eq!(resolve(&mode), None);
        assert_eq!(mode.load(SeqCst), MODE_OFF);
    }
}
