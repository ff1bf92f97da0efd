//! Which hwloc plugins each source loads: only those it can use.
//!
//! Debian's hwloc 2.9 opens every plugin of `/usr/lib/x86_64-linux-gnu/hwloc/` when a
//! topology is first initialised, whatever the source: `hwloc_gl` (X11, NVCtrl),
//! `hwloc_opencl` (libOpenCL), `hwloc_pci` (libpciaccess) and `hwloc_xml_libxml`
//! (libxml2 and ICU). Relocating those libraries cost more CPU than the rest of a
//! `tdmap map` of 64 threads (`make bench-startup`). tdmap never asks for I/O objects
//! (hwloc 2 filters them out by default), so the I/O plugins are never needed; libxml2
//! is needed only to read an XML file, where it gives the messages that name a damaged
//! file's fault (`xml.rs`). Of the components built into libhwloc, `x86` is the one that
//! costs: on the live machine it runs after `linux` and only annotates what linux's
//! sysfs already gave (CPU vendor and model strings, which tdmap does not read), with
//! dozens of `cpuid` instructions, each a trap to the hypervisor in a virtual machine.
//! Synthetic and XML sources exclude it themselves.
//!
//! The choice goes through hwloc's `HWLOC_PLUGINS_BLACKLIST` and `HWLOC_COMPONENTS`,
//! read when a topology is initialised (plugins: at the first `hwloc_topology_init`
//! while no other topology is alive, which holds here since every topology is converted
//! and dropped under the hwloc lock). A user's own value of either is kept;
//! `TDMAP_HWLOC_ALL_PLUGINS=1` loads every plugin and component as hwloc does by default
//! (the comparison `make bench-startup` prints).

use std::sync::OnceLock;

/// hwloc's plugins that discover I/O devices, which tdmap never reads.
const IO_PLUGINS: &[&str] = &[
    "hwloc_pci",
    "hwloc_opencl",
    "hwloc_gl",
    "hwloc_cuda",
    "hwloc_nvml",
    "hwloc_rsmi",
    "hwloc_levelzero",
];

/// The libxml2-based XML reader, needed only for XML files.
const LIBXML: &str = "hwloc_xml_libxml";

/// hwloc's variable naming plugins not to load.
const BLACKLIST_VAR: &str = "HWLOC_PLUGINS_BLACKLIST";

/// hwloc's variable choosing discovery components; `-NAME` leaves one out.
const COMPONENTS_VAR: &str = "HWLOC_COMPONENTS";

/// The built-in components no source needs (see the module's comment).
const NOT_NEEDED: &str = "-x86";

/// Set to 1, every plugin is loaded as hwloc does by default.
const ALL_PLUGINS_VAR: &str = "TDMAP_HWLOC_ALL_PLUGINS";

/// What a topology is built from, which decides the plugins it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// The machine tdmap runs on (hwloc's built-in linux and x86 components).
    Live,
    /// An hwloc synthetic string (built-in).
    Synthetic,
    /// An hwloc XML export (libxml2's reader, for its messages).
    Xml,
}

/// The plugins `source` does not need, as hwloc's blacklist.
fn blacklist(source: Source) -> String {
    let mut names = IO_PLUGINS.to_vec();
    if source != Source::Xml {
        names.push(LIBXML);
    }
    names.join(",")
}

/// Which of hwloc's two variables tdmap sets: those the user did not set before tdmap
/// started (read once, before tdmap sets them itself); neither with
/// [`ALL_PLUGINS_VAR`]`=1`.
fn ours() -> (bool, bool) {
    static USERS: OnceLock<(bool, bool)> = OnceLock::new();
    let (plugins, components) = *USERS.get_or_init(|| {
        let set = |v| std::env::var_os(v).is_some();
        (set(BLACKLIST_VAR), set(COMPONENTS_VAR))
    });
    let all = std::env::var_os(ALL_PLUGINS_VAR).is_some_and(|v| v == "1");
    (!plugins && !all, !components && !all)
}

/// Makes the next topology initialised load only the plugins and components `source`
/// needs. Called with the hwloc lock held, before the topology is initialised.
pub(crate) fn select(source: Source) {
    let (plugins, components) = ours();
    if plugins {
        std::env::set_var(BLACKLIST_VAR, blacklist(source));
    }
    if components {
        std::env::set_var(COMPONENTS_VAR, NOT_NEEDED);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_xml_keeps_libxml_and_no_source_loads_io_plugins() {
        assert!(blacklist(Source::Xml).contains("hwloc_pci"));
        assert!(!blacklist(Source::Xml).contains(LIBXML));
        for s in [Source::Live, Source::Synthetic] {
            let b = blacklist(s);
            assert!(b.contains(LIBXML) && b.contains("hwloc_gl"), "{s:?}: {b}");
        }
    }
}
