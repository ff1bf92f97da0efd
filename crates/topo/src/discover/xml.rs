//! Machines from hwloc XML exports (`lstopo machine.xml`).
//!
//! hwloc parses the file in tdmap's own process, and hwloc 2.9 (Debian 12's) dies of
//! SIGSEGV on some damaged files: renaming the Machine object's `complete_cpuset`
//! attribute is enough (`tests/fixtures/damaged/crashes-hwloc-2.9.xml`), and `lstopo`
//! crashes on it too. So each file is first loaded by hwloc in a forked child
//! ([`tdmap_sys::run_isolated`]); only a file the child read without crashing is loaded
//! here. Files of hwloc's XML 3.0 format, which hwloc 2.x refuses, are recognised first.

use super::hwloc;
use crate::{TopoError, Topology};
use std::path::Path;
use std::time::Duration;
use tdmap_sys::ChildEnd;

/// The hwloc tdmap is built and tested with, named in the message about a crash.
const HWLOC: &str = "hwloc 2.9";

/// How long the child may take to read a file; a machine export loads in milliseconds.
const LOAD_TIMEOUT: Duration = Duration::from_secs(60);

/// A machine from an hwloc XML export (`lstopo machine.xml`).
pub fn from_xml_file(path: &Path) -> Result<Topology, TopoError> {
    let bad = |why: String| TopoError::Xml {
        path: path.to_path_buf(),
        why,
    };
    if !path.is_file() {
        return Err(bad("no such file".into()));
    }
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    if !text.trim_start().starts_with("<?xml") && !text.trim_start().starts_with("<topology") {
        return Err(bad("not an XML document".into()));
    }
    if let Some(v) = format_version(&text).filter(|v| major(v) >= 3) {
        return Err(bad(format!(
            "it is in the XML format {v} of hwloc 3 (hwloc's development branch), which \
             {HWLOC} cannot read, so run an hwloc 2.x lstopo"
        )));
    }
    let _hwloc = super::hwloc_lock();
    super::components::select(super::Source::Xml);
    probe(path, &text)?;
    let topo = load(&text).map_err(|_| bad("hwloc rejected its content".into()))?;
    hwloc::convert(&topo, &path.display().to_string())
}

fn load(text: &str) -> Result<hwlocality::Topology, ()> {
    hwlocality::Topology::builder()
        .from_xml(text)
        .map_err(drop)?
        .build()
        .map_err(drop)
}

/// Loads `text` with hwloc in a child process (the caller holds the hwloc lock, which the
/// child inherits held: it calls hwloc without taking it): Ok when hwloc read it, an error naming the
/// crash, the refusal or the time-out otherwise, with hwloc's last message.
fn probe(path: &Path, text: &str) -> Result<(), TopoError> {
    // In the child only, hwloc says why it refuses a file or what it skipped, which names
    // the damage (e.g. "ignoring unknown object attribute complete_cpuzet").
    let verbose = [(c"HWLOC_XML_VERBOSE", c"1")];
    let child = tdmap_sys::run_isolated(LOAD_TIMEOUT, &verbose, || match load(text) {
        Ok(_) => 0,
        Err(()) => 1,
    });
    let child = child.map_err(|e| TopoError::Xml {
        path: path.to_path_buf(),
        why: format!("cannot start a process to read it: {e}"),
    })?;
    // hwloc's (or libxml2's) first message names the first damage; libxml2 follows each
    // with the offending line and a `^` under the column, which say less on one line.
    let first = child
        .stderr
        .lines()
        .map(str::trim)
        .find(|l| l.chars().filter(|c| c.is_alphabetic()).count() > 3);
    let said = match first.map(unprefixed) {
        Some(line) => format!(" after hwloc said {line:?}"),
        None => String::new(),
    };
    let why = match child.end {
        ChildEnd::Exited(0) => return Ok(()),
        ChildEnd::Exited(_) => {
            return Err(TopoError::Xml {
                path: path.to_path_buf(),
                why: format!("hwloc rejected its content{said}"),
            })
        }
        ChildEnd::Signaled(sig) => format!(
            "{} while loading it{said}",
            tdmap_sys::isolate::signal_name(sig)
        ),
        ChildEnd::TimedOut => format!(
            "it was still loading after {} s{said}",
            LOAD_TIMEOUT.as_secs()
        ),
    };
    Err(TopoError::HwlocCrashed {
        path: path.to_path_buf(),
        why,
        hwloc: HWLOC,
    })
}

/// hwloc's message without the name it gives a file loaded from memory: `xmlbuffer: x`
/// becomes `x`, and libxml2's `:2: parser error : x` becomes `line 2: parser error : x`.
fn unprefixed(line: &str) -> String {
    let line = line.strip_prefix("xmlbuffer").unwrap_or(line);
    match line.strip_prefix(':').map(|l| l.split_once(':')) {
        Some(Some((n, rest))) if n.parse::<u32>().is_ok() => format!("line {n}:{rest}"),
        Some(_) => line[1..].trim_start().to_string(),
        None => line.to_string(),
    }
}

/// The `version` attribute of the `<topology>` element, if any.
fn format_version(text: &str) -> Option<&str> {
    let start = text.find("<topology")?;
    let tag = &text[start..];
    let tag = &tag[..tag.find('>')?];
    let at = tag.find("version=")? + "version=".len();
    let quote = tag[at..]
        .chars()
        .next()
        .filter(|c| *c == '"' || *c == '\'')?;
    let value = &tag[at + 1..];
    Some(&value[..value.find(quote)?])
}

fn major(version: &str) -> u32 {
    let digits: String = version.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_version_is_read_from_the_topology_element() {
        let v2 = "<?xml version=\"1.0\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n<topology version=\"2.0\">";
        assert_eq!(format_version(v2), Some("2.0"));
        assert_eq!(
            format_version("<topology version='3.0'><object"),
            Some("3.0")
        );
        assert_eq!(format_version("<topology><object version=\"3\">"), None);
        assert_eq!(major("3.0"), 3);
        assert_eq!(unprefixed("xmlbuffer: ignoring x"), "ignoring x");
        assert_eq!(
            unprefixed(":2: parser error : y"),
            "line 2: parser error : y"
        );
    }

    #[test]
    fn an_xml_3_file_is_named_as_such() {
        let dir = std::env::temp_dir().join(format!("tdmap-xml3-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("m.xml");
        std::fs::write(
            &f,
            "<?xml version=\"1.0\"?>\n<topology version=\"3.0\">\n</topology>\n",
        )
        .unwrap();
        let err = from_xml_file(&f).unwrap_err().to_string();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(err.contains("format 3.0"), "{err}");
        assert!(err.contains("an hwloc 2.x lstopo"), "{err}");
    }

    /// Regression: this file (one attribute of the Machine object renamed) made hwloc
    /// 2.9 die of SIGSEGV inside tdmap's own process.
    #[test]
    fn a_file_that_crashes_hwloc_is_an_error_not_a_crash() {
        let f = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/damaged/crashes-hwloc-2.9.xml");
        let err = from_xml_file(&f).unwrap_err();
        assert!(matches!(err, TopoError::HwlocCrashed { .. }), "{err}");
        assert!(err.to_string().contains("SIGSEGV"), "{err}");
    }
}
