//! libmai: the Minas memory-affinity interface (MAi, Minas §3.1) for C and Fortran, with
//! numarch queries (§3.3) and MApp's automatic policy choice (§3.2).
//!
//! The C API is `include/mai.h` (Fortran: `include/mai.f90`); the artifacts are
//! `libmai.so` and `libmai.a`. Pages are placed with the page → node functions of
//! `tdmap_map::policy` on the live machine of `tdmap_topo`, through the syscalls of
//! `tdmap_sys`. Every exported function checks its pointer against the arrays libmai
//! allocated and reports errors as a return code plus errno (table in mai.h); no panic
//! crosses into C.

pub mod api;
pub mod arrays;
pub mod auto;
pub mod error;
pub mod ffi;
pub mod machine;
pub mod migrate;
pub mod nexttouch;
pub mod numarch;
pub mod place;
pub mod statics;
pub mod threads;

// The workspace's folder guard, so that the unit tests' files go when they end.
#[cfg(test)]
#[path = "../../../tests/common/temp_dir.rs"]
mod temp_dir;

pub use error::MaiError;
