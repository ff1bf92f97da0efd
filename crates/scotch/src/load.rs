//! libscotch, opened at its first use rather than linked: only `drb` needs it, and
//! linking it made every tdmap process load and relocate it with its four dependencies
//! (libscotcherr, libz, libbz2, liblzma), about 0.25 ms of CPU on each start-up, more
//! than a `tdmap map` of 64 threads spends mapping (`make bench-startup`, issue 22).
//!
//! The types and constants still come from `scotch-sys` (bindgen on the installed
//! `scotch.h`, so the opaque structures have this build's sizes); only the functions are
//! looked up with `dlsym`. No function of `scotch-sys` is referenced outside tests, so the
//! linker (rustc passes `--as-needed`) records no dependency on libscotch: the test
//! `tests/lazy.rs` checks that it is absent from the process until the first mapping.

use crate::ScotchError;
use scotch_sys as s;
use std::ffi::{c_int, c_void, CStr, CString};
use std::sync::OnceLock;

/// Declares the libscotch functions tdmap calls, with the header's signatures (a unit
/// test checks each against `scotch-sys`), and resolves them all from one handle.
macro_rules! api {
    ($($name:ident: fn($($arg:ty),*) $(-> $ret:ty)?;)*) => {
        /// The libscotch functions tdmap calls, resolved from the opened library.
        #[allow(non_snake_case)]
        pub(crate) struct Api {
            $(pub(crate) $name: unsafe extern "C" fn($($arg),*) $(-> $ret)?,)*
        }

        impl Api {
            /// Every function from `handle`, or the first one missing.
            fn resolve(handle: *mut c_void, lib: &str) -> Result<Api, ScotchError> {
                Ok(Api {
                    $($name: {
                        let sym = symbol(handle, lib, concat!(stringify!($name), "\0"))?;
                        // SAFETY: `sym` is the non-null address of the libscotch function
                        // of this name, whose C signature is the one declared here
                        // (checked against scotch-sys's bindings by a unit test).
                        unsafe {
                            std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*) $(-> $ret)?>(sym)
                        }
                    },)*
                })
            }
        }

        /// Fails to compile if a declared signature differs from scotch.h's.
        #[cfg(test)]
        #[allow(dead_code)]
        fn signatures_match_the_header() {
            $(let _: unsafe extern "C" fn($($arg),*) $(-> $ret)? = s::$name;)*
        }
    };
}

api! {
    SCOTCH_contextInit: fn(*mut s::SCOTCH_Context) -> c_int;
    SCOTCH_contextOptionSetNum: fn(*mut s::SCOTCH_Context, c_int, s::SCOTCH_Num) -> c_int;
    SCOTCH_contextRandomClone: fn(*mut s::SCOTCH_Context) -> c_int;
    SCOTCH_contextRandomSeed: fn(*mut s::SCOTCH_Context, s::SCOTCH_Num);
    SCOTCH_contextThreadSpawn: fn(*mut s::SCOTCH_Context, c_int, *const c_int) -> c_int;
    SCOTCH_contextBindGraph: fn(*mut s::SCOTCH_Context, *const s::SCOTCH_Graph, *mut s::SCOTCH_Graph) -> c_int;
    SCOTCH_contextExit: fn(*mut s::SCOTCH_Context);
    SCOTCH_archInit: fn(*mut s::SCOTCH_Arch) -> c_int;
    SCOTCH_archTleaf: fn(*mut s::SCOTCH_Arch, s::SCOTCH_Num, *const s::SCOTCH_Num, *const s::SCOTCH_Num) -> c_int;
    SCOTCH_archExit: fn(*mut s::SCOTCH_Arch);
    SCOTCH_graphInit: fn(*mut s::SCOTCH_Graph) -> c_int;
    SCOTCH_graphBuild: fn(*mut s::SCOTCH_Graph, s::SCOTCH_Num, s::SCOTCH_Num, *const s::SCOTCH_Num, *const s::SCOTCH_Num, *const s::SCOTCH_Num, *const s::SCOTCH_Num, s::SCOTCH_Num, *const s::SCOTCH_Num, *const s::SCOTCH_Num) -> c_int;
    SCOTCH_graphMap: fn(*mut s::SCOTCH_Graph, *const s::SCOTCH_Arch, *mut s::SCOTCH_Strat, *mut s::SCOTCH_Num) -> c_int;
    SCOTCH_graphExit: fn(*mut s::SCOTCH_Graph);
    SCOTCH_stratInit: fn(*mut s::SCOTCH_Strat) -> c_int;
    SCOTCH_stratGraphMapBuild: fn(*mut s::SCOTCH_Strat, s::SCOTCH_Num, s::SCOTCH_Num, f64) -> c_int;
    SCOTCH_stratExit: fn(*mut s::SCOTCH_Strat);
}

/// The shared library that matches the header tdmap was built with: its soname carries
/// the version and release (`libscotch-7.0.so`), so an ABI-incompatible Scotch is not
/// picked up. `TDMAP_LIBSCOTCH` names another file (tests use it for a missing one).
pub fn library_name() -> String {
    std::env::var("TDMAP_LIBSCOTCH")
        .unwrap_or_else(|_| format!("libscotch-{}.{}.so", s::SCOTCH_VERSION, s::SCOTCH_RELEASE))
}

/// libscotch's functions, opening the library on the first call; the outcome, success or
/// failure, is kept for the life of the process.
pub(crate) fn api() -> Result<&'static Api, ScotchError> {
    static API: OnceLock<Result<Api, ScotchError>> = OnceLock::new();
    API.get_or_init(open).as_ref().map_err(Clone::clone)
}

fn open() -> Result<Api, ScotchError> {
    let lib = library_name();
    let missing = |reason: String| ScotchError::Missing {
        lib: lib.clone(),
        reason,
    };
    let name = CString::new(lib.as_str()).map_err(|_| missing("NUL in the name".into()))?;
    // SAFETY: `name` is a NUL-terminated string that outlives the call. The handle is
    // never closed, so the functions resolved from it stay valid for the process's life.
    let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        return Err(missing(dl_error()));
    }
    Api::resolve(handle, &lib)
}

/// The address of `name` (NUL-terminated) in the library `handle`.
fn symbol(handle: *mut c_void, lib: &str, name: &str) -> Result<*mut c_void, ScotchError> {
    // SAFETY: `handle` is an open dlopen handle and `name` ends with its NUL.
    let sym = unsafe { libc::dlsym(handle, name.as_ptr().cast()) };
    if sym.is_null() {
        return Err(ScotchError::Missing {
            lib: lib.to_string(),
            reason: format!("no symbol {}", name.trim_end_matches('\0')),
        });
    }
    Ok(sym)
}

/// dlerror's message for the last failure of this thread.
fn dl_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string valid until the next dl
    // call on this thread; it is copied at once.
    let msg = unsafe { libc::dlerror() };
    if msg.is_null() {
        return "unknown dlopen error".into();
    }
    // SAFETY: non-null, NUL-terminated, as above.
    unsafe { CStr::from_ptr(msg) }
        .to_string_lossy()
        .into_owned()
}
