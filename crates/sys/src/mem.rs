//! NUMA memory calls with libnuma's semantics: where pages are (`move_pages`), where they
//! go (`mbind`, `set_mempolicy`) and what was asked (`get_mempolicy`).
//!
//! They are raw syscalls, so tdmap does not link libnuma. Node masks are fixed 1024-bit
//! arrays, the largest `MAX_NUMNODES` a Linux kernel can be built with
//! (`CONFIG_NODES_SHIFT=10`), so the kernel never reads or writes past them.

use crate::SysError;

/// The memory policy modes of `linux/mempolicy.h`.
const MPOL_DEFAULT: i32 = 0;
const MPOL_PREFERRED: i32 = 1;
const MPOL_BIND: i32 = 2;
const MPOL_INTERLEAVE: i32 = 3;
const MPOL_LOCAL: i32 = 4;
/// Mode flags the kernel may OR into a returned mode (`MPOL_F_STATIC_NODES` and
/// `MPOL_F_RELATIVE_NODES`, plus `MPOL_F_NUMA_BALANCING`); the mode is what is left.
const MPOL_MODE_FLAGS: i32 = (1 << 15) | (1 << 14) | (1 << 13);
/// `get_mempolicy` flag: return the policy that applies at `addr`.
const MPOL_F_ADDR: libc::c_ulong = 1 << 1;
/// `mbind` flags.
const MPOL_MF_STRICT: libc::c_uint = 1 << 0;
const MPOL_MF_MOVE: libc::c_uint = 1 << 1;
/// move_pages(2): also move pages other processes map (needs CAP_SYS_NICE).
const MPOL_MF_MOVE_ALL: libc::c_int = 1 << 2;

/// The number of nodes a mask can name.
pub const MAX_NODES: usize = 1024;
const MASK_WORDS: usize = MAX_NODES / 64;

/// A memory placement policy, as `mbind` and `set_mempolicy` take it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemPolicy {
    /// Fall back to the thread's policy, or to local allocation.
    Default,
    /// Allocate only on these nodes (OS indexes).
    Bind(Vec<usize>),
    /// Spread pages round-robin over these nodes.
    Interleave(Vec<usize>),
    /// Allocate on this node while it has memory, elsewhere after.
    Preferred(usize),
    /// Allocate on the node of the CPU that touches the page (what `get_mempolicy`
    /// reports for `MPOL_LOCAL` or for a preferred policy without a node).
    Local,
    /// A mode tdmap does not model (e.g. `MPOL_PREFERRED_MANY`), as the kernel gave it.
    Other {
        /// The raw mode number, flags removed.
        mode: i32,
        /// The node mask.
        nodes: Vec<usize>,
    },
}

/// What `mbind` does with pages that are already there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MbindFlags {
    /// Move pages of this process that break the policy (`MPOL_MF_MOVE`).
    pub move_pages: bool,
    /// Fail with EIO when pages break the policy and cannot be moved (`MPOL_MF_STRICT`).
    pub strict: bool,
}

impl MbindFlags {
    /// Set the policy for future pages only.
    pub const NONE: MbindFlags = MbindFlags {
        move_pages: false,
        strict: false,
    };
    /// Set the policy and move the pages already there, failing if one cannot move.
    pub const MOVE_STRICT: MbindFlags = MbindFlags {
        move_pages: true,
        strict: true,
    };

    fn bits(self) -> libc::c_uint {
        let mut b = 0;
        if self.move_pages {
            b |= MPOL_MF_MOVE;
        }
        if self.strict {
            b |= MPOL_MF_STRICT;
        }
        b
    }
}

/// A node mask in the kernel's layout: bit n of word n/64.
type NodeMask = [libc::c_ulong; MASK_WORDS];

fn to_mask(call: &'static str, nodes: &[usize]) -> Result<NodeMask, SysError> {
    let mut mask = [0; MASK_WORDS];
    for &n in nodes {
        if n >= MAX_NODES {
            return Err(SysError::Invalid {
                call,
                what: format!("node {n} is beyond the {MAX_NODES}-node mask"),
            });
        }
        mask[n / 64] |= 1 << (n % 64);
    }
    Ok(mask)
}

fn from_mask(mask: &NodeMask) -> Vec<usize> {
    (0..MAX_NODES)
        .filter(|&n| mask[n / 64] & (1 << (n % 64)) != 0)
        .collect()
}

/// The kernel's mode number and node mask for a policy.
fn encode(call: &'static str, policy: &MemPolicy) -> Result<(i32, NodeMask), SysError> {
    match policy {
        MemPolicy::Default => Ok((MPOL_DEFAULT, [0; MASK_WORDS])),
        MemPolicy::Bind(n) => Ok((MPOL_BIND, to_mask(call, n)?)),
        MemPolicy::Interleave(n) => Ok((MPOL_INTERLEAVE, to_mask(call, n)?)),
        MemPolicy::Preferred(n) => Ok((MPOL_PREFERRED, to_mask(call, &[*n])?)),
        MemPolicy::Local => Ok((MPOL_LOCAL, [0; MASK_WORDS])),
        MemPolicy::Other { mode, nodes } => Ok((*mode, to_mask(call, nodes)?)),
    }
}

fn decode(mode: i32, mask: &NodeMask) -> MemPolicy {
    let nodes = from_mask(mask);
    match mode & !MPOL_MODE_FLAGS {
        MPOL_DEFAULT => MemPolicy::Default,
        MPOL_BIND => MemPolicy::Bind(nodes),
        MPOL_INTERLEAVE => MemPolicy::Interleave(nodes),
        MPOL_PREFERRED if nodes.is_empty() => MemPolicy::Local,
        MPOL_PREFERRED if nodes.len() == 1 => MemPolicy::Preferred(nodes[0]),
        MPOL_LOCAL => MemPolicy::Local,
        mode => MemPolicy::Other { mode, nodes },
    }
}

fn check(call: &'static str, rc: libc::c_long) -> Result<libc::c_long, SysError> {
    if rc < 0 {
        Err(SysError::last_os(call))
    } else {
        Ok(rc)
    }
}

/// `move_pages(2)`: with `nodes`, moves each page to its node; without, queries. Returns
/// each page's node after the call, or a negative errno for a page that is not there
/// (-ENOENT: never touched) or could not move (-EBUSY, -EACCES...).
pub(crate) fn move_pages(
    pid: i32,
    pages: &[usize],
    nodes: Option<&[i32]>,
) -> Result<Vec<i32>, SysError> {
    move_pages_flags(pid, pages, nodes, 0)
}

/// [`move_pages`] of pages other processes map too (`MPOL_MF_MOVE_ALL`): without it the
/// kernel refuses each such page with EACCES.
pub(crate) fn move_shared_pages(
    pid: i32,
    pages: &[usize],
    nodes: Option<&[i32]>,
) -> Result<Vec<i32>, SysError> {
    move_pages_flags(pid, pages, nodes, MPOL_MF_MOVE_ALL)
}

fn move_pages_flags(
    pid: i32,
    pages: &[usize],
    nodes: Option<&[i32]>,
    flags: libc::c_int,
) -> Result<Vec<i32>, SysError> {
    if let Some(n) = nodes {
        if n.len() != pages.len() {
            return Err(SysError::Invalid {
                call: "move_pages",
                what: format!("{} pages but {} target nodes", pages.len(), n.len()),
            });
        }
    }
    let mut status = vec![0i32; pages.len()];
    let nodes_ptr = nodes.map_or(std::ptr::null(), |n| n.as_ptr());
    // SAFETY: `pages` and `status` have `pages.len()` elements and `nodes`, when given,
    // was checked to have as many; the kernel reads the first two and writes `status`.
    // The addresses themselves are only looked up by the kernel, never dereferenced here.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            pid as libc::c_long,
            pages.len() as libc::c_ulong,
            pages.as_ptr(),
            nodes_ptr,
            status.as_mut_ptr(),
            flags,
        )
    };
    check("move_pages", rc)?;
    Ok(status)
}

/// `mbind(2)`: sets the policy of the pages in `[addr, addr + len)`; `addr` must be
/// page-aligned.
pub(crate) fn mbind(
    addr: usize,
    len: usize,
    policy: &MemPolicy,
    flags: MbindFlags,
) -> Result<(), SysError> {
    let (mode, mask) = encode("mbind", policy)?;
    // SAFETY: `mask` holds MAX_NODES bits; the kernel reads `maxnode - 1` = MAX_NODES bits
    // of it (mm/mempolicy.c get_nodes). mbind only changes the policy of the range, which
    // cannot invalidate any Rust reference.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            addr as libc::c_ulong,
            len as libc::c_ulong,
            mode as libc::c_ulong,
            mask.as_ptr(),
            (MAX_NODES + 1) as libc::c_ulong,
            flags.bits(),
        )
    };
    check("mbind", rc).map(|_| ())
}

/// `set_mempolicy(2)`: sets the calling thread's policy for its future allocations.
pub(crate) fn set_mempolicy(policy: &MemPolicy) -> Result<(), SysError> {
    let (mode, mask) = encode("set_mempolicy", policy)?;
    // SAFETY: as for mbind, the kernel reads MAX_NODES bits of `mask` and nothing else.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_set_mempolicy,
            mode as libc::c_long,
            mask.as_ptr(),
            (MAX_NODES + 1) as libc::c_ulong,
        )
    };
    check("set_mempolicy", rc).map(|_| ())
}

/// `get_mempolicy(2)`: the policy that applies at `addr`, or the calling thread's.
pub(crate) fn get_mempolicy(addr: Option<usize>) -> Result<MemPolicy, SysError> {
    let mut mode: libc::c_int = 0;
    let mut mask: NodeMask = [0; MASK_WORDS];
    let flags = if addr.is_some() { MPOL_F_ADDR } else { 0 };
    // SAFETY: the kernel writes one int to `mode` and at most MAX_NODES bits to `mask`
    // (maxnode = MAX_NODES, mm/mempolicy.c copy_nodes_to_user).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut mode as *mut libc::c_int,
            mask.as_mut_ptr(),
            MAX_NODES as libc::c_ulong,
            addr.unwrap_or(0) as libc::c_ulong,
            flags,
        )
    };
    check("get_mempolicy", rc)?;
    Ok(decode(mode, &mask))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_round_trip_across_words() {
        let nodes = vec![0, 1, 63, 64, 65, 1023];
        let mask = to_mask("t", &nodes).unwrap();
        assert_eq!(mask[0], 1 | 2 | (1 << 63));
        assert_eq!(mask[1], 0b11);
        assert_eq!(from_mask(&mask), nodes);
    }

    #[test]
    fn nodes_beyond_the_mask_are_refused_by_name() {
        let err = to_mask("mbind", &[MAX_NODES]).unwrap_err();
        assert!(err.to_string().contains("mbind"), "{err}");
        assert!(err.to_string().contains("1024"), "{err}");
    }

    #[test]
    fn policies_encode_and_decode_back() {
        for p in [
            MemPolicy::Default,
            MemPolicy::Bind(vec![0, 2]),
            MemPolicy::Interleave(vec![1, 3]),
            MemPolicy::Preferred(3),
            MemPolicy::Local,
        ] {
            let (mode, mask) = encode("t", &p).unwrap();
            assert_eq!(decode(mode, &mask), p);
        }
    }

    #[test]
    fn returned_mode_flags_are_ignored() {
        let mask = to_mask("t", &[1]).unwrap();
        assert_eq!(
            decode(MPOL_BIND | (1 << 15), &mask),
            MemPolicy::Bind(vec![1])
        );
        assert_eq!(decode(MPOL_PREFERRED, &[0; MASK_WORDS]), MemPolicy::Local);
        assert_eq!(
            decode(5, &mask),
            MemPolicy::Other {
                mode: 5,
                nodes: vec![1]
            }
        );
    }

    #[test]
    fn mismatched_target_list_is_refused_before_the_kernel() {
        let err = move_pages(0, &[0x1000, 0x2000], Some(&[0])).unwrap_err();
        assert!(matches!(
            err,
            SysError::Invalid {
                call: "move_pages",
                ..
            }
        ));
    }
}
