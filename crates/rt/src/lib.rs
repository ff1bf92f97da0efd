//! The tdmap runtime, linked into programs built with `tdmap cc`: clang's SanitizerCoverage
//! calls `__sanitizer_cov_load*`/`__sanitizer_cov_store*` before every load and store
//! (with `tdmap gcc`, `g++` or `gfortran`: gcc's `__tsan_read*`/`__tsan_write*`, see
//! [`tsan`]), and this library appends each access to a per-thread buffer, which it writes as a raw
//! chunk to a file that `tdmap trace` converts to the compressed trace afterwards
//! (the trace-based method's memory-access monitoring, trace-based mapping §III-A,
//! with compiler instrumentation in place of Simics).
//!
//! Hot path: one thread-local load, no locks, no system calls except one `write` per
//! [`tdmap_wire::raw::CHUNK_RECORDS`] accesses. Most accesses take a fast path that
//! makes no call (`state::record`); first touches, clock ticks, flushes and mode
//! changes go to one cold function. Under `tdmap trace --model-only` each thread counts
//! its accesses per line and writes a record per line instead (`aggregate.rs`). With `tdmap trace --window N:M` a helper thread
//! switches every thread between recording and counting (`window.rs`). Threads get ids in creation order (main = 0) by
//! wrapping `pthread_create`; the set-id functions are wrapped for the `inject` sampler
//! (see [`inject::unprotected`]). Without the `tdmap trace` environment the runtime stays off
//! and the program runs normally.
//!
//! Preloaded by `tdmap exec`, it pins the program's threads as a mapping says (see
//! `pin`): main first, then each thread in creation order.
//!
//! Calls to `memcpy`, `memset` and the string functions are recorded as the ranges they
//! touch, one record per line ([`intercept`]), as sanitizers' interceptors do.
//!
//! Limits: first touches are judged among recorded accesses only (memory that libc or
//! the kernel wrote first, e.g. inside `calloc` or `fread`, is credited to the first
//! recorded toucher); threads still running when the process exits are
//! flushed best-effort; an instrumented signal handler that interrupts the hot path can
//! lose or repeat one record.
//!
//! Forked children record too, and so do instrumented programs that a traced process
//! execs (directly or through a shell): each process into files of its own (`init.rs`),
//! with its threads numbered from 0 and snapshots of its `MAP_SHARED` mappings
//! (`snapshot.rs`) from which `tdmap trace` keys shared pages by backing object. `_exit`
//! and the non-variadic `exec` calls are wrapped (`exits.rs`) so that a process that
//! leaves through them ends its part whole.

mod aggregate;
mod batch;
mod callbacks;
mod collapse;
#[cfg(not(test))]
mod exits;
mod init;
pub mod inject;
#[cfg(not(test))]
mod intercept;
mod io;
#[cfg(not(test))]
mod next;
#[cfg(not(test))]
mod pin;
mod quiet_thread;
#[cfg(not(test))]
mod setid;
mod snapshot;
mod state;
#[cfg(not(test))]
mod threads;
pub mod tsan;
mod window;
