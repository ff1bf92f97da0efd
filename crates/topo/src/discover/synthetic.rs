//! Machines from hwloc synthetic strings (`package:2 numa:2 core:4 pu:2`), checked
//! against tdmap's size limits before hwloc sees them.
//!
//! hwloc builds a synthetic machine in time that grows with the square of each level's
//! arity and, through one cpuset per object, with objects × PUs. Measured on the 2-core
//! development VM (hwloc 2.9): `pu:1024` loads in 0.2 s, `pu:4096` in 2 s, `pu:16384` in
//! 46 s, `core:16 pu:1024` in 2.7 s, and `package:64 core:256 pu:4` (65,536 PUs) in 21 s
//! with 1.1 GB of memory; `core:1000 pu:1000` and `pu:4294967295` ran past a minute at
//! 100 % CPU. The limits below keep every accepted string within a few seconds.

use super::hwloc;
use crate::{TopoError, Topology};
use hwlocality::topology::builder::BuildFlags;

/// The most PUs a synthetic machine may have in total (2^14): four times the largest
/// single-image machines (a 32-socket x86 server has under 4096 hardware threads).
pub const MAX_PUS: u64 = 1 << 14;

/// The most children one object of a synthetic machine may have at any level.
pub const MAX_ARITY: u64 = 1024;

/// A machine from an hwloc synthetic description, e.g. `package:2 numa:2 core:4 pu:2`.
/// hwloc wants PUs last; a string that stops above them gets one PU per core. A string
/// over [`MAX_PUS`] PUs or with an arity over [`MAX_ARITY`] is refused before hwloc runs.
pub fn from_synthetic(spec: &str) -> Result<Topology, TopoError> {
    let bad = |why: String| TopoError::Synthetic {
        spec: spec.to_string(),
        why,
    };
    check_size(spec)?;
    let _hwloc = super::hwloc_lock();
    super::components::select(super::Source::Synthetic);
    let last = spec.split_whitespace().last().unwrap_or("");
    let full = if last.to_ascii_lowercase().starts_with("pu:") {
        spec.to_string()
    } else {
        format!("{spec} pu:1")
    };
    let topo = hwlocality::Topology::builder()
        .from_synthetic(&full)
        .map_err(|_| bad("hwloc rejected it".into()))?
        .with_flags(BuildFlags::empty())
        .map_err(|e| bad(e.to_string()))?
        .build()
        .map_err(|e| bad(e.to_string()))?;
    hwloc::convert(&topo, spec)
}

/// Refuses a string whose machine is too big for hwloc to build quickly. Levels are
/// `type:arity` or bare arities, optionally followed by `(attributes)`, and hwloc needs
/// no blank between two levels (`core:2pu:2`); memory children in brackets
/// (`[numa(memory=4GiB)]`) add no PUs. So every number after a `:` and every number that
/// starts a word counts (attributes have theirs after `=`), read as hwloc reads it (C's
/// `strtoul` with base 0: `0x400` is hex, `0400` octal, a sign allowed) so that no
/// spelling of a big number gets past. Returns the PUs counted (hwloc builds no more).
pub fn check_size(spec: &str) -> Result<u64, TopoError> {
    let too_big = |what: String| TopoError::TooBig {
        spec: spec.to_string(),
        what,
    };
    let mut pus: u64 = 1;
    let mut prev = ' ';
    for (i, c) in spec.char_indices() {
        let word_start = prev.is_whitespace() || matches!(prev, '[' | ']' | ')');
        let at = match c {
            ':' => i + 1,
            '0'..='9' | '+' | '-' if word_start => i,
            _ => {
                prev = c;
                continue;
            }
        };
        prev = c;
        let Some((written, arity)) = strtoul(&spec[at..]) else {
            continue;
        };
        if arity > MAX_ARITY {
            let kind: String = spec[..at]
                .chars()
                .rev()
                .take_while(|c| c.is_alphanumeric() || *c == ':')
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            let count = match arity {
                u64::MAX => "too many".to_string(),
                n => n.to_string(),
            };
            return Err(too_big(format!(
                "{kind}{written} gives each parent {count} children"
            )));
        }
        // A 0 that hwloc may never read (it can skip to a later colon) must not hide the rest.
        pus = pus.saturating_mul(arity.max(1));
    }
    if pus > MAX_PUS {
        return Err(too_big(format!("it has {pus} PUs")));
    }
    Ok(pus)
}

/// The number at the start of `s` as C's `strtoul(s, _, 0)` reads it, with the text it
/// spans: `0x` or `0X` then hex digits, `0` then octal digits, else decimal; a leading
/// `-` negates modulo 2^64 (so `-1` is huge) and overflow saturates. None: no digits.
fn strtoul(s: &str) -> Option<(&str, u64)> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = body.to_ascii_lowercase();
    let hex_digits = lower
        .strip_prefix("0x")
        .map(|h| h.bytes().take_while(u8::is_ascii_hexdigit).count());
    let (radix, skip) = match hex_digits {
        Some(n) if n > 0 => (16, 2),
        _ if body.starts_with('0') => (8, 0),
        _ => (10, 0),
    };
    let len = body[skip..]
        .chars()
        .take_while(|c| c.is_digit(radix))
        .count();
    if len == 0 {
        return None;
    }
    let digits = &body[skip..skip + len];
    let v = u64::from_str_radix(digits, radix).unwrap_or(u64::MAX);
    let v = if neg && v != 0 { u64::MAX } else { v };
    Some((&s[..s.len() - body.len() + skip + len], v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machines_over_the_limits_are_refused_before_hwloc() {
        for (spec, needle) in [
            ("core:1000 pu:1000", "1000000 PUs"),
            ("numa:1000000", "numa:1000000"),
            ("pu:4294967295", "pu:4294967295"),
            ("pu:99999999999999999999999", "1024 children per object"),
            ("package:16 core:32 pu:64", "32768 PUs"),
            ("pu:0x10000", "pu:0x10000 gives each parent 65536 children"),
        ] {
            let err = from_synthetic(spec).unwrap_err().to_string();
            assert!(err.contains(needle), "{spec}: {err}");
            assert!(err.contains("limits are 16384 PUs"), "{spec}: {err}");
        }
    }

    /// `pu:0x10000`, `pu:00100000`, `pu:+99999`, `1000 1000 pu:2` and `core:2pu:99999`
    /// got past the check (it read decimal digits after the first colon of each blank-
    /// separated word only) and hwloc ran for minutes on them; the last was found by
    /// `make fuzz`.
    #[test]
    fn arities_in_hex_octal_with_a_sign_or_without_a_type_are_counted() {
        for spec in [
            "pu:0x10000",
            "pu:00100000",
            "pu:+99999",
            "1000 1000 pu:2",
            "core:2[numa]pu:0X800",
            "pu:-1",
        ] {
            let err = check_size(spec).unwrap_err().to_string();
            assert!(err.contains("limits are 16384 PUs"), "{spec}: {err}");
        }
        assert!(check_size("pu:0x10 core:010").is_ok());
    }

    #[test]
    fn machines_at_the_limits_and_presets_pass() {
        assert!(check_size("pu:1024").is_ok());
        assert!(check_size("package:16 core:1024").is_ok());
        assert!(check_size("pack:4 [numa(memory=32GiB)] l3:1(size=18MiB) core:8 pu:2").is_ok());
        assert_eq!(
            from_synthetic("package:2 [numa] core:2").unwrap().num_pus(),
            4
        );
    }
}
