//! Library-call interceptors, as sanitizers have them: `memcpy`, `memset`, the string
//! functions and their `_chk` forms defined in the program itself, so the program's
//! calls (and its libraries' calls through the PLT) land here. Each records the byte
//! ranges the call reads and writes ([`record_range`]: one record per line), then
//! calls libc's function, found with `dlsym(RTLD_NEXT)`.
//!
//! Why: neither clang's callbacks nor gcc's `-fsanitize=thread` see inside libc, so a
//! thread that `memcpy`s another thread's data would otherwise share nothing with it.
//! libc's own internal calls use hidden aliases and stay unrecorded. The runtime's own
//! copies (Rust lowers large moves to `memcpy`) are forwarded without recording
//! ([`in_runtime`]), and so is everything while the runtime is off.

use crate::next::symbol;
use crate::state::{in_runtime, record_range};
use libc::{c_char, c_int, c_void, size_t};
use std::sync::atomic::AtomicUsize;

/// libc's function `$name` as type `$ty`, looked up once; only inside `unsafe`, whose
/// SAFETY comment covers the transmute (libc's function of that name has that type).
macro_rules! real {
    ($name:literal, $ty:ty) => {{
        static CACHE: AtomicUsize = AtomicUsize::new(0);
        std::mem::transmute::<usize, $ty>(resolve(&CACHE, $name))
    }};
}

/// The address of libc's `name`; without it there is no correct way to go on.
fn resolve(cache: &AtomicUsize, name: &std::ffi::CStr) -> usize {
    let f = symbol(cache, name);
    if f == 0 {
        // SAFETY: abort has no preconditions.
        unsafe { libc::abort() }
    }
    f
}

/// Records a read of `n` bytes at `p` and/or a write of `m` bytes at `q`, unless the
/// runtime is off or this is its own call.
fn note(read: (*const c_void, usize), write: (*const c_void, usize)) {
    if in_runtime() {
        return;
    }
    record_range(read.0 as u64, read.1, false);
    record_range(write.0 as u64, write.1, true);
}

const NONE: (*const c_void, usize) = (std::ptr::null(), 0);

/// The length of `s`, with libc's strlen (never recorded).
fn len(s: *const c_char) -> usize {
    type F = unsafe extern "C" fn(*const c_char) -> size_t;
    // SAFETY: callers pass the NUL-terminated string the intercepted call was given.
    unsafe { real!(c"strlen", F)(s) }
}

/// The length of `s`, at most `n`, with libc's strnlen.
fn nlen(s: *const c_char, n: usize) -> usize {
    type F = unsafe extern "C" fn(*const c_char, size_t) -> size_t;
    // SAFETY: as for `len`, within `n` bytes.
    unsafe { real!(c"strnlen", F)(s, n) }
}

type Copy = unsafe extern "C" fn(*mut c_void, *const c_void, size_t) -> *mut c_void;
type CopyChk = unsafe extern "C" fn(*mut c_void, *const c_void, size_t, size_t) -> *mut c_void;

/// Intercepted `memcpy`: reads `n` bytes at `s`, writes `n` at `d`.
///
/// # Safety
/// libc's contract.
#[no_mangle]
pub unsafe extern "C" fn memcpy(d: *mut c_void, s: *const c_void, n: size_t) -> *mut c_void {
    note((s, n), (d, n));
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real!(c"memcpy", Copy)(d, s, n) }
}

/// Intercepted `memmove`, recorded as `memcpy`.
///
/// # Safety
/// libc's contract.
#[no_mangle]
pub unsafe extern "C" fn memmove(d: *mut c_void, s: *const c_void, n: size_t) -> *mut c_void {
    note((s, n), (d, n));
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real!(c"memmove", Copy)(d, s, n) }
}

/// Intercepted `memset`: writes `n` bytes at `d`.
///
/// # Safety
/// libc's contract.
#[no_mangle]
pub unsafe extern "C" fn memset(d: *mut c_void, c: c_int, n: size_t) -> *mut c_void {
    note(NONE, (d, n));
    type F = unsafe extern "C" fn(*mut c_void, c_int, size_t) -> *mut c_void;
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real!(c"memset", F)(d, c, n) }
}

/// Intercepted `__memcpy_chk` (`_FORTIFY_SOURCE`).
///
/// # Safety
/// libc's contract.
#[no_mangle]
pub unsafe extern "C" fn __memcpy_chk(
    d: *mut c_void,
    s: *const c_void,
    n: size_t,
    dn: size_t,
) -> *mut c_void {
    note((s, n), (d, n));
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real!(c"__memcpy_chk", CopyChk)(d, s, n, dn) }
}

/// Intercepted `__memmove_chk`.
///
/// # Safety
/// libc's contract.
#[no_mangle]
pub unsafe extern "C" fn __memmove_chk(
    d: *mut c_void,
    s: *const c_void,
    n: size_t,
    dn: size_t,
) -> *mut c_void {
    note((s, n), (d, n));
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real!(c"__memmove_chk", CopyChk)(d, s, n, dn) }
}

/// Intercepted `__memset_chk`.
///
/// # Safety
/// libc's contract.
#[no_mangle]
pub unsafe extern "C" fn __memset_chk(
    d: *mut c_void,
    c: c_int,
    n: size_t,
    dn: size_t,
) -> *mut c_void {
    note(NONE, (d, n));
    type F = unsafe extern "C" fn(*mut c_void, c_int, size_t, size_t) -> *mut c_void;
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real!(c"__memset_chk", F)(d, c, n, dn) }
}

/// Intercepted `memcmp`: reads `n` bytes of each side (libc may stop earlier).
///
/// # Safety
/// libc's contract.
#[no_mangle]
pub unsafe extern "C" fn memcmp(a: *const c_void, b: *const c_void, n: size_t) -> c_int {
    note((a, n), NONE);
    note((b, n), NONE);
    type F = unsafe extern "C" fn(*const c_void, *const c_void, size_t) -> c_int;
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real!(c"memcmp", F)(a, b, n) }
}

/// Intercepted `strlen`: reads the string and its NUL.
///
/// # Safety
/// libc's contract.
#[no_mangle]
pub unsafe extern "C" fn strlen(s: *const c_char) -> size_t {
    let n = len(s);
    note((s.cast(), n + 1), NONE);
    n
}

/// Intercepted `strnlen`: reads up to `max` bytes.
///
/// # Safety
/// libc's contract.
#[no_mangle]
pub unsafe extern "C" fn strnlen(s: *const c_char, max: size_t) -> size_t {
    let n = nlen(s, max);
    note((s.cast(), (n + 1).min(max)), NONE);
    n
}

/// Intercepted `strcpy`: reads `s` with its NUL, writes as much at `d`.
///
/// # Safety
/// libc's contract.
#[no_mangle]
pub unsafe extern "C" fn strcpy(d: *mut c_char, s: *const c_char) -> *mut c_char {
    let n = len(s) + 1;
    note((s.cast(), n), (d.cast(), n));
    type F = unsafe extern "C" fn(*mut c_char, *const c_char) -> *mut c_char;
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real!(c"strcpy", F)(d, s) }
}

/// Intercepted `strncpy`: reads up to `n` bytes of `s`, writes all `n` at `d` (padding).
///
/// # Safety
/// libc's contract.
#[no_mangle]
pub unsafe extern "C" fn strncpy(d: *mut c_char, s: *const c_char, n: size_t) -> *mut c_char {
    let r = (nlen(s, n) + 1).min(n);
    note((s.cast(), r), (d.cast(), n));
    type F = unsafe extern "C" fn(*mut c_char, *const c_char, size_t) -> *mut c_char;
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real!(c"strncpy", F)(d, s, n) }
}

/// Intercepted `strcat`: reads both strings, writes `s` and a NUL at the end of `d`.
///
/// # Safety
/// libc's contract.
#[no_mangle]
pub unsafe extern "C" fn strcat(d: *mut c_char, s: *const c_char) -> *mut c_char {
    let (dl, sl) = (len(d), len(s) + 1);
    note((d.cast(), dl + 1), NONE);
    // SAFETY: `d + dl` is `d`'s NUL, inside the caller's buffer.
    note((s.cast(), sl), (unsafe { d.add(dl) }.cast(), sl));
    type F = unsafe extern "C" fn(*mut c_char, *const c_char) -> *mut c_char;
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real!(c"strcat", F)(d, s) }
}

/// Intercepted `strncat`: as `strcat`, with at most `n` bytes of `s`.
///
/// # Safety
/// libc's contract.
#[no_mangle]
pub unsafe extern "C" fn strncat(d: *mut c_char, s: *const c_char, n: size_t) -> *mut c_char {
    let (dl, sl) = (len(d), nlen(s, n));
    note((d.cast(), dl + 1), NONE);
    // SAFETY: `d + dl` is `d`'s NUL, inside the caller's buffer.
    note((s.cast(), sl), (unsafe { d.add(dl) }.cast(), sl + 1));
    type F = unsafe extern "C" fn(*mut c_char, *const c_char, size_t) -> *mut c_char;
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real!(c"strncat", F)(d, s, n) }
}

/// Intercepted `strcmp`: reads both strings up to the shorter one's NUL (an upper bound
/// of what libc compares, as AddressSanitizer's interceptor checks).
///
/// # Safety
/// libc's contract.
#[no_mangle]
pub unsafe extern "C" fn strcmp(a: *const c_char, b: *const c_char) -> c_int {
    let n = len(a).min(len(b)) + 1;
    note((a.cast(), n), NONE);
    note((b.cast(), n), NONE);
    type F = unsafe extern "C" fn(*const c_char, *const c_char) -> c_int;
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real!(c"strcmp", F)(a, b) }
}

/// Intercepted `strncmp`: as `strcmp`, within `n` bytes.
///
/// # Safety
/// libc's contract.
#[no_mangle]
pub unsafe extern "C" fn strncmp(a: *const c_char, b: *const c_char, n: size_t) -> c_int {
    let m = (nlen(a, n).min(nlen(b, n)) + 1).min(n);
    note((a.cast(), m), NONE);
    note((b.cast(), m), NONE);
    type F = unsafe extern "C" fn(*const c_char, *const c_char, size_t) -> c_int;
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real!(c"strncmp", F)(a, b, n) }
}

/// Intercepted `strchr`: reads up to the match, or the whole string.
///
/// # Safety
/// libc's contract.
#[no_mangle]
pub unsafe extern "C" fn strchr(s: *const c_char, c: c_int) -> *mut c_char {
    type F = unsafe extern "C" fn(*const c_char, c_int) -> *mut c_char;
    // SAFETY: the caller's arguments, unchanged.
    let r = unsafe { real!(c"strchr", F)(s, c) };
    let n = if r.is_null() {
        len(s) + 1
    } else {
        r as usize - s as usize + 1
    };
    note((s.cast(), n), NONE);
    r
}

/// Intercepted `strrchr`: reads the whole string.
///
/// # Safety
/// libc's contract.
#[no_mangle]
pub unsafe extern "C" fn strrchr(s: *const c_char, c: c_int) -> *mut c_char {
    note((s.cast(), len(s) + 1), NONE);
    type F = unsafe extern "C" fn(*const c_char, c_int) -> *mut c_char;
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real!(c"strrchr", F)(s, c) }
}

/// Intercepted `memchr`: reads up to the match, or all `n` bytes.
///
/// # Safety
/// libc's contract.
#[no_mangle]
pub unsafe extern "C" fn memchr(s: *const c_void, c: c_int, n: size_t) -> *mut c_void {
    type F = unsafe extern "C" fn(*const c_void, c_int, size_t) -> *mut c_void;
    // SAFETY: the caller's arguments, unchanged.
    let r = unsafe { real!(c"memchr", F)(s, c, n) };
    let m = if r.is_null() {
        n
    } else {
        r as usize - s as usize + 1
    };
    note((s, m), NONE);
    r
}

/// Intercepted `strdup`: reads the string; the copy is fresh memory written by libc.
///
/// # Safety
/// libc's contract.
#[no_mangle]
pub unsafe extern "C" fn strdup(s: *const c_char) -> *mut c_char {
    type F = unsafe extern "C" fn(*const c_char) -> *mut c_char;
    // SAFETY: the caller's arguments, unchanged.
    let r = unsafe { real!(c"strdup", F)(s) };
    let n = len(s) + 1;
    note(
        (s.cast(), n),
        (r.cast_const().cast(), if r.is_null() { 0 } else { n }),
    );
    r
}
