//! Link settings of the `tdmap` binary, for its start-up cost (issue 22 item 9, `make
//! bench-startup`).

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        // Rust's std links the unwinder from libgcc_s, whose constructor
        // (__cpu_indicator_init) runs cpuid a dozen times: each one traps to the
        // hypervisor in a virtual machine, and loading the library and running it cost
        // about 0.1 ms of every tdmap process here. gcc's own `-static-libgcc` uses the
        // static unwinder, libgcc_eh.a, instead. Linked whole, and before std's
        // `-lgcc_s` (a crate's own libraries come first), it defines every `_Unwind_*`
        // symbol, so the linker (`--as-needed`) records no dependency on libgcc_s.
        println!("cargo:rustc-link-lib=static:+whole-archive,-bundle=gcc_eh");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
