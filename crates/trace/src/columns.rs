//! The access columns of format version 5 (read only since V6; the encoder stays for
//! the tests): varint-coded zigzag deltas, built in one
//! tight loop over the accesses as they come (all four columns at once, a batch perhaps
//! over several calls) into buffers the writer's workers reuse, then compressed by zstd.
//!
//! Why varints: the runtime's times are clock reads spread evenly over `TICK_EVERY`
//! records, so their deltas are a few nanoseconds (one byte) except at rare jumps, and
//! strided addresses have one small delta; a varint stores each in one byte where V2-V4
//! stored eight (and byte-shuffled them in eight passes), so there is 4-6× less to build
//! and to compress, and one far jump (heap to stack) no longer widens a whole frame.

use crate::chunk::AccessChunk;
#[cfg(test)]
use crate::types::Access;

/// Most bytes of one access: base tag (1), address and time varints (10 each), size and
/// write (2).
pub const MAX_ACCESS_BYTES: usize = 23;
/// Fewest bytes of one access (one each).
pub const MIN_ACCESS_BYTES: usize = 4;
/// Most bytes of one access in the address stream: base tag and delta.
pub const MAX_ADDRESS_BYTES: usize = 1 + MAX_VARINT;
/// Address bases: each access's address is a delta from one of the last addresses of
/// as many interleaved streams (a CSR product reads values, column indices and the
/// gathered vector in turn; a stencil reads several rows and planes). One delta column
/// from the previous access would jump between arrays at every access, in amounts that
/// change each time; per stream the deltas are the strides, which zstd compresses away.
pub const BASES: usize = 8; // At most 8: three bits of index in `pick_base`; a power of two.
/// An address farther than this from every base starts a new stream in the least
/// recently started base (the encoder's choice; the decoder just follows the tags).
#[cfg(test)]
const NEAR: u64 = 1 << 12;
/// How near the guessed base must be to skip the search: a few lines, or a stencil's
/// neighbouring rows (farther apart, but near one another) would take turns on one
/// base and their deltas would stop repeating.
#[cfg(test)]
const GUESS_NEAR: u64 = 256;
/// Most bytes of one varint-coded u64.
pub const MAX_VARINT: usize = 10;

/// Zigzag: small negative and positive deltas both become small unsigned numbers.
#[inline(always)]
pub(crate) fn zigzag(d: u64) -> u64 {
    let d = d as i64;
    ((d << 1) ^ (d >> 63)) as u64
}

#[inline(always)]
pub(crate) fn unzigzag(z: u64) -> u64 {
    (z >> 1) ^ (z & 1).wrapping_neg()
}

#[cfg(test)]
/// LEB128 at `buf[at..]` (7 bits per byte, low bits first, the top bit set on all bytes
/// but the last); returns the position after it. Into a slice, not a `Vec`: no capacity
/// check or length update per byte.
#[inline(always)]
fn put_varint(buf: &mut [u8], mut at: usize, mut v: u64) -> usize {
    while v >= 0x80 {
        buf[at] = v as u8 | 0x80;
        v >>= 7;
        at += 1;
    }
    buf[at] = v as u8;
    at + 1
}

/// The varint at `raw[*at..]`, moving `at` past it; None if it overruns `raw` or is
/// longer than a u64 needs.
#[inline(always)]
pub(crate) fn get_varint(raw: &[u8], at: &mut usize) -> Option<u64> {
    let b = *raw.get(*at)?;
    *at += 1;
    if b < 0x80 {
        return Some(b as u64);
    }
    let mut v = (b & 0x7f) as u64;
    let mut shift = 7;
    loop {
        let b = *raw.get(*at)?;
        *at += 1;
        // The tenth byte holds the top bit only.
        if shift == 63 && b > 1 {
            return None;
        }
        v |= ((b & 0x7f) as u64) << shift;
        if b < 0x80 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

/// Reads the address stream of `n` accesses (tags, then deltas from the tagged bases)
/// into `dst` (cleared first); None if malformed or not ending with `raw`.
fn get_addresses(dst: &mut Vec<u64>, raw: &[u8], n: usize) -> Option<()> {
    dst.clear();
    dst.reserve(n);
    let tags = raw.get(..n)?;
    let mut at = n;
    let mut bases = [0u64; BASES];
    for &tag in tags {
        let base = bases.get_mut(tag as usize)?;
        *base = base.wrapping_add(unzigzag(get_varint(raw, &mut at)?));
        dst.push(*base);
    }
    (at == raw.len()).then_some(())
}

#[cfg(test)]
/// The base to code `addr` against: the nearest one, or the next in turn to restart
/// when none is [`NEAR`]; `next` is that turn.
#[inline(always)]
fn pick_base(bases: &[u64; BASES], addr: u64, next: &mut usize) -> usize {
    // Branch-free: the nearest base is random on gathers. Distances past 2^40 are all
    // "far"; the low 3 bits carry the base's index through the minimum.
    let key = |j: usize| {
        let b = bases[j];
        let d = addr.wrapping_sub(b).min(b.wrapping_sub(addr)).min(1 << 40);
        d << 3 | j as u64
    };
    let best = (0..BASES).map(key).min().unwrap_or(0);
    if best >> 3 <= NEAR {
        return (best & 7) as usize;
    }
    let j = *next;
    *next = (j + 1) % BASES;
    j
}

/// Reads `n` varint deltas from `raw[*at..]` into `dst` (cleared first).
fn get_deltas(dst: &mut Vec<u64>, raw: &[u8], at: &mut usize, n: usize) -> Option<()> {
    dst.clear();
    dst.reserve(n);
    let mut acc = 0u64;
    for _ in 0..n {
        acc = acc.wrapping_add(unzigzag(get_varint(raw, at)?));
        dst.push(acc);
    }
    Some(())
}

#[cfg(test)]
/// The encoder's state between two accesses of one batch.
#[derive(Debug, Default, Clone, Copy)]
struct Enc {
    /// The last address of each base's stream.
    bases: [u64; BASES],
    /// The base a far address restarts next.
    next: usize,
    /// The base that followed each base last time, tried first.
    after: [u8; BASES],
    prev: usize,
    time: u64,
}

#[cfg(test)]
/// One batch of accesses being encoded as V5 columns as they come, so that a caller can
/// encode accesses as it decodes them (no array of [`Access`] in between) and a batch can
/// span several of its calls. The four columns grow apart and are joined into the
/// frame's two streams by [`Columns::streams`]: the address stream (a base tag per
/// access, then the varint zigzag delta of each address from its tagged base, which
/// becomes it) and the rest (the time deltas, then one varint per access of
/// `size << 1 | write`, one byte for sizes below 64). Buffers past what a batch used are
/// scratch, kept so that the next batch need not zero them again.
#[derive(Debug, Default)]
pub struct Columns {
    n: usize,
    tags: Vec<u8>,
    addrs: Vec<u8>,
    times: Vec<u8>,
    sizes: Vec<u8>,
    /// Bytes used of `addrs`, `times` and `sizes`.
    used: (usize, usize, usize),
    enc: Enc,
}

#[cfg(test)]
impl Columns {
    /// Accesses in the batch.
    #[inline]
    pub fn len(&self) -> usize {
        self.n
    }

    /// Empties the batch (keeping the buffers) for a new one.
    pub fn clear(&mut self) {
        (self.n, self.used, self.enc) = (0, (0, 0, 0), Enc::default());
    }

    /// Makes room for `k` more accesses at their largest.
    fn reserve(&mut self, k: usize) {
        let fit = |v: &mut Vec<u8>, len: usize| {
            if v.len() < len {
                v.resize(len, 0);
            }
        };
        let (a, t, s) = self.used;
        fit(&mut self.tags, self.n + k);
        fit(&mut self.addrs, a + k * MAX_VARINT);
        fit(&mut self.times, t + k * MAX_VARINT);
        fit(&mut self.sizes, s + k * 2);
    }

    /// Appends the first `k` accesses of `it`, `(addr, size, write, time)` in time order:
    /// the encoder's hot loop, generic so that it is built into the caller's loop with
    /// its state in registers.
    #[inline]
    pub fn extend_from(&mut self, k: usize, it: impl Iterator<Item = (u64, u8, bool, u64)>) {
        self.reserve(k);
        let (mut e, mut n, (mut a, mut t, mut s)) = (self.enc, self.n, self.used);
        let (tags, addrs) = (&mut self.tags[..], &mut self.addrs[..]);
        let (times, sizes) = (&mut self.times[..], &mut self.sizes[..]);
        for (addr, size, write, time) in it.take(k) {
            // Streams come in a cycle (value, index, gathered element, value...): the base
            // that followed the last one before is tried first, with one compare, not eight.
            // Indexes masked to the base count: no bounds check in the loop.
            let guess = e.after[e.prev & (BASES - 1)] as usize & (BASES - 1);
            let g = e.bases[guess];
            let b = if addr.wrapping_sub(g).min(g.wrapping_sub(addr)) <= GUESS_NEAR {
                guess
            } else {
                pick_base(&e.bases, addr, &mut e.next) & (BASES - 1)
            };
            (e.after[e.prev & (BASES - 1)], e.prev) = (b as u8, b);
            tags[n] = b as u8;
            a = put_varint(addrs, a, zigzag(addr.wrapping_sub(e.bases[b])));
            e.bases[b] = addr;
            t = put_varint(times, t, zigzag(time.wrapping_sub(e.time)));
            e.time = time;
            s = put_varint(sizes, s, (size as u64) << 1 | write as u64);
            n += 1;
        }
        (self.enc, self.n, self.used) = (e, n, (a, t, s));
    }

    /// Appends accesses (their `thread` fields are ignored).
    pub fn extend(&mut self, a: &[Access]) {
        let it = a.iter().map(|x| (x.addr, x.size, x.write, x.time));
        self.extend_from(a.len(), it);
    }

    /// The frame's two streams, joined into `first` (the addresses) and `second` (times,
    /// sizes and write flags), both cleared first.
    pub(crate) fn streams(&self, first: &mut Vec<u8>, second: &mut Vec<u8>) {
        let (a, t, s) = self.used;
        first.clear();
        first.extend_from_slice(&self.tags[..self.n]);
        first.extend_from_slice(&self.addrs[..a]);
        second.clear();
        second.extend_from_slice(&self.times[..t]);
        second.extend_from_slice(&self.sizes[..s]);
    }
}

/// Decodes `n` accesses of V5 columns into `c`, reusing its buffers: `addrs` must hold
/// exactly the address column and `rest`, unless skipped, exactly the times, sizes and
/// write flags. False when a column is malformed or does not end where it should.
pub fn decode(
    c: &mut AccessChunk,
    thread: u32,
    n: usize,
    addrs: &[u8],
    rest: Option<&[u8]>,
) -> bool {
    c.thread = thread;
    c.times.clear();
    c.sizes.clear();
    c.writes.clear();
    if get_addresses(&mut c.addrs, addrs, n).is_none() {
        c.addrs.clear();
        return false;
    }
    let Some(rest) = rest else { return true };
    let mut at = 0;
    if get_deltas(&mut c.times, rest, &mut at, n).is_none() {
        return false;
    }
    c.sizes.reserve(n);
    c.writes.reserve(n);
    for _ in 0..n {
        match get_varint(rest, &mut at) {
            Some(v) if v >> 1 <= u8::MAX as u64 => {
                c.sizes.push((v >> 1) as u8);
                c.writes.push(v & 1 == 1);
            }
            _ => return false,
        }
    }
    at == rest.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn access(addr: u64, time: u64, size: u8, write: bool) -> Access {
        Access {
            thread: 3,
            addr,
            size,
            write,
            time,
        }
    }

    fn encoded(a: &[Access]) -> (Vec<u8>, Vec<u8>) {
        let (mut c, mut addrs, mut rest) = (Columns::default(), Vec::new(), Vec::new());
        c.extend(a);
        c.streams(&mut addrs, &mut rest);
        (addrs, rest)
    }

    fn round_trip(a: &[Access]) -> AccessChunk {
        let (addrs, rest) = encoded(a);
        let mut c = AccessChunk::default();
        assert!(decode(&mut c, 3, a.len(), &addrs, Some(&rest)));
        c
    }

    /// Interleaved strided streams (a CSR product's values, indices and gathered vector)
    /// each get a base: every delta after the first of its stream is its stride.
    #[test]
    fn interleaved_streams_code_as_their_strides() {
        let a: Vec<Access> = (0..300u64)
            .map(|i| {
                let (k, j) = (i % 3, i / 3);
                let addr = [
                    0x1000_0000 + 8 * j,
                    0x2000_0000 + 4 * j,
                    0x3000_0000 + 64 * j,
                ][k as usize];
                access(addr, i, 8, false)
            })
            .collect();
        let (addrs, _) = encoded(&a);
        // Tags; each stream's first delta (5 bytes), then strides 8, 4 (1 byte) and 64 (2).
        assert_eq!(addrs.len(), 300 + 3 * 5 + 99 + 99 + 2 * 99);
        assert_eq!(&addrs[..6], &[0, 1, 2, 0, 1, 2]);
        assert_eq!(
            round_trip(&a).addrs,
            a.iter().map(|x| x.addr).collect::<Vec<_>>()
        );
    }

    proptest! {
        /// A batch encoded a run at a time, in a reused buffer, is the batch encoded at
        /// once: the encoder's state carries over from run to run (`tdmap trace` encodes
        /// a frame a clock tick of a raw chunk at a time, over several chunks).
        #[test]
        fn runs_encode_as_one_batch(
            v in prop::collection::vec((any::<u16>(), any::<u8>(), 1u8..17, any::<bool>()), 1..300),
            cuts in prop::collection::vec(0usize..300, 0..6),
        ) {
            // Near addresses (strides, the guess and the search) and far ones (restarts).
            let a: Vec<Access> = v.iter().enumerate().map(|(i, &(ad, t, s, w))| {
                let far = if ad % 7 == 0 { (ad as u64) << 30 } else { 0 };
                access(0x7f00_0000 + far + (ad as u64 % 512) * 8, i as u64 * 3 + t as u64, s, w)
            }).collect();
            let whole = encoded(&a);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (a.len() + 1)).collect();
            cuts.extend([0, a.len()]);
            cuts.sort_unstable();
            let mut c = Columns::default();
            c.extend(&a[..a.len() / 2]);
            c.clear();
            for w in cuts.windows(2) {
                let run = &a[w[0]..w[1]];
                c.extend_from(run.len(), run.iter().map(|x| (x.addr, x.size, x.write, x.time)));
            }
            let (mut addrs, mut rest) = (Vec::new(), Vec::new());
            c.streams(&mut addrs, &mut rest);
            prop_assert_eq!(c.len(), a.len());
            prop_assert_eq!((addrs, rest), whole);
        }

        /// Every column comes back as written, whatever the values.
        #[test]
        fn columns_round_trip(v in prop::collection::vec((any::<u64>(), any::<u64>(), any::<u8>(), any::<bool>()), 0..200)) {
            let a: Vec<Access> = v.iter().map(|&(ad, t, s, w)| access(ad, t, s, w)).collect();
            let c = round_trip(&a);
            prop_assert_eq!(c.addrs, a.iter().map(|x| x.addr).collect::<Vec<_>>());
            prop_assert_eq!(c.times, a.iter().map(|x| x.time).collect::<Vec<_>>());
            prop_assert_eq!(c.sizes, a.iter().map(|x| x.size).collect::<Vec<_>>());
            prop_assert_eq!(c.writes, a.iter().map(|x| x.write).collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_strided_access_with_small_time_steps_takes_four_bytes() {
        let a: Vec<Access> = (0..1000)
            .map(|i| access(0x7f00_0000_0000 + i * 8, 1_000_000 + i * 3, 8, i % 2 == 0))
            .collect();
        let (addrs, rest) = encoded(&a);
        // A tag each; the first delta of each column is the whole value, the others one
        // byte each.
        assert_eq!(addrs.len(), 1000 + 7 + 999);
        assert_eq!(rest.len(), 3 + 999 + 1000);
    }

    #[test]
    fn malformed_columns_are_refused() {
        let a = [access(5, 1, 4, true), access(u64::MAX, 2, 200, false)];
        let (addrs, rest) = encoded(&a);
        let mut c = AccessChunk::default();
        // One varint short, one byte too many, a varint cut in the middle.
        assert!(!decode(&mut c, 0, 3, &addrs, Some(&rest)));
        let mut long = addrs.clone();
        long.push(0);
        assert!(!decode(&mut c, 0, 2, &long, Some(&rest)));
        assert!(!decode(&mut c, 0, 2, &addrs[..addrs.len() - 1], None));
        // An 11-byte varint, a tag naming no base, and a size above 255.
        let eleven = [0u8].iter().chain(&[0xff; 10]).chain(&[0]).copied();
        assert!(!decode(&mut c, 0, 1, &eleven.collect::<Vec<_>>(), None));
        assert!(!decode(&mut c, 0, 1, &[BASES as u8, 1], None));
        assert!(decode(&mut c, 0, 1, &[BASES as u8 - 1, 1], None));
        assert!(!decode(&mut c, 0, 1, &[0, 1], Some(&[0, 0x80, 0x04])));
        assert!(decode(&mut c, 0, 1, &[0, 1], Some(&[0, 0x80, 0x03])));
        assert!(decode(&mut c, 0, 2, &addrs, Some(&rest)));
        assert!(decode(&mut c, 0, 2, &addrs, None));
        assert!(c.times.is_empty());
    }
}
