//! hwloc loads only the plugins and components the source needs (issue 22 item 9,
//! crates/topo/src/discover/components.rs), as hwloc itself reports them with its
//! verbose variables; `TDMAP_HWLOC_ALL_PLUGINS=1` gives hwloc's defaults back.

use std::path::Path;
use std::process::Command;

/// hwloc's plugin folder on Debian 12; the checks that need a plugin file skip the
/// plugins that are not installed (libhwloc-plugins is only recommended).
const PLUGINS: &str = "/usr/lib/x86_64-linux-gnu/hwloc";

fn installed(plugin: &str) -> bool {
    Path::new(PLUGINS).join(format!("{plugin}.so")).exists()
}

/// hwloc's own account (stderr) of `tdmap topo args`, with `env` set.
fn hwloc_says(args: &[&str], env: &[(&str, &str)]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_tdmap"))
        .arg("topo")
        .args(args)
        .env("HWLOC_PLUGINS_VERBOSE", "1")
        .env("HWLOC_COMPONENTS_VERBOSE", "1")
        .env_remove("HWLOC_PLUGINS_BLACKLIST")
        .env_remove("HWLOC_COMPONENTS")
        .env_remove("TDMAP_HWLOC_ALL_PLUGINS")
        .envs(env.iter().copied())
        .output()
        .expect("tdmap runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn loaded(said: &str, plugin: &str) -> bool {
    said.contains(&format!("Plugin descriptor `{plugin}' ready"))
}

#[test]
fn a_preset_loads_no_plugin() {
    let said = hwloc_says(&["-m", "xeon-x7550-4s"], &[]);
    for p in ["hwloc_pci", "hwloc_opencl", "hwloc_gl", "hwloc_xml_libxml"] {
        assert!(!loaded(&said, p), "{p} loaded for a preset:\n{said}");
    }
    let all = hwloc_says(
        &["-m", "xeon-x7550-4s"],
        &[("TDMAP_HWLOC_ALL_PLUGINS", "1")],
    );
    for p in ["hwloc_pci", "hwloc_xml_libxml"]
        .into_iter()
        .filter(|p| installed(p))
    {
        assert!(
            loaded(&all, p),
            "{p} not loaded with TDMAP_HWLOC_ALL_PLUGINS=1:\n{all}"
        );
    }
}

/// libxml2's reader stays for XML files: its messages name a damaged file's fault.
#[test]
fn an_xml_file_keeps_libxml_only() {
    let xml = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/machines/vm-1n2c.xml");
    let said = hwloc_says(&["-m", xml.to_str().unwrap()], &[]);
    assert!(!loaded(&said, "hwloc_pci"), "{said}");
    if installed("hwloc_xml_libxml") {
        assert!(loaded(&said, "hwloc_xml_libxml"), "{said}");
    }
}

/// On the live machine linux's sysfs gives everything tdmap reads; x86's cpuid
/// annotations are left out, and a user's own HWLOC_COMPONENTS is kept.
#[test]
fn the_live_machine_runs_without_the_x86_component() {
    let final_list = |said: &str| {
        said.lines()
            .find(|l| l.contains("Final list of enabled discovery components"))
            .unwrap_or_else(|| panic!("no component list in:\n{said}"))
            .to_string()
    };
    let ours = final_list(&hwloc_says(&[], &[]));
    assert!(ours.contains("linux") && !ours.contains("x86"), "{ours}");
    let all = final_list(&hwloc_says(&[], &[("TDMAP_HWLOC_ALL_PLUGINS", "1")]));
    assert!(all.contains("x86"), "{all}");
    let users = final_list(&hwloc_says(&[], &[("HWLOC_COMPONENTS", "linux,x86")]));
    assert!(users.contains("x86"), "{users}");
}
