//! Whether `LD_PRELOAD` can reach a program: the dynamic loader reads it only for a
//! dynamically linked ELF (one with a `PT_INTERP` program header), and ignores paths
//! outside the trusted folders for a set-user-id or set-group-id one. A script is run by
//! its interpreter, usually dynamic, so it counts as preloadable.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// What the loader will do with `LD_PRELOAD` for a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preload {
    /// A dynamic ELF, or a script: the preloaded libraries load.
    Yes,
    /// A statically linked ELF: there is no loader.
    Static,
    /// A set-id program: secure mode drops the libraries.
    SetId,
}

const PT_INTERP: u32 = 3;

/// Reads the ELF header and program headers of `path` (a 64-bit little-endian ELF, or
/// anything else, which counts as preloadable).
pub fn preloadable(path: &Path) -> std::io::Result<Preload> {
    let meta = std::fs::metadata(path)?;
    if meta.permissions().mode() & 0o6000 != 0 {
        return Ok(Preload::SetId);
    }
    let mut head = Vec::new();
    std::fs::File::open(path)?
        .take(64 * 1024)
        .read_to_end(&mut head)?;
    Ok(match has_interp(&head) {
        Some(false) => Preload::Static,
        _ => Preload::Yes,
    })
}

/// Some(true) when the ELF in `b` has a `PT_INTERP` header, Some(false) when it has
/// none, None when `b` is not a 64-bit little-endian ELF whose headers it holds.
fn has_interp(b: &[u8]) -> Option<bool> {
    if b.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let u16_at = |o: usize| Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?));
    let phoff = usize::try_from(u64_at(0x20)?).ok()?;
    let (size, count) = (usize::from(u16_at(0x36)?), usize::from(u16_at(0x38)?));
    let mut found = false;
    for i in 0..count {
        found |= u32_at(phoff.checked_add(i.checked_mul(size)?)?)? == PT_INTERP;
    }
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dynamic_program_a_script_and_garbage() {
        assert_eq!(preloadable(Path::new("/bin/sh")).unwrap(), Preload::Yes);
        let own = std::env::current_exe().unwrap();
        assert_eq!(has_interp(&std::fs::read(own).unwrap()), Some(true));
        assert_eq!(has_interp(b"#!/bin/sh\n"), None);
        assert_eq!(has_interp(b"\x7fELF\x02\x01"), None);
    }

    #[test]
    fn an_elf_without_an_interpreter_header_is_static() {
        let mut b = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let phoff = u64::from_le_bytes(b[0x20..0x28].try_into().unwrap()) as usize;
        let (size, count) = (
            u16::from_le_bytes([b[0x36], b[0x37]]) as usize,
            u16::from_le_bytes([b[0x38], b[0x39]]) as usize,
        );
        for i in 0..count {
            let o = phoff + i * size;
            if b[o..o + 4] == PT_INTERP.to_le_bytes() {
                b[o..o + 4].copy_from_slice(&1u32.to_le_bytes());
            }
        }
        assert_eq!(has_interp(&b), Some(false));
    }
}
