//! The program's static arrays for automatic mode. MApp (Minas §3.2) scans the source for
//! "shared static arrays" and places the large ones; without the preprocessor, libmai
//! finds them in the executable: each object of the ELF symbol table (`STT_OBJECT`, so C
//! globals, statics and Fortran COMMON blocks) that lies in a writable loaded segment
//! (.data and .bss, not .rodata), moved to its run-time address by the load bias.
//!
//! The symbol table comes from `/proc/self/exe` (`strip --strip-all` removes it; then
//! there is nothing to place and the log says so); the writable segments and the bias
//! from the loader (`dl_iterate_phdr`'s first object, the main program), which must agree
//! with the file's own program headers, so a program started as `ld.so ./prog` is left
//! alone rather than placed by another file's symbols. Parsing is ELF64 little-endian
//! (x86-64, AArch64) and reads only headers, the symbol table and its strings.

use std::fs::File;
use std::os::unix::fs::FileExt;

/// One static object of the executable, at its run-time address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticArray {
    /// Its symbol name.
    pub name: String,
    /// Run-time address.
    pub addr: usize,
    /// Size in bytes.
    pub len: usize,
}

/// A writable loadable segment, at link-time addresses `[vaddr, vaddr + memsz)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// Link-time start.
    pub vaddr: u64,
    /// Size in memory (file part plus .bss).
    pub memsz: u64,
}

/// Why the executable's static arrays could not be listed.
#[derive(Debug, thiserror::Error)]
pub enum StaticsError {
    /// The executable could not be read.
    #[error("cannot read {path}: {err}")]
    Read {
        /// The file.
        path: String,
        /// The OS error.
        err: std::io::Error,
    },
    /// Not an ELF64 little-endian file, or a header points outside it.
    #[error("{0}: not a readable ELF64 little-endian executable")]
    NotElf(String),
    /// No `.symtab` (stripped): the arrays cannot be told apart.
    #[error("{0} has no symbol table (stripped); static arrays are not placed")]
    NoSymbols(String),
    /// The loader's segments differ from the file's (e.g. started as `ld.so ./prog`).
    #[error("{0} is not the program the loader mapped; static arrays are not placed")]
    NotMain(String),
}

const PT_LOAD: u32 = 1;
const PF_W: u32 = 2;
const SHT_SYMTAB: u32 = 2;
const STT_OBJECT: u8 = 1;

fn u16_at(b: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], o: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?))
}

/// Reads `len` bytes at `off` of an ELF image (a file, or bytes in a test).
pub trait Image {
    /// The bytes `[off, off + len)`, or None if the image is shorter.
    fn bytes(&self, off: u64, len: u64) -> Option<Vec<u8>>;
}

impl Image for File {
    fn bytes(&self, off: u64, len: u64) -> Option<Vec<u8>> {
        // A damaged size must not become a huge allocation (which aborts, not panics).
        if off.checked_add(len)? > self.metadata().ok()?.len() {
            return None;
        }
        let mut v = vec![0; usize::try_from(len).ok()?];
        self.read_exact_at(&mut v, off).ok()?;
        Some(v)
    }
}

impl Image for [u8] {
    fn bytes(&self, off: u64, len: u64) -> Option<Vec<u8>> {
        let s = usize::try_from(off).ok()?;
        let e = s.checked_add(usize::try_from(len).ok()?)?;
        self.get(s..e).map(<[u8]>::to_vec)
    }
}

/// The writable PT_LOAD segments named by an ELF64 image's program headers.
pub fn writable_segments(img: &(impl Image + ?Sized)) -> Option<Vec<Segment>> {
    let h = img.bytes(0, 64)?;
    // e_ident: "\x7fELF", class 2 (64-bit), data 1 (little-endian).
    if h[..4] != *b"\x7fELF" || h[4] != 2 || h[5] != 1 {
        return None;
    }
    let (phoff, phentsize, phnum) = (u64_at(&h, 0x20)?, u16_at(&h, 0x36)?, u16_at(&h, 0x38)?);
    if phentsize < 56 {
        return None;
    }
    let ph = img.bytes(phoff, u64::from(phentsize) * u64::from(phnum))?;
    let segs = ph.chunks(usize::from(phentsize)).filter_map(|p| {
        let (ty, flags) = (u32_at(p, 0)?, u32_at(p, 4)?);
        (ty == PT_LOAD && flags & PF_W != 0).then_some(Segment {
            vaddr: u64_at(p, 0x10)?,
            memsz: u64_at(p, 0x28)?,
        })
    });
    Some(segs.collect())
}

/// The objects of an ELF64 image's symbol table that lie wholly inside `segments`, at
/// link-time addresses, one per address (aliases dropped), at least `min` bytes each.
/// None if the image is not ELF64 little-endian; Some(None) if it has no symbol table.
pub fn objects_in(
    img: &(impl Image + ?Sized),
    segments: &[Segment],
    min: u64,
) -> Option<Option<Vec<StaticArray>>> {
    let h = img.bytes(0, 64)?;
    let (shoff, shentsize, shnum) = (u64_at(&h, 0x28)?, u16_at(&h, 0x3a)?, u16_at(&h, 0x3c)?);
    if shentsize < 64 {
        return None;
    }
    let sh = img.bytes(shoff, u64::from(shentsize) * u64::from(shnum))?;
    let section = |i: usize| sh.get(i * usize::from(shentsize)..);
    let Some(symtab) = (0..usize::from(shnum))
        .find(|&i| section(i).and_then(|s| u32_at(s, 4)) == Some(SHT_SYMTAB))
    else {
        return Some(None);
    };
    let s = section(symtab)?;
    let (off, size, link, entsize) = (
        u64_at(s, 0x18)?,
        u64_at(s, 0x20)?,
        u32_at(s, 0x28)?,
        u64_at(s, 0x38)?,
    );
    let strs = section(usize::try_from(link).ok()?)?;
    let strtab = img.bytes(u64_at(strs, 0x18)?, u64_at(strs, 0x20)?)?;
    if entsize < 24 {
        return None;
    }
    let syms = img.bytes(off, size)?;
    let inside = |a: u64, n: u64| {
        segments
            .iter()
            .any(|g| a >= g.vaddr && a.saturating_add(n) <= g.vaddr.saturating_add(g.memsz))
    };
    let mut out: Vec<StaticArray> = syms
        .chunks_exact(usize::try_from(entsize).ok()?)
        .filter_map(|e| {
            let (name, info, value, len) =
                (u32_at(e, 0)?, *e.get(4)?, u64_at(e, 8)?, u64_at(e, 16)?);
            if info & 0xf != STT_OBJECT || len < min.max(1) || !inside(value, len) {
                return None;
            }
            let name = strtab.get(usize::try_from(name).ok()?..)?;
            let name = &name[..name.iter().position(|&c| c == 0)?];
            Some(StaticArray {
                name: String::from_utf8_lossy(name).into_owned(),
                addr: usize::try_from(value).ok()?,
                len: usize::try_from(len).ok()?,
            })
        })
        .collect();
    out.sort_by_key(|a| a.addr);
    out.dedup_by_key(|a| a.addr);
    Some(Some(out))
}

/// The main program's load bias and writable segments, as the loader mapped them.
fn loaded_main() -> Option<(usize, Vec<Segment>)> {
    struct Found(Option<(usize, Vec<Segment>)>);
    unsafe extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes a valid info for the duration of the call, and
        // `data` is the `Found` that `loaded_main` lends it.
        let (info, found) = unsafe { (&*info, &mut *(data as *mut Found)) };
        let phdrs = if info.dlpi_phdr.is_null() {
            &[][..]
        } else {
            // SAFETY: dlpi_phdr points to dlpi_phnum program headers of this object.
            unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) }
        };
        let segs = phdrs
            .iter()
            .filter(|p| p.p_type == PT_LOAD && p.p_flags & PF_W != 0)
            .map(|p| Segment {
                vaddr: p.p_vaddr,
                memsz: p.p_memsz,
            })
            .collect();
        found.0 = Some((info.dlpi_addr as usize, segs));
        1 // the first object is the main program: stop
    }
    let mut found = Found(None);
    // SAFETY: the callback only reads the loader's info and writes `found`, which
    // outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(first), (&mut found as *mut Found).cast()) };
    found.0
}

/// The executable's static arrays of at least `min` bytes in .data and .bss, at their
/// run-time addresses.
pub fn static_arrays(min: usize) -> Result<Vec<StaticArray>, StaticsError> {
    let path = "/proc/self/exe".to_string();
    let file = File::open(&path).map_err(|err| StaticsError::Read {
        path: path.clone(),
        err,
    })?;
    let on_disk = writable_segments(&file).ok_or_else(|| StaticsError::NotElf(path.clone()))?;
    let (bias, loaded) = loaded_main().ok_or_else(|| StaticsError::NotMain(path.clone()))?;
    if loaded != on_disk || loaded.is_empty() {
        return Err(StaticsError::NotMain(path));
    }
    let objs = objects_in(&file, &loaded, min as u64)
        .ok_or_else(|| StaticsError::NotElf(path.clone()))?
        .ok_or(StaticsError::NoSymbols(path))?;
    Ok(objs
        .into_iter()
        .map(|a| StaticArray {
            addr: a.addr.wrapping_add(bias),
            ..a
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 3 MiB object in .bss and a 2 MiB one in .data; and 2 MiB in .rodata, which is
    /// not writable and must not be found.
    #[no_mangle]
    static mut MAI_TEST_BSS: [u8; 3 << 20] = [0; 3 << 20];
    #[no_mangle]
    static mut MAI_TEST_DATA: [u8; 2 << 20] = [1; 2 << 20];
    #[no_mangle]
    static MAI_TEST_RODATA: [u8; 2 << 20] = [1; 2 << 20];

    #[test]
    fn finds_this_test_binarys_writable_arrays_at_their_addresses() {
        let found = static_arrays(1 << 20).unwrap();
        let at = |name: &str| found.iter().find(|a| a.name == name).cloned();
        let bss = at("MAI_TEST_BSS").expect("the .bss array");
        assert_eq!(bss.addr, std::ptr::addr_of!(MAI_TEST_BSS) as usize);
        assert_eq!(bss.len, 3 << 20);
        let data = at("MAI_TEST_DATA").expect("the .data array");
        assert_eq!(data.addr, std::ptr::addr_of!(MAI_TEST_DATA) as usize);
        assert_eq!(data.len, 2 << 20);
        assert!(
            at("MAI_TEST_RODATA").is_none(),
            "read-only data is not placed"
        );
        assert!(std::hint::black_box(&MAI_TEST_RODATA)[0] == 1);
        // The threshold is inclusive (MApp: "equal or greater than" the cache).
        let big = static_arrays(3 << 20).unwrap();
        assert!(big.iter().any(|a| a.name == "MAI_TEST_BSS"));
        assert!(!big.iter().any(|a| a.name == "MAI_TEST_DATA"));
    }

    #[test]
    fn damaged_images_are_refused_without_a_panic() {
        let exe = std::fs::read("/proc/self/exe").unwrap();
        let segs = writable_segments(&exe[..]).unwrap();
        assert!(!segs.is_empty());
        assert!(objects_in(&exe[..], &segs, 1).unwrap().is_some());
        for cut in [0, 10, 63, 64, 200, exe.len() / 2] {
            let short = &exe[..cut];
            let _ = writable_segments(short);
            let _ = objects_in(short, &segs, 1);
        }
        let mut not_elf = exe[..4096].to_vec();
        not_elf[0] = b'M';
        assert_eq!(writable_segments(&not_elf[..]), None);
        let mut big_endian = exe[..4096].to_vec();
        big_endian[5] = 2;
        assert_eq!(writable_segments(&big_endian[..]), None);
        // A truncated file: the section headers (at its end) are past the end.
        let path = std::env::temp_dir().join(format!("mai-statics-{}", std::process::id()));
        std::fs::write(&path, &exe[..exe.len() / 2]).unwrap();
        let file = File::open(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(writable_segments(&file), Some(segs.clone()));
        assert!(objects_in(&file, &segs, 1).is_none());
        // No section headers at all: no symbol table.
        let mut no_sections = exe.clone();
        no_sections[0x3c..0x3e].copy_from_slice(&0u16.to_le_bytes());
        assert_eq!(objects_in(&no_sections[..], &segs, 1).unwrap(), None);
    }
}
